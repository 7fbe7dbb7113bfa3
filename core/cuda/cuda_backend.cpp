// The CUDA backend's memory and copies; its kernels live in the other files of this folder.
#include "core/cuda/cuda_backend.h"

#include "core/cuda/allocator.h"
#include "core/cuda/runtime.h"

namespace AXIOM_CUDA_NAMESPACE {

bool CudaBackend::available() const { return device_present(); }

void CudaBackend::synchronize() {
  if (!device_present()) return;
  const uint64_t issued = index_checks_issued();
  check(cudaDeviceSynchronize(), "synchronize");
  report_failed_index_checks(issued);
}

MachineMemory CudaBackend::memory() {
  require_device("memory");
  size_t free_bytes = 0, total_bytes = 0;
  check(cudaMemGetInfo(&free_bytes, &total_bytes), "memory");
  return {.total = total_bytes, .available = free_bytes + device_allocator().cached_bytes()};
}

size_t CudaBackend::release_cached_memory() {
  const size_t bytes = device_allocator().cached_bytes();
  device_allocator().release_cached();
  return bytes;
}

void* CudaBackend::allocate(size_t nbytes) { return device_allocator().allocate(nbytes); }
void CudaBackend::deallocate(void* data, size_t nbytes) noexcept { device_allocator().deallocate(data, nbytes); }

// cudaMemcpy runs on the default stream: a copy to the host waits for the kernels before it, so the
// index checks issued before it have run too.
void CudaBackend::copy_from_host(void* dst, const void* host_src, size_t nbytes) {
  if (nbytes) check(cudaMemcpy(dst, host_src, nbytes, cudaMemcpyHostToDevice), "to");
}
void CudaBackend::copy_to_host(void* host_dst, const void* src, size_t nbytes) {
  if (nbytes == 0) return;  // no copy, no wait: the checks may still be running
  const uint64_t issued = index_checks_issued();
  check(cudaMemcpy(host_dst, src, nbytes, cudaMemcpyDeviceToHost), "to");
  report_failed_index_checks(issued);
}

}  // namespace AXIOM_CUDA_NAMESPACE
