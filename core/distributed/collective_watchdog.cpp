// The collectives' watchdog (collective_watchdog.h).
#include "core/distributed/collective_watchdog.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/error.h"

namespace axiom::core {

namespace {

constexpr double kDefaultTimeoutSeconds = 600;
constexpr auto kCheckEvery = std::chrono::milliseconds(200);

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

double collective_timeout_seconds() {
  const char* text = std::getenv("AXIOM_COLLECTIVE_TIMEOUT");
  if (text == nullptr) return kDefaultTimeoutSeconds;
  char* end = nullptr;
  const double seconds = std::strtod(text, &end);
  if (end == text || *end != '\0' || !std::isfinite(seconds) || seconds < 0) {
    throw Error("mpi", "AXIOM_COLLECTIVE_TIMEOUT must be a number of seconds >= 0 (0: no limit), got '", text, "'");
  }
  return seconds;
}

CollectiveWatchdog::CollectiveWatchdog(int rank, double timeout_seconds) : rank_(rank), timeout_(timeout_seconds) {
  if (timeout_ > 0) thread_ = std::thread([this] { run(); });
}

CollectiveWatchdog::~CollectiveWatchdog() {
  if (!thread_.joinable()) return;
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  stop_requested_.notify_one();
  thread_.join();
}

CollectiveWatchdog::Watch::Watch(CollectiveWatchdog& dog, const char* call) : dog_(dog) {
  dog_.since_ns_.store(now_ns());
  dog_.call_.store(call);
}

CollectiveWatchdog::Watch::~Watch() { dog_.call_.store(nullptr); }

// Every 200 ms: has the collective under way (if any) waited longer than the timeout?
void CollectiveWatchdog::run() {
  std::unique_lock lock(mutex_);
  while (!stop_requested_.wait_for(lock, kCheckEvery, [this] { return stopping_; })) {
    const char* call = call_.load();
    if (call == nullptr) continue;
    const double waited = static_cast<double>(now_ns() - since_ns_.load()) * 1e-9;
    if (waited > timeout_ && call_.load() == call) give_up(call, waited);
  }
}

void CollectiveWatchdog::give_up(const char* call, double waited) const {
  std::fprintf(
      stderr,
      "axiom: rank %d: %s has waited %.0f s for the other ranks (AXIOM_COLLECTIVE_TIMEOUT=%g): a host or its link may "
      "be lost; ending this rank (--resume goes on from the last checkpoint)\n",
      rank_, call, waited, timeout_);
  std::fflush(stderr);
  std::_Exit(1);
}

}  // namespace axiom::core
