#include "core/block_cache.h"

#include <new>

namespace axiom::core {

void* BlockCache::take(size_t size) {
  std::lock_guard lock(mutex_);
  const auto found = blocks_.find(size);
  if (found == blocks_.end() || found->second.empty()) return nullptr;
  void* block = found->second.back();
  found->second.pop_back();
  bytes_ -= size;
  return block;
}

bool BlockCache::keep(void* block, size_t size) noexcept {
  std::lock_guard lock(mutex_);
  if (size > most_bytes_ - bytes_) return false;
  try {
    blocks_[size].push_back(block);  // a longer list may need memory that is not there
  } catch (const std::bad_alloc&) {
    return false;
  }
  bytes_ += size;
  return true;
}

void BlockCache::release(void (*free_block)(void*)) {
  std::lock_guard lock(mutex_);
  for (auto& [size, blocks] : blocks_) {
    for (void* block : blocks) free_block(block);
  }
  blocks_.clear();
  bytes_ = 0;
}

size_t BlockCache::bytes() {
  std::lock_guard lock(mutex_);
  return bytes_;
}

}  // namespace axiom::core
