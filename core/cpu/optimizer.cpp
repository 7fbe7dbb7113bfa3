// The optimizers' fused update: one pass over a parameter and its state (core/adam_step.h).
#include "core/adam_step.h"
#include "core/cpu/cpu_backend.h"
#include "core/parallel.h"
#include "core/tensor.h"

namespace axiom::core::cpu {

void CpuBackend::adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                             const AdamStep& step) {
  dispatch_floating("adam_update", param.dtype(), [&]<typename T>() {
    const AdamScalars<T> k = adam_scalars<T>(step);
    T *p = param.data<T>(), *m = exp_avg.data<T>(), *v = exp_avg_sq.data<T>();
    const T* g = grad.data<T>();
    parallel_for(param.numel(), 1 << 14, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) adam_element(p[i], g[i], m[i], v[i], k);
    });
  });
}

}  // namespace axiom::core::cpu
