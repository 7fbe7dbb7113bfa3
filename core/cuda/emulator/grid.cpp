// The grid runner (grid.h): blocks in turn, the threads of a block as fibers, barriers between.
#include "core/cuda/emulator/grid.h"

#include <algorithm>
#include <boost/context/fiber.hpp>
#include <boost/context/protected_fixedsize_stack.hpp>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/cuda/emulator/include/cuda_runtime.h"
#include "core/cuda/emulator/memory.h"
#include "core/error.h"
#include "core/sanitizers.h"

#if defined(AXIOM_ADDRESS_SANITIZER)
#include <sanitizer/common_interface_defs.h>
#endif
#if defined(AXIOM_THREAD_SANITIZER)
#include <sanitizer/tsan_interface.h>
#endif

// The section that holds every __shared__ variable (include/cuda_runtime.h); the linker defines
// these two symbols around it. Weak: a program without __shared__ variables has no such section.
extern "C" {
extern char __start_axiom_cuda_shared[] __attribute__((weak));
extern char __stop_axiom_cuda_shared[] __attribute__((weak));
}

namespace axiom::cuda_emulator {

namespace {

namespace context = boost::context;

#if defined(AXIOM_ADDRESS_SANITIZER)
constexpr size_t kStackBytes = 512 << 10;  // AddressSanitizer's frames are larger
#else
constexpr size_t kStackBytes = 64 << 10;
#endif
constexpr unsigned kMostThreadsPerBlock = 1024;

enum class ThreadState { ready, waiting, waiting_for_warp, ended };

// One fiber per thread of a block, kept from block to block and launch to launch.
struct Worker {
  context::fiber fiber;      // the worker, suspended (empty while it runs)
  context::fiber to_runner;  // while it runs: the runner, to switch back to
  dim3 thread;               // threadIdx
  ThreadState state = ThreadState::ended;
  bool started = false;              // it began this block's kernel (and may be inside it)
  std::source_location barrier;      // the __syncthreads() or warp shuffle it waits at
  unsigned linear = 0;               // its index in the block: x + y * blockDim.x + ...; lane = linear % 32
  unsigned char lane_value[8] = {};  // what it offers the other lanes of its warp in a shuffle
  std::exception_ptr error;          // what the kernel threw, if anything
  // for AddressSanitizer and ThreadSanitizer, which must be told of every switch between stacks
  const void* stack_bottom = nullptr;
  size_t stack_size = 0;
  void* fake_stack = nullptr;
  void* tsan_fiber = nullptr;  // ThreadSanitizer's record of this fiber (never freed, as the fiber)
};

// Boost's guarded stack, remembering where it lies (AddressSanitizer needs the bounds).
struct RecordedStack {
  Worker* worker;
  context::protected_fixedsize_stack stacks{kStackBytes};
  context::stack_context allocate() {
    context::stack_context stack = stacks.allocate();
    worker->stack_bottom = static_cast<char*>(stack.sp) - stack.size;
    worker->stack_size = stack.size;
    return stack;
  }
  void deallocate(context::stack_context& stack) noexcept { stacks.deallocate(stack); }
};

// Fills every __shared__ variable with 0xFF bytes. Not through memset: AddressSanitizer would
// check the bytes between the variables.
__attribute__((no_sanitize("address"))) void poison_shared_memory() {
  if (!__start_axiom_cuda_shared) return;
  for (volatile char* byte = __start_axiom_cuda_shared; byte < __stop_axiom_cuda_shared; ++byte) *byte = char(0xFF);
}

std::string location(const std::source_location& where) {
  std::string file = where.file_name();
  const size_t core = file.rfind("core/");
  if (core != std::string::npos) file = file.substr(core);
  return file + ":" + std::to_string(where.line());
}

std::string to_string(const dim3& d) {
  std::ostringstream out;
  out << "(" << d.x << ", " << d.y << ", " << d.z << ")";
  return out.str();
}

dim3 unflatten(uint64_t i, const dim3& extent) {
  return dim3(static_cast<unsigned>(i % extent.x), static_cast<unsigned>(i / extent.x % extent.y),
              static_cast<unsigned>(i / (uint64_t(extent.x) * extent.y)));
}

uint64_t volume(const dim3& d) { return uint64_t(d.x) * d.y * d.z; }

// Why CUDA would refuse this configuration, or "" when it would not.
std::string refused_configuration(dim3 grid, dim3 block) {
  if (volume(block) == 0 || volume(grid) == 0)
    return "an empty grid " + to_string(grid) + " or block " + to_string(block);
  if (block.x > 1024 || block.y > 1024 || block.z > 64)
    return "block " + to_string(block) + " is beyond (1024, 1024, 64)";
  if (volume(block) > kMostThreadsPerBlock) return "block " + to_string(block) + " has more than 1024 threads";
  if (grid.x > 2147483647u || grid.y > 65535 || grid.z > 65535)
    return "grid " + to_string(grid) + " is beyond (2^31 - 1, 65535, 65535)";
  return "";
}

class GridRunner {
 public:
  void run(const KernelSite& site, dim3 grid, dim3 block, const std::function<void()>& body) {
    std::lock_guard lock(mutex_);
    if (const std::string why = refused_configuration(grid, block); !why.empty()) {
      set_failure_detail(std::string(site.op) + " kernel launched at " + location(site.where) + ": " + why);
      set_last_error(cudaErrorInvalidConfiguration);
      return;
    }
    site_ = &site, body_ = &body, grid_dim_ = grid, block_dim_ = block;
    ++stats_.launches;
    for (uint64_t b : turn_order(volume(grid))) run_block(unflatten(b, grid));
    body_ = nullptr;
  }

  // What the running thread reads; an Error outside a kernel.
  Worker& current() {
    if (!current_) throw Error("cuda emulator", "threadIdx, blockIdx or __syncthreads() used outside a kernel");
    return *current_;
  }
  const dim3& block_index() { return current(), block_index_; }
  const dim3& block_dim() { return current(), block_dim_; }
  const dim3& grid_dim() { return current(), grid_dim_; }

  // Called by a thread at __syncthreads(): back to the runner until the whole block is there.
  void wait_at_barrier(const std::source_location& where) {
    Worker& worker = current();
    worker.state = ThreadState::waiting;
    worker.barrier = where;
    switch_to_runner(worker);
  }

  // A warp shuffle (shuffle_lanes in grid.h): the thread offers its value, waits until the 32
  // lanes of its warp have offered theirs at the same call, takes the source lane's, and waits
  // again until every lane has taken its value, so that no lane offers its next one too soon.
  void exchange_with_lane(const void* mine, void* theirs, size_t bytes, unsigned source_lane,
                          const std::source_location& where) {
    Worker& worker = current();
    require_whole_warps("a warp shuffle");
    std::memcpy(worker.lane_value, mine, bytes);
    wait_for_warp(worker, where);
    const unsigned first_lane = worker.linear - worker.linear % 32;
    std::memcpy(theirs, workers_[first_lane + source_lane]->lane_value, bytes);
    wait_for_warp(worker, where);
  }

  // __syncwarp(): the lanes of the warp wait for each other.
  void sync_warp(const std::source_location& where) {
    require_whole_warps("__syncwarp()");
    wait_for_warp(current(), where);
  }

  void set_order(ThreadOrder order, uint64_t seed) { order_ = order, random_.seed(seed); }
  ThreadOrder order() const { return order_; }
  int64_t most_blocks = 65536;
  GridStats stats() { return stats_; }

 private:
  // The order in which `count` threads or blocks take their turns.
  std::vector<uint64_t> turn_order(uint64_t count) {
    std::vector<uint64_t> order(count);
    std::iota(order.begin(), order.end(), 0);
    if (order_ == ThreadOrder::reverse) std::reverse(order.begin(), order.end());
    if (order_ == ThreadOrder::shuffled) std::shuffle(order.begin(), order.end(), random_);
    return order;
  }

  // Runs the block's threads to their ends, phase by phase: in each phase every ready thread runs
  // until it ends or waits at a barrier; when all that have not ended wait at the same barrier,
  // they are released into the next phase.
  void run_block(dim3 index) {
    block_index_ = index;
    poison_shared_memory();
    const auto threads = static_cast<unsigned>(volume(block_dim_));
    for (unsigned t = 0; t < threads; ++t) {
      Worker& worker = worker_at(t);
      worker.thread = unflatten(t, block_dim_), worker.linear = t, worker.state = ThreadState::ready,
      worker.started = false, worker.error = nullptr;
    }
    stats_.blocks += 1, stats_.threads += threads;
    for (;;) {
      for (uint64_t t : turn_order(threads)) {
        Worker& worker = *workers_[t];
        if (worker.state != ThreadState::ready) continue;
        worker.started = true;
        resume(worker);
        if (worker.error) fail_block(threads, "thread " + to_string(worker.thread) + " threw", worker.error);
      }
      if (release_warps(threads)) continue;
      if (!release_barrier(threads)) return;
      ++stats_.barriers;
    }
  }

  void require_whole_warps(const char* what) {
    if (volume(block_dim_) % 32 != 0) {
      throw Error("cuda emulator", what, " in a block of ", volume(block_dim_),
                  " threads: only whole warps of 32 are emulated");
    }
  }

  void wait_for_warp(Worker& worker, const std::source_location& where) {
    worker.state = ThreadState::waiting_for_warp;
    worker.barrier = where;
    switch_to_runner(worker);
  }

  // After a phase: sets ready every warp whose 32 lanes all wait at one warp shuffle, and says
  // whether there was one; an Error when some lanes of a warp wait at a shuffle that another lane
  // ended without reaching, or waits elsewhere.
  bool release_warps(unsigned threads) {
    bool released = false;
    for (unsigned first = 0; first < threads; first += 32) {
      const Worker* waiting = nullptr;
      for (unsigned t = first; t < std::min(first + 32, threads) && !waiting; ++t) {
        if (workers_[t]->state == ThreadState::waiting_for_warp) waiting = workers_[t].get();
      }
      if (!waiting) continue;
      for (unsigned t = first; t < first + 32; ++t) {
        const Worker& lane = *workers_[t];
        if (lane.state == ThreadState::waiting_for_warp && same_place(lane.barrier, waiting->barrier)) continue;
        const std::string where_lane_is =
            lane.state == ThreadState::ended ? "ended without reaching it" : "waits at " + location(lane.barrier);
        fail_block(threads, "lanes of the warp of thread " + to_string(waiting->thread) +
                                " wait at the warp shuffle at " + location(waiting->barrier) + ", but thread " +
                                to_string(lane.thread) + " " + where_lane_is);
      }
      for (unsigned t = first; t < first + 32; ++t) workers_[t]->state = ThreadState::ready;
      released = true;
    }
    return released;
  }

  // After a phase: false when every thread has ended; true when all the others wait at one
  // barrier (they are set ready); an Error otherwise.
  bool release_barrier(unsigned threads) {
    const Worker* first_waiting = nullptr;
    unsigned waiting = 0;
    for (unsigned t = 0; t < threads; ++t) {
      const Worker& worker = *workers_[t];
      if (worker.state != ThreadState::waiting) continue;
      ++waiting;
      if (!first_waiting) first_waiting = &worker;
      if (!same_place(worker.barrier, first_waiting->barrier)) {
        fail_block(threads, "threads wait at two different __syncthreads(): thread " +
                                to_string(first_waiting->thread) + " at " + location(first_waiting->barrier) +
                                ", thread " + to_string(worker.thread) + " at " + location(worker.barrier));
      }
    }
    if (waiting == 0) return false;
    if (waiting < threads) {
      fail_block(threads, std::to_string(waiting) + " of " + std::to_string(threads) +
                              " threads wait at the __syncthreads() at " + location(first_waiting->barrier) + " (in " +
                              first_waiting->barrier.function_name() + "), which the other " +
                              std::to_string(threads - waiting) + " ended without reaching");
    }
    for (unsigned t = 0; t < threads; ++t) workers_[t]->state = ThreadState::ready;
    return true;
  }

  static bool same_place(const std::source_location& a, const std::source_location& b) {
    return a.line() == b.line() && a.column() == b.column() && std::string_view(a.file_name()) == b.file_name();
  }

  // Ends the launch with an Error. Threads stopped inside the kernel cannot be resumed or unwound
  // safely, so their fibers are set aside for good and fresh ones take their places.
  [[noreturn]] void fail_block(unsigned threads, const std::string& what, std::exception_ptr cause = nullptr) {
    for (unsigned t = 0; t < threads; ++t) {
      if (workers_[t]->started && workers_[t]->state != ThreadState::ended)
        abandoned_.push_back(std::move(workers_[t]));
    }
    std::string message =
        "kernel launched at " + location(site_->where) + ", block " + to_string(block_index_) + ": " + what;
    if (cause) {
      try {
        std::rethrow_exception(cause);
      } catch (const std::exception& e) {
        message += ": " + std::string(e.what());
      }
    }
    body_ = nullptr;
    throw Error(site_->op, message);
  }

  Worker& worker_at(unsigned t) {
    if (workers_.size() <= t) workers_.resize(t + 1);
    if (!workers_[t]) workers_[t] = make_worker();
    return *workers_[t];
  }

  std::unique_ptr<Worker> make_worker() {
    auto worker = std::make_unique<Worker>();
    Worker* w = worker.get();
#if defined(AXIOM_THREAD_SANITIZER)
    w->tsan_fiber = __tsan_create_fiber(0);
#endif
    w->fiber = context::fiber(std::allocator_arg, RecordedStack{w}, [this, w](context::fiber&& runner) {
      w->to_runner = std::move(runner);
      arrived_on_worker(*w);
      for (;;) {  // one kernel thread per turn; the fiber is reused by the next block
        try {
          (*body_)();
        } catch (const context::detail::forced_unwind&) {
          throw;  // Boost unwinding this fiber's stack
        } catch (...) {
          w->error = std::current_exception();
        }
        w->state = ThreadState::ended;
        switch_to_runner(*w);
      }
      return std::move(w->to_runner);
    });
    return worker;
  }

  // --- switching stacks (and telling the sanitizers) --------------------------------------------
  // ThreadSanitizer: every switch orders what came before it (flags 0), as the fibers take turns.
  void resume(Worker& worker) {
    current_ = &worker;
#if defined(AXIOM_ADDRESS_SANITIZER)
    __sanitizer_start_switch_fiber(&runner_fake_stack_, worker.stack_bottom, worker.stack_size);
#endif
#if defined(AXIOM_THREAD_SANITIZER)
    runner_tsan_fiber_ = __tsan_get_current_fiber();
    __tsan_switch_to_fiber(worker.tsan_fiber, 0);
#endif
    worker.fiber = std::move(worker.fiber).resume();
#if defined(AXIOM_ADDRESS_SANITIZER)
    __sanitizer_finish_switch_fiber(runner_fake_stack_, nullptr, nullptr);
#endif
    current_ = nullptr;
  }

  void switch_to_runner(Worker& worker) {
#if defined(AXIOM_ADDRESS_SANITIZER)
    __sanitizer_start_switch_fiber(&worker.fake_stack, runner_stack_bottom_, runner_stack_size_);
#endif
#if defined(AXIOM_THREAD_SANITIZER)
    __tsan_switch_to_fiber(runner_tsan_fiber_, 0);
#endif
    worker.to_runner = std::move(worker.to_runner).resume();
    arrived_on_worker(worker);
  }

  void arrived_on_worker([[maybe_unused]] Worker& worker) {
#if defined(AXIOM_ADDRESS_SANITIZER)
    __sanitizer_finish_switch_fiber(worker.fake_stack, &runner_stack_bottom_, &runner_stack_size_);
#endif
  }

  std::mutex mutex_;  // one launch at a time, as on the default stream
  std::vector<std::unique_ptr<Worker>> workers_, abandoned_;
  Worker* current_ = nullptr;
  const KernelSite* site_ = nullptr;
  const std::function<void()>* body_ = nullptr;
  dim3 block_index_, block_dim_, grid_dim_;
  ThreadOrder order_ = ThreadOrder::forward;
  std::mt19937_64 random_{0};
  GridStats stats_;
  void* runner_fake_stack_ = nullptr;
  const void* runner_stack_bottom_ = nullptr;
  size_t runner_stack_size_ = 0;
  [[maybe_unused]] void* runner_tsan_fiber_ = nullptr;  // (used under ThreadSanitizer only)
};

GridRunner& runner() {
  static auto* the_runner = new GridRunner;  // never destroyed: its fibers may still hold frames
  return *the_runner;
}

}  // namespace

const dim3& thread_index() { return runner().current().thread; }
const dim3& block_index() { return runner().block_index(); }
const dim3& block_dim() { return runner().block_dim(); }
const dim3& grid_dim() { return runner().grid_dim(); }
void sync_threads(std::source_location where) { runner().wait_at_barrier(where); }
void shuffle_lanes(unsigned mask, int width, const void* mine, void* theirs, size_t bytes, unsigned source_lane,
                   std::source_location where) {
  if (mask != 0xffffffffu || width != 32) {
    throw Error("cuda emulator", "warp shuffles are emulated for the full mask and width 32 only, not mask ", mask,
                " width ", width);
  }
  runner().exchange_with_lane(mine, theirs, bytes, source_lane, where);
}
unsigned lane_index() { return runner().current().linear % 32; }
void sync_warp(unsigned mask, std::source_location where) {
  if (mask != 0xffffffffu)
    throw Error("cuda emulator", "__syncwarp is emulated for the full mask only, not mask ", mask);
  runner().sync_warp(where);
}

void set_thread_order(ThreadOrder order, uint64_t seed) { runner().set_order(order, seed); }
ThreadOrder thread_order() { return runner().order(); }
std::string_view order_name(ThreadOrder order) {
  switch (order) {
    case ThreadOrder::forward: return "forward";
    case ThreadOrder::reverse: return "reverse";
    case ThreadOrder::shuffled: return "shuffled";
  }
  return "?";
}

int64_t most_blocks() { return runner().most_blocks; }
void set_most_blocks(int64_t blocks) {
  if (blocks < 1 || blocks > 65536)
    throw Error("cuda emulator", "most blocks per launch must be in [1, 65536], not ", blocks);
  runner().most_blocks = blocks;
}

int64_t& longest_warp_row_setting() {
  static int64_t length = 1024;
  return length;
}
int64_t longest_warp_row() { return longest_warp_row_setting(); }
void set_longest_warp_row(int64_t length) {
  if (length < 0 || length > 1024)
    throw Error("cuda emulator", "the longest warp row must be in [0, 1024], not ", length);
  longest_warp_row_setting() = length;
}

GridStats grid_stats() { return runner().stats(); }

void check_kernel_pointer(const KernelSite& site, int argument, const void* pointer) {
  if (pointer && !is_device_range(pointer, 0) && !is_mapped_host_range(pointer, 0)) {
    throw Error(site.op, "kernel launched at ", location(site.where), ": argument ", argument, ", the pointer ",
                describe_range(pointer, 0));
  }
}

void run_threads(const KernelSite& site, dim3 grid, dim3 block, const std::function<void()>& thread_body) {
  runner().run(site, grid, block, thread_body);
}

}  // namespace axiom::cuda_emulator
