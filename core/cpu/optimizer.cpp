// The optimizers' fused update: one pass over a parameter and its state (core/adam_step.h).
#include <type_traits>

#include "core/adam_step.h"
#include "core/cpu/cpu_backend.h"
#include "core/cpu/vector_math.h"
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
      if constexpr (std::is_same_v<T, float>) {
        vec::adam(p + begin, g + begin, m + begin, v + begin, k, end - begin);  // SIMD (vector_math.h)
      } else {
        for (int64_t i = begin; i < end; ++i) adam_element(p[i], g[i], m[i], v[i], k);
      }
    });
  });
}

}  // namespace axiom::core::cpu
