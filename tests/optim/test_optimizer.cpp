// What every optimizer does the same way: zero_grad, parameters without a gradient left alone
// (and their state with them), steps that record nothing for autograd, set_lr, parameters that
// are views, and the options written with designated initializers.
#include "tests/support/optimizers.h"
#include "autograd/internal.h"

using namespace axiom;
using namespace axiom::test;

TEST_CASE("zero_grad forgets every gradient, and a step without gradients changes nothing") {
  optim::NamedParameters params = make_parameters(Dtype::float64);
  optim::SGD opt(params, {.lr = 0.1, .momentum = 0.9});
  loss_of(params).backward();
  for (const auto& [name, p] : params) CHECK(p.grad().defined());
  opt.zero_grad();
  for (const auto& [name, p] : params) CHECK_FALSE(p.grad().defined());
  opt.step();
  CHECK(values_of(params) == kStart);
  CHECK(opt.state_of("w").step == 0);
  CHECK(opt.state().tensors.empty());
}

TEST_CASE("gradients add up without zero_grad, and step uses the sum") {
  optim::NamedParameters params = make_parameters(Dtype::float64);
  optim::SGD opt(params, {.lr = 0.1});
  loss_of(params).backward();
  loss_of(params).backward();
  opt.step();
  Values expected = kStart;
  const Values g = gradients_of(kStart);
  for (auto& [name, p] : expected) {
    for (size_t i = 0; i < p.size(); ++i) p[i] -= 0.1 * 2 * g.at(name)[i];
  }
  check_values(params, expected, 1e-15, 1e-15, "after one step on two backward passes");
}

TEST_CASE("a parameter without a gradient is skipped, and its state starts at its own first update") {
  for (int kind = 0; kind < 2; ++kind) {
    CAPTURE(kind);
    optim::NamedParameters params = make_parameters(Dtype::float64);
    std::unique_ptr<optim::Optimizer> opt;
    if (kind == 0) opt = std::make_unique<optim::Adam>(params, optim::AdamOptions{.lr = 0.1});
    if (kind == 1) opt = std::make_unique<optim::SGD>(params, optim::SGDOptions{.lr = 0.1, .momentum = 0.9});
    const Tensor& w = params[0].second;
    const Tensor& b = params[1].second;
    // Two steps on a loss of w only: b has no gradient, keeps its values and gets no state.
    for (int step = 0; step < 2; ++step) {
      opt->zero_grad();
      sum(mul(w, w)).backward();
      opt->step();
    }
    CHECK(opt->state_of("w").step == 2);
    CHECK(opt->state_of("b").step == 0);
    CHECK(opt->state_of("b").buffers.empty());
    CHECK(test::values_of(core_tensor(b)) == kStart.at("b"));
    CHECK(test::values_of(core_tensor(w)) != kStart.at("w"));
    // Then b takes part: its first update is a first step (Adam's bias correction at t = 1).
    train_step(*opt);
    CHECK(opt->state_of("w").step == 3);
    CHECK(opt->state_of("b").step == 1);
    if (kind == 0) {
      ReferenceAdam ref{.lr = 0.1};
      Values b_only = {{"b", kStart.at("b")}};
      ref.step(b_only, gradients_of({{"w", kStart.at("w")}, {"b", kStart.at("b")}}));
      test::check_close(core_tensor(b), b_only.at("b"), kRtol64, kAtol64, "b after its first update");
    }
  }
}

TEST_CASE("a step records nothing for autograd and bumps the parameters' write versions") {
  optim::NamedParameters params = make_parameters(Dtype::float64);
  optim::Adam opt(params, {.lr = 0.1});
  const Tensor loss = loss_of(params);
  loss.backward({}, {.retain_graph = true});
  opt.step();
  for (const auto& [name, p] : params) {
    CHECK(p.is_leaf());
    CHECK(p.requires_grad());
  }
  // The graph saw the old values: a backward pass through it now must refuse.
  test::check_error([&] { loss.backward(); }, {"[backward]"});
}

TEST_CASE("set_lr changes the step size from the next step on, and options() reports it") {
  optim::NamedParameters params = make_parameters(Dtype::float64);
  optim::SGD opt(params, {.lr = 0.1, .momentum = 0.5});
  ReferenceSGD ref{.lr = 0.1, .momentum = 0.5};
  Values expected = kStart;
  for (double lr : {0.1, 0.02, 0.0, 0.07}) {
    opt.set_lr(lr);
    ref.lr = lr;
    CHECK(opt.lr() == lr);
    CHECK(opt.options().lr == lr);
    train_step(opt);
    ref.step(expected, gradients_of(expected));
    check_values(params, expected, kRtol64, kAtol64, "lr " + std::to_string(lr));
  }
}

TEST_CASE("a parameter that is a non-contiguous view is updated through the view") {
  // w's storage holds [x, w0, x, w1, x, w2, x]: w is every other element, from offset 1.
  const core::Tensor storage = core::from_vector<double>({9, 0.3, 9, -0.7, 9, 1.2, 9}, {7});
  optim::NamedParameters params = {{"w", Tensor(storage.slice(0, 1, 7, 2), true)},
                                   {"b", Tensor(core::from_vector<double>(kStart.at("b"), {2, 2}), true)}};
  REQUIRE_FALSE(params[0].second.is_contiguous());
  optim::Adam opt(params, {.lr = 0.1});
  ReferenceAdam ref{.lr = 0.1};
  Values expected = kStart;
  for (int step = 0; step < 3; ++step) {
    train_step(opt);
    ref.step(expected, gradients_of(expected));
  }
  check_values(params, expected, kRtol64, kAtol64, "after 3 steps");
  const std::vector<double> all = test::values_of(storage);
  CHECK(all[0] == 9);
  CHECK(all[2] == 9);
  CHECK(all[4] == 9);
  CHECK(all[6] == 9);
}

TEST_CASE("the options read as in the design's example (designated initializers)") {
  optim::Adam adam(make_parameters(Dtype::float32), {.lr = 1e-3, .betas = {0.9, 0.98}});
  CHECK(adam.options().betas.second == 0.98);
  optim::AdamW adamw(make_parameters(Dtype::float32), {.lr = 3e-4, .weight_decay = 0.1});
  CHECK(adamw.options().weight_decay == 0.1);
  optim::SGD sgd(make_parameters(Dtype::float32), {.lr = 0.1, .momentum = 0.9, .nesterov = true});
  CHECK(sgd.options().nesterov);
  CHECK(sgd.name() == "SGD");
  CHECK(adam.parameters().size() == 2);
  CHECK(adam.parameters()[1].first == "b");
}
