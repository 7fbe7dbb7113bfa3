// Shared helpers for the autograd tests: float64 inputs with fixed seeds (kept away from the
// points where an op has a kink or a tie), leaves made from them, and check_grad, which runs
// gradcheck and reports a failure, with gradcheck's own message, at the caller's line.
#pragma once

#include <doctest/doctest.h>

#include <functional>
#include <set>
#include <source_location>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "tests/support/reference.h"

namespace axiom::test {

using axiom::Dtype;
using core::Shape;
using Fn = std::function<axiom::Tensor(const std::vector<axiom::Tensor>&)>;

// Uniform float64 values in [low, high) from a generator seeded with `seed`.
inline core::Tensor uniform64(const Shape& shape, uint64_t seed, double low = -2, double high = 2) {
  Generator gen(seed);
  return core::uniform(shape, low, high, gen, Dtype::float64);
}

// Values whose magnitude is in [low, high), with random signs: for ops with a kink at 0
// (abs, relu) and for divisors.
inline core::Tensor away_from_zero(const Shape& shape, uint64_t seed, double low = 0.2, double high = 1.5) {
  Generator gen(seed);
  const core::Tensor magnitude = core::uniform(shape, low, high, gen, Dtype::float64);
  const core::Tensor sign = core::sub(core::mul(core::bernoulli(shape, 0.5, gen, Dtype::float64), 2.0), 1.0);
  return core::mul(magnitude, sign);
}

// A float64 leaf that requires a gradient, holding `data` (shared, not copied: a view stays a view).
inline axiom::Tensor leaf(const core::Tensor& data) { return axiom::Tensor(data, /*requires_grad=*/true); }

// int64 tensor of `values` in `shape`.
inline core::Tensor int64s(const std::vector<int64_t>& values, const Shape& shape) {
  return core::from_vector<int64_t>(values, shape);
}

// Runs gradcheck(fn, inputs, options), then gradgradcheck (the second derivatives, from a graph
// of the backward pass), and fails at the caller's line when either does not pass (or throws),
// with `what` and the check's message.
inline void check_grad(const std::string& what, const Fn& fn, const std::vector<axiom::Tensor>& inputs,
                       const GradcheckOptions& options = {},
                       std::source_location where = std::source_location::current()) {
  const char* file = where.file_name();
  const int line = static_cast<int>(where.line());
  for (const bool second : {false, true}) {
    const std::string check = second ? "gradgradcheck" : "gradcheck";
    GradcheckResult result;
    try {
      result = second ? gradgradcheck(fn, inputs, options) : gradcheck(fn, inputs, options);
    } catch (const std::exception& e) {
      ADD_FAIL_CHECK_AT(file, line, (what + ": " + check + " threw: " + e.what()));
      return;
    }
    if (!result.ok) {
      ADD_FAIL_CHECK_AT(file, line, (what + ": " + check + ": " + result.message));
      return;
    }
  }
}

// The number of distinct buffers holding the gradients of `tensors` (gradients may share memory).
inline int64_t grad_buffers(const std::vector<axiom::Tensor>& tensors) {
  std::set<const core::Storage*> storages;
  for (const axiom::Tensor& t : tensors) {
    if (t.grad().defined()) storages.insert(t.grad().data().storage().get());
  }
  return static_cast<int64_t>(storages.size());
}

inline int64_t live_buffers() { return core::allocation_stats().live_buffers; }

}  // namespace axiom::test
