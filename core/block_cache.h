// Freed memory blocks kept for reuse, listed by size: what both allocators keep
// (core/cpu/allocator.cpp for host memory, core/cuda/allocator.cpp for GPU memory).
//
// A training step asks for the same sizes every step, and a fresh block is slow (a page fault per
// page touched on the host, cudaMalloc on the GPU): a block freed by one step serves the next.
// Thread-safe. Keeping a block never throws: an allocator's free path runs in destructors.
#pragma once

#include <cstddef>
#include <limits>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace axiom::core {

class BlockCache {
 public:
  explicit BlockCache(size_t most_bytes = std::numeric_limits<size_t>::max()) : most_bytes_(most_bytes) {}

  // A kept block of exactly `size` bytes, taken out of the cache; nullptr when there is none.
  void* take(size_t size);
  // Keeps `block` (of `size` bytes) for reuse. False, and the block is the caller's to free, when
  // the cache holds its most already or listing the block needs memory that is not there.
  bool keep(void* block, size_t size) noexcept;
  // Hands every kept block to `free_block` and empties the cache.
  void release(void (*free_block)(void*));
  size_t bytes();

 private:
  std::mutex mutex_;
  std::unordered_map<size_t, std::vector<void*>> blocks_;  // by size
  size_t bytes_ = 0;
  const size_t most_bytes_;
};

}  // namespace axiom::core
