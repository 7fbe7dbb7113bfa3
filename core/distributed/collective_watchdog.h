// A watchdog for the collectives of a job of several processes. A collective waits for every rank;
// when a host is lost, or its link cut, the others may never hear of it (no connection closes) and
// would wait forever. The watchdog, a thread of its own, ends a rank whose collective has waited
// longer than AXIOM_COLLECTIVE_TIMEOUT seconds (default 600; 0: never), saying so on stderr:
//
//   axiom: rank 2: MPI_Allreduce has waited 8 s for the other ranks (AXIOM_COLLECTIVE_TIMEOUT=8):
//   a host or its link may be lost; ending this rank (--resume goes on from the last checkpoint)
//
// The rank ends with _Exit(1), from the watchdog's thread (it calls no MPI function: under
// MPI_THREAD_FUNNELED only the training thread may); the launcher then ends the job's other ranks.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

namespace axiom::core {

// AXIOM_COLLECTIVE_TIMEOUT in seconds: 600 when unset; an Error naming it when it is not a
// number >= 0.
double collective_timeout_seconds();

class CollectiveWatchdog {
 public:
  CollectiveWatchdog(int rank, double timeout_seconds);  // no thread when the timeout is 0
  ~CollectiveWatchdog();
  CollectiveWatchdog(const CollectiveWatchdog&) = delete;
  CollectiveWatchdog& operator=(const CollectiveWatchdog&) = delete;

  // Marks `call` as waiting from now until the Watch is destroyed (one at a time: the training thread's).
  class Watch {
   public:
    Watch(CollectiveWatchdog& dog, const char* call);
    ~Watch();
    Watch(const Watch&) = delete;
    Watch& operator=(const Watch&) = delete;

   private:
    CollectiveWatchdog& dog_;
  };

 private:
  void run();
  [[noreturn]] void give_up(const char* call, double waited) const;

  const int rank_;
  const double timeout_;
  std::atomic<const char*> call_{nullptr};  // the collective under way, or none
  std::atomic<int64_t> since_ns_{0};        // when it began (steady clock)
  std::mutex mutex_;
  std::condition_variable stop_requested_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace axiom::core
