// clip_grad_norm: the global L2 norm of all gradients together (against a sum written out in
// double), scaling by max_norm / (norm + 1e-6) above max_norm, untouched gradients at or below it,
// parameters without gradients, float32 gradients, non-finite norms, and a bad max_norm.
#include <cmath>
#include <limits>

#include "tests/support/optimizers.h"
#include "autograd/internal.h"

using namespace axiom;
using namespace axiom::test;

namespace {

// The gradients of the problem at its starting point, and their global norm written out.
double reference_norm(const Values& grads) {
  double sum = 0;
  for (const auto& [name, g] : grads) {
    for (double x : g) sum += x * x;
  }
  return std::sqrt(sum);
}

Values grads_of(const optim::NamedParameters& params) {
  Values out;
  for (const auto& [name, p] : params) {
    if (p.grad().defined()) out[name] = test::values_of(core_tensor(p.grad()));
  }
  return out;
}

}  // namespace

TEST_CASE("clip_grad_norm returns the global norm and scales every gradient by max_norm / (norm + 1e-6)") {
  for (Dtype dtype : {Dtype::float64, Dtype::float32}) {
    CAPTURE(dtype);
    const double rtol = dtype == Dtype::float64 ? 1e-14 : 1e-6;
    optim::NamedParameters params = make_parameters(dtype);
    loss_of(params).backward();
    const Values before = grads_of(params);
    const double expected_norm = reference_norm(gradients_of(values_of(params)));
    const double norm = optim::clip_grad_norm(params, 1.0);
    CHECK(norm == doctest::Approx(expected_norm).epsilon(rtol));
    CHECK(norm == doctest::Approx(reference_norm(before)).epsilon(1e-14));  // computed in double
    REQUIRE(norm > 1.0);
    const double scale = 1.0 / (norm + 1e-6);
    for (const auto& [name, p] : params) {
      std::vector<double> expected;
      for (double g : before.at(name)) expected.push_back(g * scale);
      test::check_close(core_tensor(p.grad()), expected, rtol, 0, name);
    }
    // The norm is now just under max_norm.
    const double after = reference_norm(grads_of(params));
    CHECK(after == doctest::Approx(1.0).epsilon(1e-5));
    CHECK(after < 1.0 + (dtype == Dtype::float64 ? 1e-12 : 1e-6));
  }
}

TEST_CASE("clip_grad_norm leaves gradients at or below max_norm untouched") {
  optim::NamedParameters params = make_parameters(Dtype::float64);
  loss_of(params).backward();
  const Values before = grads_of(params);
  const double norm = reference_norm(before);
  CHECK(optim::clip_grad_norm(params, norm * 2) == doctest::Approx(norm).epsilon(1e-14));
  CHECK(grads_of(params) == before);
  CHECK(optim::clip_grad_norm(params, norm) == doctest::Approx(norm).epsilon(1e-14));
  CHECK(grads_of(params) == before);
}

TEST_CASE("clip_grad_norm skips parameters without a gradient") {
  optim::NamedParameters params = make_parameters(Dtype::float64);
  const Tensor& w = params[0].second;
  sum(mul(w, 10.0)).backward();  // dw = [10, 10, 10], b has no gradient
  const double norm = optim::clip_grad_norm(params, 1.0);
  CHECK(norm == doctest::Approx(std::sqrt(300.0)).epsilon(1e-15));
  const double g = 10 / (std::sqrt(300.0) + 1e-6);
  test::check_close(core_tensor(w.grad()), {g, g, g}, 1e-15, 0, "w");
  CHECK_FALSE(params[1].second.grad().defined());
  // No gradient at all: norm 0.
  optim::NamedParameters fresh = make_parameters(Dtype::float64);
  CHECK(optim::clip_grad_norm(fresh, 1.0) == 0);
}

TEST_CASE("clip_grad_norm writes into the gradients' own buffers") {
  optim::NamedParameters params = make_parameters(Dtype::float32);
  loss_of(params).backward();
  const core::Tensor held = core_tensor(params[0].second.grad());  // a handle to w's gradient
  const double first = held.at({0});
  optim::clip_grad_norm(params, 0.5);
  CHECK(held.at({0}) != first);
  CHECK(held.storage() == core_tensor(params[0].second.grad()).storage());
}

TEST_CASE("a non-finite norm is returned and the gradients are left as they are") {
  for (double bad : {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    CAPTURE(bad);
    optim::NamedParameters params = make_parameters(Dtype::float64);
    loss_of(params).backward();
    core_tensor(params[1].second.grad()).set({1, 0}, bad);
    const std::vector<double> w_before = test::values_of(core_tensor(params[0].second.grad()));
    const double norm = optim::clip_grad_norm(params, 1.0);
    if (std::isnan(bad)) {
      CHECK(std::isnan(norm));
    } else {
      CHECK(norm == INFINITY);
    }
    CHECK(test::values_of(core_tensor(params[0].second.grad())) == w_before);
  }
}

TEST_CASE("clip_grad_norm: max_norm must be finite and > 0") {
  optim::NamedParameters params = make_parameters(Dtype::float64);
  test::check_error([&] { optim::clip_grad_norm(params, 0); }, {"[clip_grad_norm]", "max_norm", "0"});
  test::check_error([&] { optim::clip_grad_norm(params, -1); }, {"[clip_grad_norm]", "max_norm", "-1"});
  test::check_error([&] { optim::clip_grad_norm(params, INFINITY); }, {"[clip_grad_norm]", "max_norm", "inf"});
}
