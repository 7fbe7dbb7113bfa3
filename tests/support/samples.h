// The autograd tests' sample inputs: float64 values with fixed seeds (kept away from the points
// where an op has a kink or a tie), leaves made from them, and the shape of a function under test.
// Free of doctest, so that the op table (tests/autograd/op_table.h) links into the Python module.
#pragma once

#include <functional>
#include <vector>

#include "autograd/autograd.h"
#include "core/launch.h"

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

}  // namespace axiom::test
