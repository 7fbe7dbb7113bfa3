// Every check of the optimizers' arguments: the parameters (leaves of a floating dtype that require
// a gradient, with unique non-empty names, no tensor twice) and each hyperparameter, with the
// message naming the optimizer and the bad name or value.
#include <cmath>
#include <limits>

#include "tests/support/optimizers.h"

using namespace axiom;
using namespace axiom::test;
using test::check_error;
using test::error_message;

namespace {

Tensor leaf3() { return Tensor(core::zeros({3}, Dtype::float64), true); }

}  // namespace

TEST_CASE("parameters: each must be a defined floating-point leaf that requires a gradient") {
  check_error([] { optim::SGD({}); }, {"[SGD]", "no parameters"});
  check_error([] { optim::Adam({{"a", leaf3()}, {"", leaf3()}}); }, {"[Adam]", "parameter 1", "empty name"});
  check_error([] { optim::Adam({{"a", leaf3()}, {"a", leaf3()}}); }, {"[Adam]", "two parameters", "'a'"});
  check_error([] { optim::SGD({{"a", leaf3()}, {"x", Tensor()}}); }, {"[SGD]", "'x'", "undefined"});
  check_error([] { optim::AdamW({{"idx", Tensor(core::zeros({3}, Dtype::int64))}}); }, {"[AdamW]", "'idx'", "int64"});
  check_error(
      [] {
        optim::SGD({{"frozen", Tensor(core::zeros({3}, Dtype::float32))}});
      },
      {"[SGD]", "'frozen'", "does not require a gradient"});
  const Tensor a = leaf3();
  check_error([&] { optim::Adam({{"y", mul(a, 2.0)}}); }, {"[Adam]", "'y'", "not a leaf", "mul"});
  check_error([&] { optim::Adam({{"a", a}, {"b", leaf3()}, {"a2", a}}); }, {"[Adam]", "'a'", "'a2'", "same tensor"});
}

TEST_CASE("SGD: lr, momentum and weight_decay >= 0, dampening from 0 to 1, Nesterov as in PyTorch") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  check_error([] { optim::SGD({{"a", leaf3()}}, {.lr = -0.1}); }, {"[SGD]", "lr", "-0.1"});
  check_error([&] { optim::SGD({{"a", leaf3()}}, {.lr = nan}); }, {"[SGD]", "lr", "nan"});
  check_error([] { optim::SGD({{"a", leaf3()}}, {.lr = INFINITY}); }, {"[SGD]", "lr", "inf"});
  check_error([] { optim::SGD({{"a", leaf3()}}, {.momentum = -0.5}); }, {"[SGD]", "momentum", "-0.5"});
  check_error([] { optim::SGD({{"a", leaf3()}}, {.dampening = 1.5}); }, {"[SGD]", "dampening", "1.5"});
  check_error([] { optim::SGD({{"a", leaf3()}}, {.dampening = -1}); }, {"[SGD]", "dampening", "-1"});
  check_error([] { optim::SGD({{"a", leaf3()}}, {.weight_decay = -1e-4}); }, {"[SGD]", "weight_decay", "-0.0001"});
  check_error([] { optim::SGD({{"a", leaf3()}}, {.nesterov = true}); }, {"[SGD]", "nesterov", "momentum 0"});
  check_error(
      [] {
        optim::SGD({{"a", leaf3()}}, {.momentum = 0.9, .dampening = 0.1, .nesterov = true});
      },
      {"[SGD]", "nesterov", "dampening 0.1"});
  CHECK_NOTHROW(optim::SGD({{"a", leaf3()}}, {.lr = 0, .momentum = 0.9, .dampening = 1, .weight_decay = 0}));
}

TEST_CASE("Adam and AdamW: lr >= 0, betas from 0 up to but not 1, eps > 0, weight_decay >= 0") {
  check_error([] { optim::Adam({{"a", leaf3()}}, {.lr = -1}); }, {"[Adam]", "lr", "-1"});
  check_error([] { optim::Adam({{"a", leaf3()}}, {.betas = {1.0, 0.999}}); }, {"[Adam]", "beta1", "[0, 1)", "1"});
  check_error([] { optim::Adam({{"a", leaf3()}}, {.betas = {-0.1, 0.999}}); }, {"[Adam]", "beta1", "-0.1"});
  check_error([] { optim::Adam({{"a", leaf3()}}, {.betas = {0.9, 1.5}}); }, {"[Adam]", "beta2", "1.5"});
  check_error([] { optim::Adam({{"a", leaf3()}}, {.eps = 0}); }, {"[Adam]", "eps", "> 0", "0"});
  check_error([] { optim::Adam({{"a", leaf3()}}, {.eps = -1e-8}); }, {"[Adam]", "eps", "-1e-08"});
  check_error([] { optim::Adam({{"a", leaf3()}}, {.weight_decay = -0.01}); }, {"[Adam]", "weight_decay", "-0.01"});
  check_error([] { optim::AdamW({{"a", leaf3()}}, {.lr = -1}); }, {"[AdamW]", "lr", "-1"});
  check_error([] { optim::AdamW({{"a", leaf3()}}, {.betas = {0.9, 1.0}}); }, {"[AdamW]", "beta2", "1"});
  check_error([] { optim::AdamW({{"a", leaf3()}}, {.eps = 0}); }, {"[AdamW]", "eps"});
  check_error([] { optim::AdamW({{"a", leaf3()}}, {.weight_decay = -1}); }, {"[AdamW]", "weight_decay", "-1"});
  CHECK_NOTHROW(optim::Adam({{"a", leaf3()}}, {.lr = 0, .betas = {0, 0}}));
}

TEST_CASE("set_lr refuses a negative or non-finite rate and keeps the old one") {
  optim::Adam opt({{"a", leaf3()}}, {.lr = 0.1});
  check_error([&] { opt.set_lr(-0.5); }, {"[Adam]", "lr", "-0.5"});
  check_error([&] { opt.set_lr(std::nan("")); }, {"[Adam]", "lr", "nan"});
  CHECK(opt.lr() == 0.1);
}

TEST_CASE("a gradient of the wrong shape or dtype (set by hand) is an error before anything changes") {
  optim::NamedParameters params = make_parameters(Dtype::float64);
  optim::SGD opt(params, {.lr = 0.1});
  loss_of(params).backward();
  params[1].second.impl()->grad = axiom::zeros({4}, Dtype::float64);
  check_error([&] { opt.step(); }, {"[SGD]", "gradient of 'b'", "[4]", "[2, 2]"});
  params[1].second.impl()->grad = axiom::zeros({2, 2}, Dtype::float32);
  check_error([&] { opt.step(); }, {"[SGD]", "gradient of 'b'", "float32", "float64"});
  CHECK(values_of(params) == kStart);  // w, checked first, was not updated either
  CHECK(opt.state_of("w").step == 0);
}

TEST_CASE("state_of an unknown parameter is an error naming it") {
  optim::SGD opt(make_parameters(Dtype::float64));
  check_error([&] { (void)opt.state_of("nope"); }, {"[SGD]", "'nope'"});
}
