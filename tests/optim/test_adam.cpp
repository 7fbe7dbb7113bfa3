// Adam and AdamW against Kingma & Ba's Algorithm 1 and Loshchilov & Hutter's decoupled weight decay,
// written out in double (helpers.h, ReferenceAdam): default and other betas, L2 weight decay,
// AdamW, in float64 and float32, for a few steps of the tiny problem with gradients from backward().
#include "tests/support/optimizers.h"
#include "autograd/internal.h"

using namespace axiom;
using namespace axiom::test;

namespace {

// Runs `steps` steps of `opt` over `params` and of `ref`, comparing the parameters and the moving
// averages (m, v and the step count t) after each one.
void check_adam(optim::Optimizer& opt, const optim::NamedParameters& params, ReferenceAdam ref, int steps = 5,
                std::source_location where = std::source_location::current()) {
  const bool f64 = params[0].second.dtype() == Dtype::float64;
  const double rtol = f64 ? kRtol64 : kRtol32, atol = f64 ? kAtol64 : kAtol32;
  Values expected = values_of(params);
  for (int step = 1; step <= steps; ++step) {
    train_step(opt);
    ref.step(expected, gradients_of(expected));
    check_values(params, expected, rtol, atol, "after step " + std::to_string(step), where);
    for (const auto& [name, p] : params) {
      const optim::ParamState& state = opt.state_of(name);
      CHECK(state.step == step);
      test::check_close(core_tensor(state.buffers.at("exp_avg")), ref.m.at(name), rtol, atol, "m of " + name, where);
      test::check_close(core_tensor(state.buffers.at("exp_avg_sq")), ref.v.at(name), rtol, atol, "v of " + name, where);
    }
  }
}

}  // namespace

TEST_CASE("Adam with the default betas follows Kingma and Ba's bias-corrected update") {
  for (Dtype dtype : {Dtype::float64, Dtype::float32}) {
    CAPTURE(dtype);
    optim::NamedParameters params = make_parameters(dtype);
    optim::Adam opt(params, {.lr = 0.1});
    check_adam(opt, params, {.lr = 0.1});
  }
}

TEST_CASE("Adam with other betas and eps") {
  optim::NamedParameters params = make_parameters(Dtype::float64);
  optim::Adam opt(params, {.lr = 0.05, .betas = {0.8, 0.98}, .eps = 1e-3});
  check_adam(opt, params, {.lr = 0.05, .beta1 = 0.8, .beta2 = 0.98, .eps = 1e-3});
}

TEST_CASE("Adam with weight decay adds lambda p to the gradient (L2)") {
  for (Dtype dtype : {Dtype::float64, Dtype::float32}) {
    CAPTURE(dtype);
    optim::NamedParameters params = make_parameters(dtype);
    optim::Adam opt(params, {.lr = 0.1, .betas = {0.9, 0.98}, .weight_decay = 0.5});
    check_adam(opt, params, {.lr = 0.1, .beta2 = 0.98, .weight_decay = 0.5});
  }
}

TEST_CASE("AdamW shrinks p by lr lambda p before the Adam step (decoupled weight decay)") {
  for (Dtype dtype : {Dtype::float64, Dtype::float32}) {
    CAPTURE(dtype);
    optim::NamedParameters params = make_parameters(dtype);
    optim::AdamW opt(params, {.lr = 0.1, .weight_decay = 0.5});
    check_adam(opt, params, {.lr = 0.1, .weight_decay = 0.5, .decoupled = true});
  }
}

TEST_CASE("AdamW's default weight decay is PyTorch's 0.01, Adam's 0") {
  optim::NamedParameters params = make_parameters(Dtype::float64);
  optim::AdamW opt(params, {.lr = 0.1});
  CHECK(opt.options().weight_decay == 0.01);
  CHECK(opt.options().decoupled_weight_decay);
  CHECK(opt.name() == "AdamW");
  check_adam(opt, params, {.lr = 0.1, .weight_decay = 0.01, .decoupled = true});
  optim::Adam adam(make_parameters(Dtype::float64));
  CHECK(adam.options().weight_decay == 0);
  CHECK(adam.options().lr == 1e-3);
  CHECK(adam.options().betas == std::pair<double, double>{0.9, 0.999});
  CHECK(adam.options().eps == 1e-8);
}

TEST_CASE("Adam with decoupled_weight_decay is AdamW, bit for bit") {
  optim::NamedParameters a = make_parameters(Dtype::float32), b = make_parameters(Dtype::float32);
  optim::Adam adam(a, {.lr = 0.1, .weight_decay = 0.2, .decoupled_weight_decay = true});
  optim::AdamW adamw(b, {.lr = 0.1, .weight_decay = 0.2});
  for (int step = 0; step < 4; ++step) train_step(adam), train_step(adamw);
  CHECK(values_of(a) == values_of(b));
}

TEST_CASE("Adam: the first step moves every element by lr (m^ / sqrt(v^) = g / |g|)") {
  // At t = 1, m^ = g and v^ = g^2, so p - lr m^ / (sqrt(v^) + eps) = p - lr sign(g) (eps aside).
  optim::NamedParameters params = make_parameters(Dtype::float64);
  optim::Adam opt(params, {.lr = 0.01, .eps = 1e-12});
  train_step(opt);
  // w = [0.3, -0.7, 1.2], g = [-0.7, 3.9, 2.8]
  test::check_close(core_tensor(params[0].second), {0.31, -0.71, 1.19}, 1e-10, 1e-12, "w");
}
