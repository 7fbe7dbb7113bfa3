#include "core/parallel.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <tbb/global_control.h>

#include "core/error.h"

namespace axiom::core {

namespace {
std::mutex settings_mutex;
std::unique_ptr<tbb::global_control> tbb_limit;  // alive as long as the limit should hold
std::atomic<int> thread_count{0};                // 0: not configured yet

void apply(int count) {
  tbb_limit = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism, count);
  thread_count = count;
}

int count_from_environment() {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const char* text = std::getenv("AXIOM_NUM_THREADS");
  if (!text || !*text) return cores;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (!std::isdigit(static_cast<unsigned char>(text[0])) || *end != '\0' || value < 1 || value > 4096) {
    throw Error("AXIOM_NUM_THREADS", "expected a whole number from 1 to 4096, got '", text, "'");
  }
  return static_cast<int>(value);
}
}  // namespace

void set_num_threads(int count) {
  if (count < 1) throw Error("set_num_threads", "the thread count must be at least 1, got ", count);
  std::lock_guard lock(settings_mutex);
  apply(count);
}

int num_threads() {
  if (const int count = thread_count.load()) return count;  // the common case: no lock
  std::lock_guard lock(settings_mutex);
  if (thread_count == 0) apply(count_from_environment());
  return thread_count;
}

#if defined(AXIOM_THREAD_SANITIZER)
// Chunks of at most `grain` elements, dealt round-robin to num_threads() threads (this one is
// thread 0). No atomics or locks between them: only their start and join order anything.
void run_chunks_on_threads(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  const int64_t chunks = (n + grain - 1) / grain;
  const int threads = static_cast<int>(std::min<int64_t>(num_threads(), chunks));
  std::vector<std::exception_ptr> errors(threads);
  auto run_share = [&](int t) {
    try {
      for (int64_t c = t; c < chunks; c += threads) fn(c * grain, std::min(n, (c + 1) * grain));
    } catch (...) {
      errors[t] = std::current_exception();
    }
  };
  std::vector<std::thread> helpers;
  for (int t = 1; t < threads; ++t) helpers.emplace_back(run_share, t);
  run_share(0);
  for (auto& helper : helpers) helper.join();
  for (const auto& error : errors) {
    if (error) std::rethrow_exception(error);
  }
}
#endif

}  // namespace axiom::core
