#include "core/cuda/allocator.h"

#include <bit>
#include <new>

#include "core/cuda/runtime.h"
#include "core/error.h"
#if defined(AXIOM_CUDA_EMULATED)
#include "core/cuda/emulator/memory.h"  // tells the emulator which bytes of a block a tensor uses
#endif

namespace AXIOM_CUDA_NAMESPACE {

size_t rounded_block_size(size_t nbytes) {
  constexpr size_t kSmall = 1 << 20, kSmallStep = 512;
  if (nbytes <= kSmall) return (nbytes + kSmallStep - 1) / kSmallStep * kSmallStep;
  const size_t step = std::bit_floor(nbytes) / 8;
  return (nbytes + step - 1) / step * step;
}

void* DeviceAllocator::allocate(size_t nbytes) {
  void* block = cached_or_new_block(nbytes);
#if defined(AXIOM_CUDA_EMULATED)
  if (block) cuda_emulator::lend(block, nbytes);
#endif
  return block;
}

void* DeviceAllocator::cached_or_new_block(size_t nbytes) {
  if (nbytes == 0) return nullptr;
  const size_t size = rounded_block_size(nbytes);
  if (void* block = cache_.take(size)) return block;
  require_device("allocate");
  (void)cublas();  // cuBLAS takes its workspace first, before the cache can hold all the memory
  void* block = nullptr;
  cudaError_t status = cudaMalloc(&block, size);
  if (status == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    release_cached();
    status = cudaMalloc(&block, size);
  }
  if (status == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    size_t free_bytes = 0, total_bytes = 0;
    cudaMemGetInfo(&free_bytes, &total_bytes);
    throw Error("allocate", "out of GPU memory: asked for ", nbytes, " bytes with ", free_bytes, " of ", total_bytes,
                " bytes free");
  }
  check(status, "allocate");
  return block;
}

void DeviceAllocator::deallocate(void* data, size_t nbytes) noexcept {
  if (!data) return;
#if defined(AXIOM_CUDA_EMULATED)
  cuda_emulator::take_back(data);
#endif
  // A block the cache cannot list (no host memory for a longer list) goes back to the driver:
  // freeing never throws.
  if (!cache_.keep(data, rounded_block_size(nbytes))) cudaFree(data);
}

void DeviceAllocator::release_cached() {
  cache_.release([](void* block) { cudaFree(block); });
}

size_t DeviceAllocator::cached_bytes() { return cache_.bytes(); }

DeviceAllocator& device_allocator() {
  // Never destroyed: tensors in static storage may be freed after main returns.
  static auto* allocator = new DeviceAllocator;
  return *allocator;
}

}  // namespace AXIOM_CUDA_NAMESPACE
