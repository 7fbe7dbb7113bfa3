// Indexing ops and their backward rules. The op functions are core/launch_index.cpp; the kernels
// core/cpu/index.cpp and core/cuda/index.cu.
#include "autograd/ops.h"
#include "core/factory.h"
#include "core/launch.h"
#include "autograd/internal.h"

namespace axiom {

namespace {
// Zeros of `shape` with g added in at the positions `index` names along `axis`:
//   out[i][index[i][j][k]][k] += g[i][j][k] (axis 1). Its own rule: dL/dg = gather(G, axis, index).
Tensor scattered(const Tensor& g, const Shape& shape, int64_t axis, const Tensor& index) {
  core::Tensor out =
      core::scatter_add(core::zeros(shape, g.dtype(), g.device()), axis, core_tensor(index), core_tensor(g));
  return record("scatter_add", {g}, std::move(out),
                [axis, index](const Tensor& gg, const Needs&) { return Grads{gather(gg, axis, index)}; });
}
}  // namespace

// out[i][j][k] = x[i][index[i][j][k]][k] (axis 1); index: int64, no gradient
//   dL/dx = zeros in x's shape with g scattered back: dx[i][index[i][j][k]][k] += g[i][j][k]
Tensor gather(const Tensor& x, int64_t axis, const Tensor& index) {
  return record("gather", {x}, core::gather(core_tensor(x), axis, core_tensor(index)),
                [shape = x.shape(), axis, index](const Tensor& g, const Needs&) {
                  return Grads{scattered(g, shape, axis, index)};
                });
}

namespace {
// Zeros of x's shape with each slice of g along `axis` added into the slice its index names. Its
// own rule picks those slices again: dL/dg = index_select(G, axis, index).
Tensor slices_added(const Tensor& g, const Shape& shape, int64_t axis, const Tensor& index) {
  core::Tensor out =
      core::index_add(core::zeros(shape, g.dtype(), g.device()), axis, core_tensor(index), core_tensor(g));
  return record("index_add", {g}, std::move(out),
                [axis, index](const Tensor& gg, const Needs&) { return Grads{index_select(gg, axis, index)}; });
}
}  // namespace

// dL/dx = the slices of g added into the slices they came from    : out's shape -> x's shape
Tensor index_select(const Tensor& x, int64_t axis, const Tensor& index) {
  return record("index_select", {x}, core::index_select(core_tensor(x), axis, core_tensor(index)),
                [shape = x.shape(), axis, index](const Tensor& g, const Needs&) {
                  return Grads{slices_added(g, shape, axis, index)};
                });
}

namespace {
// Zeros [V, D] with each row of g [..., D] added into the row its index names. Its own rule
// picks those rows again: dL/dg = embedding(G, indices).
Tensor rows_added(const Tensor& g, const Shape& shape, const Tensor& indices) {
  const core::Tensor zeros = core::zeros(shape, g.dtype(), g.device());
  core::Tensor out =
      core::index_add(zeros, 0, core_tensor(indices).reshape({-1}), core_tensor(g).reshape({-1, shape[1]}));
  return record("index_add", {g}, std::move(out),
                [indices](const Tensor& gg, const Needs&) { return Grads{embedding(gg, indices)}; });
}
}  // namespace

// dL/dweight[v] = sum of g over the positions whose index is v    : [..., D] -> [V, D]
Tensor embedding(const Tensor& weight, const Tensor& indices) {
  return record("embedding", {weight}, core::embedding(core_tensor(weight), core_tensor(indices)),
                [shape = weight.shape(), indices](const Tensor& g, const Needs&) {
                  return Grads{rows_added(g, shape, indices)};
                });
}

}  // namespace axiom
