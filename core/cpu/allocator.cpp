#include "core/cpu/allocator.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <new>

namespace axiom::core::cpu {

namespace {
constexpr size_t kAlignment = 64;
constexpr size_t kSmallestCached = size_t{64} << 10;  // 64 KiB
constexpr size_t kHugePage = size_t{2} << 20;         // 2 MiB
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kCaching = false;
#else
constexpr bool kCaching = true;
#endif

size_t rounded(size_t nbytes) { return (std::max<size_t>(nbytes, 1) + kAlignment - 1) / kAlignment * kAlignment; }

// A quarter of the machine's memory, and at least 1 GiB.
size_t most_cached() {
  const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGE_SIZE);
  const size_t physical = pages > 0 && page_size > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page_size) : 0;
  return std::max(physical / 4, size_t{1} << 30);
}

// A fresh block from the system. Blocks of 2 MiB and more start on a 2 MiB boundary and ask the
// kernel for transparent huge pages: one page fault per 2 MiB instead of one per 4 KiB.
void* fresh_block(size_t size) {
  const size_t alignment = size >= kHugePage ? kHugePage : kAlignment;
  void* block = nullptr;
  if (posix_memalign(&block, alignment, size) != 0) throw std::bad_alloc();
#if defined(MADV_HUGEPAGE)
  if (size >= kHugePage) madvise(block, size / kHugePage * kHugePage, MADV_HUGEPAGE);  // a hint; failure is harmless
#endif
  return block;
}
}  // namespace

HostAllocator::HostAllocator() : most_cached_(most_cached()) {}

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
  return fresh_block(size);
}

void HostAllocator::deallocate(void* data, size_t nbytes) {
  const size_t size = rounded(nbytes);
  if (kCaching && size >= kSmallestCached) {
    std::lock_guard lock(mutex_);
    if (cached_bytes_ + size <= most_cached_) {
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
