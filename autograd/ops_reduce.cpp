// Reductions and their backward rules. The output gradient g has the reduced shape; each rule
// first puts back the reduced axes as size 1 ("keepdim" shape), so that g broadcasts over x.
#include "autograd/ops.h"
#include "core/factory.h"
#include "core/launch.h"
#include "core/shape.h"
#include "autograd/internal.h"

namespace axiom {

namespace {

// x's shape with the reduced axes set to 1: the shape of the output with keepdim = true.
Shape kept_shape(const core::Tensor& x, const std::vector<int64_t>& axes) {
  Shape shape = x.shape();
  for (int axis : core::normalize_axes("reduce", axes, x.dim())) shape[axis] = 1;
  return shape;
}

int64_t reduced_count(const core::Tensor& x, const std::vector<int64_t>& axes) {
  return x.numel() / std::max<int64_t>(core::numel(kept_shape(x, axes)), 1);
}
}  // namespace

// dL/dx = g, copied along the reduced axes                : [kept] -> x's shape
Tensor sum(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
  return record("sum", {x}, core::sum(core_tensor(x), axes, keepdim),
                [shape = x.shape(), kept = kept_shape(core_tensor(x), axes)](const Tensor& g, const Needs&) {
                  return Grads{g.reshape(kept).expand(shape)};
                });
}

// dL/dx = g / n, with n the number of elements averaged
Tensor mean(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
  const double n = static_cast<double>(reduced_count(core_tensor(x), axes));
  return record("mean", {x}, core::mean(core_tensor(x), axes, keepdim),
                [shape = x.shape(), kept = kept_shape(core_tensor(x), axes), n](const Tensor& g, const Needs&) {
                  return Grads{div(g.reshape(kept), n).expand(shape)};
                });
}

// dL/dx = g * 2 (x - mean) / (n - correction)
Tensor var(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim, int64_t correction) {
  return record("var", {x}, core::var(core_tensor(x), axes, keepdim, correction),
                [x, axes, correction](const Tensor& g, const Needs&) {
                  const double n = static_cast<double>(reduced_count(core_tensor(x), axes));
                  const Tensor centered = sub(x, mean(x, axes, /*keepdim=*/true));
                  const Tensor scale = mul(g.reshape(kept_shape(core_tensor(x), axes)), 2.0 / (n - correction));
                  return Grads{mul(centered, scale)};
                });
}

namespace {

// max and min: the gradient goes to the elements equal to the result y, shared evenly among ties:
// dL/dx = g * [x == y] / (number of elements equal to y)   ([x == y] / ties: a constant)
Tensor record_extreme(const char* op, const Tensor& x, const core::Tensor& y, const std::vector<int64_t>& axes) {
  return record(op, {x}, y, [x = core_tensor(x), y, axes](const Tensor& g, const Needs&) {
    const Shape kept = kept_shape(x, axes);
    const core::Tensor is_y = core::eq(x, y.reshape(kept)).to(x.dtype());
    const Tensor share(core::div(is_y, core::sum(is_y, axes, /*keepdim=*/true)));  // [x's shape]
    return Grads{mul(share, g.reshape(kept))};
  });
}

}  // namespace

Tensor max(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
  return record_extreme("max", x, core::max(core_tensor(x), axes, keepdim), axes);
}

Tensor min(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
  return record_extreme("min", x, core::min(core_tensor(x), axes, keepdim), axes);
}

Tensor argmax(const Tensor& x, int64_t axis, bool keepdim) {
  return Tensor(core::argmax(core_tensor(x), axis, keepdim));
}

}  // namespace axiom
