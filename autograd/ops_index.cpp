// Indexing ops and their backward rules. The op functions are core/ops_index.cpp; the kernels
// core/cpu/index.cpp and core/cuda/index.cu.
#include "autograd/ops.h"
#include "core/factory.h"
#include "core/ops.h"

namespace axiom {

namespace {
// Zeros of `shape` with g added in at the positions `index` names along `axis`:
//   out[i][index[i][j][k]][k] += g[i][j][k] (axis 1). Its own rule: dL/dg = gather(G, axis, index).
Tensor scattered(const Tensor& g, const Shape& shape, int64_t axis, const Tensor& index) {
  core::Tensor out = core::scatter_add(core::zeros(shape, g.dtype(), g.device()), axis, index.data(), g.data());
  return record("scatter_add", {g}, std::move(out), [axis, index](const Tensor& gg, const Needs&) {
    return Grads{gather(gg, axis, index)};
  });
}
}  // namespace

// out[i][j][k] = x[i][index[i][j][k]][k] (axis 1); index: int64, no gradient
//   dL/dx = zeros in x's shape with g scattered back: dx[i][index[i][j][k]][k] += g[i][j][k]
Tensor gather(const Tensor& x, int64_t axis, const Tensor& index) {
  return record("gather", {x}, core::gather(x.data(), axis, index.data()), [shape = x.shape(), axis, index](const Tensor& g, const Needs&) {
    return Grads{scattered(g, shape, axis, index)};
  });
}

}  // namespace axiom
