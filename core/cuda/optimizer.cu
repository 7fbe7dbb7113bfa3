// The optimizers' fused update on the GPU: one thread per element (core/adam_step.h holds the
// formula, shared with the CPU). adam_update is one launch for one parameter; adam_update_many
// takes up to kTensorsPerLaunch parameters a launch (128 with CUDA 12.1 or later: every parameter of
// `small` at once), their pointers and constants passed by value in the launch's arguments (no
// upload): block row y of the grid updates parameter y.
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

// The parameters of one adam_update_many launch, by value in its arguments.
template <typename T>
struct AdamBatch {
  int count = 0;
  int64_t n[kTensorsPerLaunch];
  T* param[kTensorsPerLaunch];
  const T* grad[kTensorsPerLaunch];
  T* exp_avg[kTensorsPerLaunch];
  T* exp_avg_sq[kTensorsPerLaunch];
  AdamScalars<T> k[kTensorsPerLaunch];
};

static_assert(sizeof(AdamBatch<double>) <= kMostKernelArgumentBytes, "an Adam batch must fit a kernel's arguments");

template <typename T>
__global__ void adam_many_kernel(AdamBatch<T> batch) {
  for (int t = blockIdx.y; t < batch.count; t += gridDim.y) {
    const int64_t n = batch.n[t];
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
      adam_element(batch.param[t][i], batch.grad[t][i], batch.exp_avg[t][i], batch.exp_avg_sq[t][i], batch.k[t]);
    }
  }
}

template <typename T>
void adam_many(const std::vector<AdamUpdate>& updates) {
  size_t next = 0;
  while (next < updates.size()) {
    AdamBatch<T> batch{};
    int64_t largest = 0;
    for (; next < updates.size() && batch.count < kTensorsPerLaunch; ++next) {
      const AdamUpdate& u = updates[next];
      if (u.param.numel() == 0) continue;
      const int t = batch.count++;
      batch.n[t] = u.param.numel();
      batch.param[t] = device_data<T>(u.param), batch.grad[t] = device_data<T>(u.grad);
      batch.exp_avg[t] = device_data<T>(u.exp_avg), batch.exp_avg_sq[t] = device_data<T>(u.exp_avg_sq);
      batch.k[t] = adam_scalars<T>(u.step);
      largest = std::max(largest, batch.n[t]);
    }
    if (batch.count == 0) continue;
    const dim3 grid(grid_size(largest), static_cast<unsigned>(std::min<int64_t>(batch.count, most_blocks())));
    launch("adam_update_many", adam_many_kernel<T>, grid, kThreads, batch);
  }
}

}  // namespace

void CudaBackend::adam_update_many(const std::vector<AdamUpdate>& updates) {
  if (updates.empty()) return;
  require_device("adam_update_many");
  dispatch_floating("adam_update_many", updates.front().param.dtype(), [&]<typename T>() { adam_many<T>(updates); });
}

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
