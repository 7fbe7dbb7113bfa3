// The CUDA backend's own kernels on a machine without a GPU: core/cuda compiled against the CPU
// emulator of core/cuda/emulator (a grid runner whose threads are fibers, with real barriers and
// poisoned shared memory; stand-ins for the CUDA runtime and cuBLAS that check every pointer),
// installed for DeviceType::cuda for the life of a scope.
//
//   {
//     ScopedEmulatedCuda emulated(ThreadOrder::reverse);   // Device::cuda() runs core/cuda's kernels
//     ...
//   }                                                      // the previous CUDA backend is back
// No cuda tensor may outlive the scope (a Storage frees through the backend registered then).
//
// Every test that uses it belongs to the doctest suite "cuda-emulated", which ctest turns into
// the label of the same name: `ctest -L cuda-emulated` runs them all. (Their names hold no comma
// or semicolon: doctest's CMake script looks a test's suites up by its unescaped name.)
#pragma once

#include <doctest/doctest.h>

#include <map>
#include <memory>
#include <string>

#include "core/backend.h"
#include "core/cuda/emulator/emulator.h"

namespace axiom::test {

using cuda_emulator::ThreadOrder;

class ScopedEmulatedCuda {
 public:
  explicit ScopedEmulatedCuda(ThreadOrder order = ThreadOrder::forward, int64_t most_blocks = 65536, uint64_t seed = 1,
                              int64_t longest_warp_row = 1024)
      : previous_(core::register_backend(DeviceType::cuda, cuda_emulator::make_backend())),
        previous_order_(cuda_emulator::thread_order()),
        previous_most_blocks_(cuda_emulator::most_blocks()),
        previous_longest_warp_row_(cuda_emulator::longest_warp_row()) {
    cuda_emulator::set_thread_order(order, seed);
    cuda_emulator::set_most_blocks(most_blocks);
    cuda_emulator::set_longest_warp_row(longest_warp_row);
  }
  ~ScopedEmulatedCuda() {
    cuda_emulator::set_thread_order(previous_order_);
    cuda_emulator::set_most_blocks(previous_most_blocks_);
    cuda_emulator::set_longest_warp_row(previous_longest_warp_row_);
    core::register_backend(DeviceType::cuda, std::move(previous_));
  }
  ScopedEmulatedCuda(const ScopedEmulatedCuda&) = delete;
  ScopedEmulatedCuda& operator=(const ScopedEmulatedCuda&) = delete;

 private:
  std::unique_ptr<core::Backend> previous_;
  ThreadOrder previous_order_;
  int64_t previous_most_blocks_;
  int64_t previous_longest_warp_row_;
};

// Fails the test for each memory fault the emulator found since the last call (a kernel that wrote
// past the end of its tensor; see core/cuda/emulator/memory.h).
inline void report_memory_faults() {
  for (const std::string& fault : cuda_emulator::take_memory_faults()) FAIL_CHECK(fault);
}

// The calls of each cuBLAS entry made between two readings of the emulator's traffic_stats()
// (entries with no new call left out).
inline std::map<std::string, int64_t> cublas_calls_between(const cuda_emulator::TrafficStats& before,
                                                           const cuda_emulator::TrafficStats& after) {
  std::map<std::string, int64_t> added;
  for (const auto& [entry, calls] : after.cublas_calls) {
    const auto earlier = before.cublas_calls.find(entry);
    const int64_t more = calls - (earlier == before.cublas_calls.end() ? 0 : earlier->second);
    if (more > 0) added[entry] = more;
  }
  return added;
}

// Whether the real CUDA backend can run here (a CUDA build on a machine with a GPU).
inline bool real_cuda_available() { return core::backend(Device::cuda()).available(); }

// The emulated schedules every device test runs under: threads (and blocks) in order, as on the
// GPU; then in reverse with grids capped at 2 blocks, so that every grid-stride loop wraps around,
// and rows longer than 16 given a block rather than a warp, so that both kinds of row kernel run.
struct EmulatedSchedule {
  ThreadOrder order;
  int64_t most_blocks, longest_warp_row;
};
inline constexpr EmulatedSchedule kEmulatedSchedules[] = {{ThreadOrder::forward, 65536, 1024},
                                                          {ThreadOrder::reverse, 2, 16}};

// Runs check() on every device that can stand in for `cuda` here: the emulated CUDA backend under
// each schedule, and the real one when a GPU is present (otherwise one line, once per test
// program, says it was skipped).
template <typename Check>
void on_every_device(Check check) {
  for (const EmulatedSchedule& schedule : kEmulatedSchedules) {
    ScopedEmulatedCuda emulated(schedule.order, schedule.most_blocks, 1, schedule.longest_warp_row);
    INFO("on the emulated CUDA backend, threads ", std::string(cuda_emulator::order_name(schedule.order)), ", at most ",
         schedule.most_blocks, " blocks per launch, a warp for rows of up to ", schedule.longest_warp_row);
    check();
    report_memory_faults();
  }
  if (real_cuda_available()) {
    INFO("on the real CUDA backend");
    check();
  } else {
    static bool said = false;
    if (!said) MESSAGE("the real CUDA backend is skipped: no CUDA device here (the emulated one ran instead)");
    said = true;
  }
}

}  // namespace axiom::test
