#include "core/cpu/allocator.h"

#include <algorithm>
#include <cstdlib>
#include <new>

namespace axiom::core::cpu {

namespace {
constexpr size_t kAlignment = 64;
constexpr size_t kSmallestCached = size_t{64} << 10;  // 64 KiB
constexpr size_t kMostCached = size_t{1} << 30;       // 1 GiB
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kCaching = false;
#else
constexpr bool kCaching = true;
#endif

size_t rounded(size_t nbytes) { return (std::max<size_t>(nbytes, 1) + kAlignment - 1) / kAlignment * kAlignment; }
}  // namespace

HostAllocator::~HostAllocator() { release_cached(); }

void* HostAllocator::allocate(size_t nbytes) {
  const size_t size = rounded(nbytes);
  if (kCaching && size >= kSmallestCached) {
    std::lock_guard lock(mutex_);
    auto found = free_blocks_.find(size);
    if (found != free_blocks_.end() && !found->second.empty()) {
      void* block = found->second.back();
      found->second.pop_back();
      cached_bytes_ -= size;
      return block;
    }
  }
  void* block = std::aligned_alloc(kAlignment, size);
  if (!block) throw std::bad_alloc();
  return block;
}

void HostAllocator::deallocate(void* data, size_t nbytes) {
  const size_t size = rounded(nbytes);
  if (kCaching && size >= kSmallestCached) {
    std::lock_guard lock(mutex_);
    if (cached_bytes_ + size <= kMostCached) {
      free_blocks_[size].push_back(data);
      cached_bytes_ += size;
      return;
    }
  }
  std::free(data);
}

void HostAllocator::release_cached() {
  std::lock_guard lock(mutex_);
  for (auto& [size, blocks] : free_blocks_) {
    for (void* block : blocks) std::free(block);
  }
  free_blocks_.clear();
  cached_bytes_ = 0;
}

size_t HostAllocator::cached_bytes() {
  std::lock_guard lock(mutex_);
  return cached_bytes_;
}

HostAllocator& host_allocator() {
  static HostAllocator* allocator = new HostAllocator();  // never destroyed: tensors may outlive statics
  return *allocator;
}

}  // namespace axiom::core::cpu
