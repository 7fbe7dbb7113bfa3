// Indexing ops and their backward rules. The op functions are core/ops_index.cpp; the kernels
// core/cpu/index.cpp and core/cuda/index.cu.
#include "autograd/ops.h"
#include "core/factory.h"
#include "core/ops.h"

namespace axiom {

// out[i][j][k] = x[i][index[i][j][k]][k] (axis 1); index: int64, no gradient
//   dL/dx = zeros in x's shape with g scattered back: dx[i][index[i][j][k]][k] += g[i][j][k]
Tensor gather(const Tensor& x, int64_t axis, const Tensor& index) {
  return record("gather", {x}, core::gather(x.data(), axis, index.data()),
                [x = x.data(), axis, index = index.data()](const core::Tensor& g, const Needs&) {
                  return Grads{core::scatter_add(core::zeros(x.shape(), g.dtype(), g.device()), axis, index, g)};
                });
}

}  // namespace axiom
