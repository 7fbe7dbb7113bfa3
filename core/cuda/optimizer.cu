// The optimizers' fused update on the GPU: one thread per element, one launch per parameter
// (core/adam_step.h holds the formula, shared with the CPU).
#include "core/adam_step.h"
#include "core/cuda/cuda_backend.h"
#include "core/cuda/kernels.cuh"
#include "core/tensor.h"

namespace AXIOM_CUDA_NAMESPACE {

namespace {

template <typename T>
__global__ void adam_kernel(int64_t n, T* param, const T* grad, T* exp_avg, T* exp_avg_sq, AdamScalars<T> k) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    adam_element(param[i], grad[i], exp_avg[i], exp_avg_sq[i], k);
  }
}

}  // namespace

void CudaBackend::adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                              const AdamStep& step) {
  const int64_t n = param.numel();
  if (n == 0) return;
  require_device("adam_update");
  dispatch_floating("adam_update", param.dtype(), [&]<typename T>() {
    launch("adam_update", adam_kernel<T>, grid_size(n), kThreads, n, device_data<T>(param), device_data<T>(grad),
           device_data<T>(exp_avg), device_data<T>(exp_avg_sq), adam_scalars<T>(step));
  });
}

}  // namespace AXIOM_CUDA_NAMESPACE
