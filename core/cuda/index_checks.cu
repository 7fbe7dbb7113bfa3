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
// At most kSlots checks wait at once; the next one first waits for the GPU and reports. A report
// covers only the checks issued before its wait began (index_checks_issued), so that a host thread
// never reads a slot whose kernel another thread queued after that wait.
#include <cstdint>
#include <deque>
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

// The checks not yet reported, each with its slot. Checks are numbered as they are issued; a report
// covers those issued before the host began its wait (another host thread may issue more
// meanwhile, and those stay pending). Check n writes slot n % kSlots.
class PendingChecks {
 public:
  // How many checks were issued so far: taken before a wait, then given to report().
  uint64_t issued() {
    std::lock_guard lock(mutex_);
    return issued_;
  }

  // Checks `index` on the GPU: launches the check kernel with a fresh slot. When every slot is
  // taken, first waits for the GPU and reports.
  void issue(const IndexBounds& bounds, const Tensor& index, const StridedOperands<1>& index_at) {
    std::unique_lock lock(mutex_);
    while (pending_.size() == kSlots) {
      const uint64_t before_wait = issued_;
      lock.unlock();
      check(cudaDeviceSynchronize(), bounds.op);
      report(before_wait);
      lock.lock();
    }
    if (!slots_) allocate_slots(bounds.op);
    unsigned long long* slot = device_slots_ + issued_ % kSlots;
    pending_.push_back({issued_++, bounds, index});
    // launched under the lock: a check counted in issued() is queued before any later wait
    const int64_t n = index.numel();
    launch(LaunchSite(bounds.op), index_check_kernel, grid_size(n), kThreads, n, index_at, device_data<int64_t>(index),
           bounds.limit, slot);
  }

  // Called once the GPU has finished everything queued before the host read issued() =
  // `before_wait`: throws the Error of the first of those checks that failed.
  void report(uint64_t before_wait) {
    std::vector<Pending> checked;
    std::vector<unsigned long long> faults;
    {
      std::lock_guard lock(mutex_);
      while (!pending_.empty() && pending_.front().number < before_wait) {
        volatile unsigned long long& slot = slots_[pending_.front().number % kSlots];
        const unsigned long long fault = slot;  // written by the GPU: read from memory
        faults.push_back(fault);
        slot = kNoFault;
        checked.push_back(std::move(pending_.front()));
        pending_.pop_front();
      }
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
    uint64_t number;
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
  uint64_t issued_ = 0;                         // checks issued so far
  std::deque<Pending> pending_;                 // issued and not reported, oldest first
};

PendingChecks& pending_checks() {
  static auto* checks = new PendingChecks;  // never destroyed: tensors may be freed after main
  return *checks;
}

}  // namespace

void CudaBackend::check_indices(const IndexBounds& bounds, const Tensor& index) {
  if (index.numel() == 0) return;
  require_device(bounds.op);
  pending_checks().issue(bounds, index, strided_operands<1>(bounds.op, index.shape(), {&index.strides()}));
}

uint64_t index_checks_issued() { return pending_checks().issued(); }
void report_failed_index_checks(uint64_t issued_before_wait) { pending_checks().report(issued_before_wait); }

}  // namespace AXIOM_CUDA_NAMESPACE
