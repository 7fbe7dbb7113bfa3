// Index checks on the GPU, without waiting for it (Backend::check_indices).
//
// An op given an index tensor (embedding, gather, index_add, the cross-entropy's targets) must
// refuse a value out of range. Reading the indices back to the host to check them would make the
// host wait for the GPU's whole queue at every such op, several times a training step. Instead a
// kernel checks them where they are, and writes the row-major position of the first value out of
// range into a slot of pinned host memory that the GPU writes directly (mapped, "zero-copy"): one
// slot per check. The host looks at the slots when it has waited for the GPU anyway, after every
// copy back to the host and at synchronize(), and throws the Error the CPU would have thrown at
// once for the first failed check, in the order the ops ran: the op, the value and its position.
// Meanwhile the kernels that use the indices skip a value out of range (index.cu, normalize.cu),
// so a bad index never makes a kernel touch memory outside its tensor.
//
// At most kSlots checks wait at once; the next one first waits for the GPU and reports.
#include <mutex>
#include <utility>
#include <vector>

#include "core/cuda/cuda_backend.h"
#include "core/cuda/kernels.cuh"
#include "core/tensor.h"

namespace AXIOM_CUDA_NAMESPACE {

namespace {

constexpr int kSlots = 256;
constexpr unsigned long long kNoFault = ~0ull;  // a slot whose check found every value in range

// *first_fault = min(*first_fault, i) over the positions i of values outside [0, limit).
//   index: n int64 values, element i at index_at.offsets(i)
__global__ void index_check_kernel(int64_t n, StridedOperands<1> index_at, const int64_t* index, int64_t limit,
                                   unsigned long long* first_fault) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t value = index[index_at.offsets(i).of[0]];
    if (value < 0 || value >= limit) atomicMin(first_fault, static_cast<unsigned long long>(i));
  }
}

// The checks issued since the host last waited for the GPU, each with its slot.
class PendingChecks {
 public:
  // The device's pointer to a fresh slot for a check of `index`; the index is kept until reported.
  unsigned long long* add(const IndexBounds& bounds, const Tensor& index) {
    std::unique_lock lock(mutex_);
    if (pending_.size() == kSlots) {  // all slots taken: wait for the GPU and report them
      lock.unlock();
      check(cudaDeviceSynchronize(), bounds.op);
      report();
      lock.lock();
    }
    if (!slots_) allocate_slots(bounds.op);
    pending_.push_back({bounds, index});
    return device_slots_ + (pending_.size() - 1);
  }

  // Called once the GPU has finished every check issued: throws the first failed check's Error.
  void report() {
    std::vector<Pending> checked;
    unsigned long long faults[kSlots];
    {
      std::lock_guard lock(mutex_);
      checked = std::exchange(pending_, {});
      for (size_t k = 0; k < checked.size(); ++k) faults[k] = std::exchange(slots_[k], kNoFault);
    }
    for (size_t k = 0; k < checked.size(); ++k) {
      if (faults[k] == kNoFault) continue;
      const auto flat = static_cast<int64_t>(faults[k]);
      const Tensor& index = checked[k].index;  // its value at `flat` (a copy to the host, when an error is due)
      const int64_t value = index.contiguous().reshape({-1}).narrow(0, flat, 1).to_vector<int64_t>()[0];
      throw checked[k].bounds.out_of_range(value, flat, index.shape());
    }
  }

 private:
  struct Pending {
    IndexBounds bounds;
    Tensor index;
  };

  void allocate_slots(std::string_view op) {
    void* host = nullptr;
    check(cudaHostAlloc(&host, kSlots * sizeof(unsigned long long), cudaHostAllocMapped), op);
    slots_ = static_cast<unsigned long long*>(host);
    for (int k = 0; k < kSlots; ++k) slots_[k] = kNoFault;
    void* device = nullptr;
    check(cudaHostGetDevicePointer(&device, host, 0), op);
    device_slots_ = static_cast<unsigned long long*>(device);
  }

  std::mutex mutex_;
  unsigned long long* slots_ = nullptr;         // kSlots, pinned and mapped, as the host sees them
  unsigned long long* device_slots_ = nullptr;  // the same, as the GPU sees them
  std::vector<Pending> pending_;                // pending_[k] uses slot k
};

PendingChecks& pending_checks() {
  static auto* checks = new PendingChecks;  // never destroyed: tensors may be freed after main
  return *checks;
}

}  // namespace

void CudaBackend::check_indices(const IndexBounds& bounds, const Tensor& index) {
  const int64_t n = index.numel();
  if (n == 0) return;
  require_device(bounds.op);
  unsigned long long* slot = pending_checks().add(bounds, index);
  const StridedOperands<1> index_at = strided_operands<1>(bounds.op, index.shape(), {&index.strides()});
  launch(LaunchSite(bounds.op), index_check_kernel, grid_size(n), kThreads, n, index_at, device_data<int64_t>(index), bounds.limit, slot);
}

void report_failed_index_checks() { pending_checks().report(); }

}  // namespace AXIOM_CUDA_NAMESPACE
