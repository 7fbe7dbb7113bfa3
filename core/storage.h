// Storage: one buffer of bytes on one device, shared by every tensor that views it.
// It allocates and frees through the device's backend, and counts what is alive so that
// tests can prove that nothing leaks (allocation_stats).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "device.h"

namespace axiom::core {

class Storage {
 public:
  Storage(size_t nbytes, Device device);
  // Memory that axiom did not allocate (a NumPy array's, from the Python bindings): CPU bytes that
  // `owner` keeps alive. The storage never frees them; it drops `owner` when it goes, and
  // allocation_stats does not count them (they are the owner's, not axiom's).
  Storage(void* borrowed, size_t nbytes, std::shared_ptr<void> owner);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

  // Counts writes into existing tensors (Tensor::set, copy_into). Autograd remembers the version
  // of every tensor it saves for a backward pass and refuses to use one that changed since.
  uint64_t version() const { return version_.load(); }
  void mark_written() { ++version_; }

 private:
  void* data_ = nullptr;
  size_t nbytes_ = 0;
  Device device_;
  std::shared_ptr<void> owner_;  // set for borrowed memory only
  std::atomic<uint64_t> version_{0};
};

// Buffers alive right now on every device, and the most bytes ever alive at once.
struct AllocationStats {
  int64_t live_buffers = 0;
  int64_t live_bytes = 0;
  int64_t peak_bytes = 0;
};
AllocationStats allocation_stats();
AllocationStats allocation_stats(DeviceType type);  // of one device type's buffers
// Starts peak_bytes again from the bytes alive now (to measure the peak of one piece of work), on every device.
void reset_allocation_peak();

}  // namespace axiom::core
