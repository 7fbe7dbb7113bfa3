#include "core/storage.h"

#include <algorithm>
#include <atomic>

#include "core/backend.h"

namespace axiom::core {

namespace {
std::atomic<int64_t> live_buffers{0};
std::atomic<int64_t> live_bytes{0};
std::atomic<int64_t> peak_bytes{0};

void count_allocation(int64_t nbytes) {
  live_buffers += 1;
  const int64_t now = live_bytes += nbytes;
  int64_t peak = peak_bytes.load();
  while (now > peak && !peak_bytes.compare_exchange_weak(peak, now)) {
  }
}
}  // namespace

Storage::Storage(size_t nbytes, Device device) : nbytes_(nbytes), device_(device) {
  data_ = backend(device).allocate(nbytes);
  count_allocation(static_cast<int64_t>(nbytes));
}

Storage::~Storage() {
  backend(device_).deallocate(data_, nbytes_);
  live_buffers -= 1;
  live_bytes -= static_cast<int64_t>(nbytes_);
}

AllocationStats allocation_stats() { return {live_buffers.load(), live_bytes.load(), peak_bytes.load()}; }

void reset_allocation_peak() { peak_bytes = live_bytes.load(); }

}  // namespace axiom::core
