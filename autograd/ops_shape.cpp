// Views and shape ops, and their backward rules. A view's gradient is the output gradient put back
// where the view's elements came from: reshaped back, permuted back, or written into zeros at
// the sliced positions. (expand needs no rule of its own: the engine sums broadcast gradients.)
#include "autograd/ops.h"
#include "core/error.h"
#include "core/factory.h"
#include "core/launch.h"
#include "autograd/internal.h"

namespace axiom {

namespace {

// dL/dx = g reshaped to x's shape (reshape, squeeze, unsqueeze, flatten).
Tensor reshaped(const char* name, const Tensor& x, core::Tensor y) {
  return record(name, {x}, std::move(y),
                [shape = x.shape()](const Tensor& g, const Needs&) { return Grads{g.reshape(shape)}; });
}

// Zeros of `shape` with g written into the positions `view` picks (`view` works on core::Tensor
// and Tensor alike). Its own rule takes those positions out again: dL/dg = view(G).
template <typename View>
Tensor placed(const Tensor& g, const Shape& shape, View view) {
  core::Tensor out = core::zeros(shape, g.dtype(), g.device());
  core::copy_into(core_tensor(g), view(out));
  return record("place", {g}, std::move(out), [view](const Tensor& gg, const Needs&) { return Grads{view(gg)}; });
}

// dL/dx = zeros of x's shape with g written into the positions `view` picks.
template <typename View>
Tensor picked(const char* name, const Tensor& x, View view) {
  return record(name, {x}, view(core_tensor(x)),
                [shape = x.shape(), view](const Tensor& g, const Needs&) { return Grads{placed(g, shape, view)}; });
}
}  // namespace

Tensor Tensor::reshape(Shape shape) const { return reshaped("reshape", *this, value().reshape(std::move(shape))); }
Tensor Tensor::squeeze(int64_t axis) const { return reshaped("squeeze", *this, value().squeeze(axis)); }
Tensor Tensor::unsqueeze(int64_t axis) const { return reshaped("unsqueeze", *this, value().unsqueeze(axis)); }

// dL/dx = g permuted by the inverse order
Tensor Tensor::permute(const std::vector<int64_t>& order) const {
  core::Tensor y = value().permute(order);
  std::vector<int64_t> inverse(order.size());
  for (size_t i = 0; i < order.size(); ++i) inverse[(order[i] + dim()) % dim()] = static_cast<int64_t>(i);
  return record("permute", {*this}, y, [inverse](const Tensor& g, const Needs&) { return Grads{g.permute(inverse)}; });
}

Tensor Tensor::transpose(int64_t axis0, int64_t axis1) const {
  return record("transpose", {*this}, value().transpose(axis0, axis1),
                [axis0, axis1](const Tensor& g, const Needs&) { return Grads{g.transpose(axis0, axis1)}; });
}

Tensor Tensor::movedim(int64_t from, int64_t to) const {
  return record("movedim", {*this}, value().movedim(from, to),
                [from, to](const Tensor& g, const Needs&) { return Grads{g.movedim(to, from)}; });
}

Tensor Tensor::slice(int64_t axis, int64_t start, int64_t stop, int64_t step) const {
  return picked("slice", *this, [=](const auto& t) { return t.slice(axis, start, stop, step); });
}
Tensor Tensor::narrow(int64_t axis, int64_t start, int64_t length) const {
  return picked("narrow", *this, [=](const auto& t) { return t.narrow(axis, start, length); });
}
Tensor Tensor::select(int64_t axis, int64_t index) const {
  return picked("select", *this, [=](const auto& t) { return t.select(axis, index); });
}

// dL/dx = g summed over the broadcast axes (done by the engine)
Tensor Tensor::expand(const Shape& shape) const {
  return record("expand", {*this}, value().expand(shape), [](const Tensor& g, const Needs&) { return Grads{g}; });
}

Tensor Tensor::contiguous() const {
  if (value().is_contiguous()) return *this;
  return record("contiguous", {*this}, value().contiguous(), [](const Tensor& g, const Needs&) { return Grads{g}; });
}

// dL/dx = g converted back to x's dtype. An integer result has no gradient (rounding is flat); nor
// has a bfloat16 one (core/dtype.h: it only holds products' operands), so x must not need one.
Tensor Tensor::to(Dtype dtype) const {
  if (dtype == this->dtype()) return *this;
  if (dtype == Dtype::bfloat16 && requires_grad()) {
    throw Error("to", "a bfloat16 tensor records no gradient, and this tensor requires one: convert ",
                "x.detach(), or multiply in bfloat16 with set_matmul_precision");
  }
  if (!is_floating(dtype)) return Tensor(value().to(dtype));
  return record("to", {*this}, value().to(dtype),
                [from = this->dtype()](const Tensor& g, const Needs&) { return Grads{g.to(from)}; });
}

Tensor Tensor::to(Device device) const {
  if (device == this->device()) return *this;
  return record("to", {*this}, value().to(device),
                [from = this->device()](const Tensor& g, const Needs&) { return Grads{g.to(from)}; });
}

void copy_into(const Tensor& src, const Tensor& dst) {
  if (dst.requires_grad()) {
    throw Error("copy_into",
                "the destination requires a gradient, and a write into it cannot be differentiated; "
                "write into a tensor that does not (or its detach())");
  }
  core::copy_into(core_tensor(src), core_tensor(dst));
}

// dL/dx_i = g narrowed to x_i's stretch of the axis
Tensor concat(const std::vector<Tensor>& tensors, int64_t axis) {
  std::vector<core::Tensor> values;
  for (const Tensor& t : tensors) values.push_back(core_tensor(t));
  core::Tensor y = core::concat(values, axis);
  std::vector<int64_t> sizes;
  const int a = core::normalize_axis("concat", axis, y.dim());
  for (const core::Tensor& v : values) sizes.push_back(v.size(a));
  return record("concat", tensors, y, [sizes, a](const Tensor& g, const Needs& needs) {
    Grads grads(sizes.size());
    int64_t offset = 0;
    for (size_t i = 0; i < sizes.size(); offset += sizes[i], ++i) {
      if (needs[i]) grads[i] = g.narrow(a, offset, sizes[i]);
    }
    return grads;
  });
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t axis) {
  if (tensors.empty()) return Tensor(core::stack({}, axis));  // the error message
  const int a = core::normalize_axis("stack", axis, tensors.front().dim() + 1);
  std::vector<Tensor> expanded;
  for (const Tensor& t : tensors) expanded.push_back(t.unsqueeze(a));
  return concat(expanded, a);
}

// dL/dx = g without the padding
Tensor pad(const Tensor& x, int64_t axis, int64_t before, int64_t after, double value) {
  core::Tensor y = core::pad(core_tensor(x), axis, before, after, value);
  return record("pad", {x}, y, [axis, before, size = x.size(axis)](const Tensor& g, const Needs&) {
    return Grads{g.narrow(axis, before, size)};
  });
}

// dL/dx = g shifted back: what moved forward by `amount` sends its gradient back by `amount`
Tensor shift(const Tensor& x, int64_t axis, int64_t amount) {
  return record("shift", {x}, core::shift(core_tensor(x), axis, amount),
                [axis, amount](const Tensor& g, const Needs&) { return Grads{shift(g, axis, -amount)}; });
}

}  // namespace axiom
