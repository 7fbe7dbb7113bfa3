// Host memory for tensors, 64-byte aligned (one cache line; what AVX-512 loads like best).
//
// Freed buffers are kept and handed out again for the next request of the same size (rounded up
// to 64 bytes): a training step or a sampler's pixel step asks for the same sizes every time.
// - A fresh multi-megabyte buffer costs a page fault per 4 KiB page when first touched, about as
//   long as the work done on it.
// - A fresh small one comes from posix_memalign, which carves an aligned block out of a larger one
//   and merges free chunks again later: at batch 16 the semi-parallel sampler spent about 8% of
//   its time there (about 35 small tensors a pixel), before small buffers were kept too.
// Up to a quarter of the machine's memory is kept (a training step of the `small` model frees
// about 3 GiB at its end, and asks for the same buffers again in the next step); release_cached()
// gives it all back, and so does a request that the system cannot meet before it becomes an Error
// ("[allocate] out of memory: asked for ..."). Freeing never throws. Built with AddressSanitizer,
// nothing is kept, so that a use after free is still caught. Blocks of 2 MiB and more are placed
// on transparent huge pages where the kernel allows it, so that a fresh one costs a page fault per
// 2 MiB, not per 4 KiB.
#pragma once

#include <cstddef>

#include "core/block_cache.h"

namespace axiom::core::cpu {

class HostAllocator {
 public:
  HostAllocator();
  ~HostAllocator();
  void* allocate(size_t nbytes);
  void deallocate(void* data, size_t nbytes) noexcept;
  void release_cached();
  size_t cached_bytes();
  static bool keeps_freed_blocks();  // false in an AddressSanitizer build

 private:
  BlockCache cache_;  // freed blocks, by rounded size
};

HostAllocator& host_allocator();

}  // namespace axiom::core::cpu
