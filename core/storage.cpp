#include "core/storage.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <utility>

#include "core/backend.h"
#include "core/error.h"

namespace axiom::core {

namespace {
// The counters of one device type, or of all of them (the last).
struct Counters {
  std::atomic<int64_t> live_buffers{0};
  std::atomic<int64_t> live_bytes{0};
  std::atomic<int64_t> peak_bytes{0};

  void add(int64_t nbytes) {
    live_buffers += 1;
    const int64_t now = live_bytes += nbytes;
    int64_t peak = peak_bytes.load();
    while (now > peak && !peak_bytes.compare_exchange_weak(peak, now)) {
    }
  }
  void remove(int64_t nbytes) {
    live_buffers -= 1;
    live_bytes -= nbytes;
  }
  AllocationStats stats() const { return {live_buffers.load(), live_bytes.load(), peak_bytes.load()}; }
};
std::array<Counters, kNumDeviceTypes + 1> counters;
Counters& all_devices() { return counters[kNumDeviceTypes]; }
Counters& of(DeviceType type) { return counters[static_cast<size_t>(type)]; }
}  // namespace

Storage::Storage(size_t nbytes, Device device) : nbytes_(nbytes), device_(device) {
  data_ = backend(device).allocate(nbytes);
  all_devices().add(static_cast<int64_t>(nbytes)), of(device.type).add(static_cast<int64_t>(nbytes));
}

Storage::Storage(void* borrowed, size_t nbytes, std::shared_ptr<void> owner)
    : data_(borrowed), nbytes_(nbytes), device_(Device::cpu()), owner_(std::move(owner)) {
  // without an owner, the destructor would hand memory axiom never allocated to the backend to free
  if (!owner_) throw Error("Storage", "borrowed memory needs an owner that keeps it alive");
}

Storage::~Storage() {
  if (owner_) return;  // borrowed: the owner frees it, and it was never counted
  backend(device_).deallocate(data_, nbytes_);
  all_devices().remove(static_cast<int64_t>(nbytes_)), of(device_.type).remove(static_cast<int64_t>(nbytes_));
}

AllocationStats allocation_stats() { return all_devices().stats(); }
AllocationStats allocation_stats(DeviceType type) { return of(type).stats(); }

void reset_allocation_peak() {
  for (Counters& c : counters) c.peak_bytes = c.live_bytes.load();
}

}  // namespace axiom::core
