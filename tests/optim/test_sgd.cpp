// SGD against torch.optim.SGD's algorithm written out in double (helpers.h, ReferenceSGD): plain,
// with momentum (with and without dampening), Nesterov, weight decay, all of them together, in
// float64 and float32, for a few steps of the tiny problem with gradients from backward().
#include "tests/support/optimizers.h"
#include "autograd/internal.h"

using namespace axiom;
using namespace axiom::test;

namespace {

// Runs `steps` steps of SGD(options) on the problem and of the reference with the same
// hyperparameters, comparing the parameters (and the momentum buffers) after each one.
void check_sgd(const optim::SGDOptions& options, Dtype dtype, int steps = 5,
               std::source_location where = std::source_location::current()) {
  const double rtol = dtype == Dtype::float64 ? kRtol64 : kRtol32;
  const double atol = dtype == Dtype::float64 ? kAtol64 : kAtol32;
  optim::NamedParameters params = make_parameters(dtype);
  optim::SGD opt(params, options);
  ReferenceSGD ref{options.lr, options.momentum, options.dampening, options.weight_decay, options.nesterov, {}};
  // The reference starts from the values the parameters really hold (rounded to float32 there).
  Values expected = values_of(params);
  for (int step = 1; step <= steps; ++step) {
    train_step(opt);
    ref.step(expected, gradients_of(expected));
    check_values(params, expected, rtol, atol, "after step " + std::to_string(step), where);
    for (const auto& [name, p] : params) {
      const optim::ParamState& state = opt.state_of(name);
      CHECK(state.step == step);
      if (options.momentum != 0) {
        test::check_close(core_tensor(state.buffers.at("momentum_buffer")), ref.buffer.at(name), rtol, atol,
                          "momentum buffer of " + name, where);
      } else {
        CHECK(state.buffers.empty());
      }
    }
  }
}

}  // namespace

TEST_CASE("SGD without momentum: p = p - lr g") {
  check_sgd({.lr = 0.1}, Dtype::float64);
  check_sgd({.lr = 0.1}, Dtype::float32);
}

TEST_CASE("SGD with momentum: b = mu b + (1 - dampening) g, first b = g, p = p - lr b") {
  check_sgd({.lr = 0.05, .momentum = 0.9}, Dtype::float64);
  check_sgd({.lr = 0.05, .momentum = 0.8, .dampening = 0.3}, Dtype::float64);
  check_sgd({.lr = 0.05, .momentum = 0.9}, Dtype::float32);
}

TEST_CASE("SGD with Nesterov momentum: p = p - lr (g + mu b)") {
  check_sgd({.lr = 0.05, .momentum = 0.9, .nesterov = true}, Dtype::float64);
  check_sgd({.lr = 0.05, .momentum = 0.9, .nesterov = true}, Dtype::float32);
}

TEST_CASE("SGD with weight decay: g = g + lambda p") {
  check_sgd({.lr = 0.1, .weight_decay = 0.3}, Dtype::float64);
  check_sgd({.lr = 0.05, .momentum = 0.7, .weight_decay = 0.1, .nesterov = true}, Dtype::float64);
  check_sgd({.lr = 0.05, .momentum = 0.7, .dampening = 0.2, .weight_decay = 0.1}, Dtype::float32);
}

TEST_CASE("SGD: the first step moves p by exactly lr g (checked by hand)") {
  // w = [0.3, -0.7, 1.2]: g = 2 c (w - t) = [-0.7, 3.9, 2.8]; p - 0.1 g = [0.37, -1.09, 0.92]
  optim::NamedParameters params = make_parameters(Dtype::float64);
  optim::SGD opt(params, {.lr = 0.1, .momentum = 0.9});
  train_step(opt);
  test::check_close(core_tensor(params[0].second), {0.37, -1.09, 0.92}, 1e-15, 1e-15, "w");
}
