// Host memory for tensors, 64-byte aligned (one cache line; what AVX-512 loads like best).
//
// Buffers of 64 KiB and more are kept when freed and handed out again for the next request of the
// same size: a training step asks for the same sizes every time, and a fresh multi-megabyte
// buffer costs a page fault per 4 KiB page when first touched — about as long as the work done
// on it. At most 1 GiB is kept; release_cached() gives it all back. Built with AddressSanitizer,
// nothing is kept, so that a use after free is still caught.
#pragma once

#include <cstddef>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace axiom::core::cpu {

class HostAllocator {
 public:
  ~HostAllocator();
  void* allocate(size_t nbytes);
  void deallocate(void* data, size_t nbytes);
  void release_cached();
  size_t cached_bytes();

 private:
  std::mutex mutex_;
  std::unordered_map<size_t, std::vector<void*>> free_blocks_;  // by rounded size
  size_t cached_bytes_ = 0;
};

HostAllocator& host_allocator();

}  // namespace axiom::core::cpu
