// GPU memory for tensors, with a cache: cudaMalloc and cudaFree are slow (cudaFree waits for the
// whole device), and a training step asks for the same sizes every time. A freed block is kept
// in a free list by its rounded size and handed out again for the next request of that size.
//
// Reuse is safe without events because every kernel runs on one stream (core/cuda/runtime.h): a
// kernel that writes a reused block runs after every kernel that read it before it was freed.
// When cudaMalloc runs out of memory, the cache is given back to the driver and the request tried
// once more before it becomes an Error.
#pragma once

#include <cstddef>

#include "core/block_cache.h"
#include "core/cuda/build.h"

namespace AXIOM_CUDA_NAMESPACE {

class DeviceAllocator {
 public:
  void* allocate(size_t nbytes);
  void deallocate(void* data, size_t nbytes) noexcept;  // keeps the block, or cudaFree when it cannot
  void release_cached();                                // cudaFree every cached block
  size_t cached_bytes();

 private:
  void* cached_or_new_block(size_t nbytes);
  core::BlockCache cache_;  // freed blocks, by rounded size
};

DeviceAllocator& device_allocator();

// Sizes are rounded up so that slightly different requests share blocks: to 512 bytes below
// 1 MiB, and to 1/8 of the next power of two above (at most 12.5% more than was asked).
size_t rounded_block_size(size_t nbytes);

}  // namespace AXIOM_CUDA_NAMESPACE
