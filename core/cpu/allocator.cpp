#include "core/cpu/allocator.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <new>

#include "core/error.h"
#include "core/memory.h"
#include "core/sanitizers.h"

namespace axiom::core::cpu {

namespace {
constexpr size_t kAlignment = 64;
constexpr size_t kHugePage = size_t{2} << 20;  // 2 MiB
#if defined(AXIOM_ADDRESS_SANITIZER)
constexpr bool kCaching = false;
#else
constexpr bool kCaching = true;
#endif

size_t rounded(size_t nbytes) { return (std::max<size_t>(nbytes, 1) + kAlignment - 1) / kAlignment * kAlignment; }

// A quarter of the machine's memory, and at least 1 GiB.
size_t most_cached() {
  const size_t physical = physical_memory();
  return std::max(physical == std::numeric_limits<size_t>::max() ? 0 : physical / 4, size_t{1} << 30);
}

// A fresh block from the system, or nullptr. Blocks of 2 MiB and more start on a 2 MiB boundary
// and ask the kernel for transparent huge pages: one page fault per 2 MiB instead of one per 4 KiB.
void* fresh_block(size_t size) {
  const size_t alignment = size >= kHugePage ? kHugePage : kAlignment;
  void* block = nullptr;
  if (posix_memalign(&block, alignment, size) != 0) return nullptr;
#if defined(MADV_HUGEPAGE)
  if (size >= kHugePage) madvise(block, size / kHugePage * kHugePage, MADV_HUGEPAGE);  // a hint; failure is harmless
#endif
  return block;
}

[[noreturn]] void out_of_memory(size_t nbytes) {
  const MachineMemory memory = machine_memory();
  throw Error("allocate", "out of memory: asked for ", format_bytes(static_cast<double>(nbytes)), " (", nbytes,
              " bytes); this machine has ", format_bytes(static_cast<double>(memory.total)), ", of which ",
              format_bytes(static_cast<double>(memory.available)), " is free");
}
}  // namespace

HostAllocator::HostAllocator() : cache_(most_cached()) {}

HostAllocator::~HostAllocator() { release_cached(); }

void* HostAllocator::allocate(size_t nbytes) {
  const size_t size = rounded(nbytes);
  if (kCaching) {
    if (void* block = cache_.take(size)) return block;
  }
  if (void* block = fresh_block(size)) return block;
  release_cached();  // the blocks kept for reuse may be what is missing
  if (void* block = fresh_block(size)) return block;
  out_of_memory(nbytes);
}

void HostAllocator::deallocate(void* data, size_t nbytes) noexcept {
  const size_t size = rounded(nbytes);
  // A block the cache cannot keep (full, or no memory to list it) is freed: freeing never fails,
  // or a tensor's destructor would throw while an out-of-memory error unwinds.
  if (kCaching && cache_.keep(data, size)) return;
  std::free(data);
}

void HostAllocator::release_cached() {
  cache_.release([](void* block) { std::free(block); });
}

size_t HostAllocator::cached_bytes() { return cache_.bytes(); }

bool HostAllocator::keeps_freed_blocks() { return kCaching; }

HostAllocator& host_allocator() {
  static HostAllocator* allocator = new HostAllocator();  // never destroyed: tensors may outlive statics
  return *allocator;
}

}  // namespace axiom::core::cpu
