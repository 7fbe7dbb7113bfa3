// Threads: one setting for oneTBB, whose threads run every kernel, matrix products included.
//
// The count comes from the environment variable AXIOM_NUM_THREADS (default: every core), read
// once when the first parallel loop runs, or from set_num_threads() at any time.
//
// How the matrix libraries share the cores: they do not have threads of their own at work.
// OpenBLAS is told one thread and oneDNN's OpenMP one; a large product is split into bands of rows
// or columns, one per TBB thread, and a batch of small ones is spread over the TBB threads
// (core/cpu/matmul.cpp). So no second pool spins, waiting for work, while the next op runs.
#pragma once

#include <cstdint>
#include <functional>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "sanitizers.h"

namespace axiom::core {

void set_num_threads(int count);  // for the whole process
int num_threads();

#if defined(AXIOM_THREAD_SANITIZER)
// ThreadSanitizer sees none of the hand-offs inside oneTBB (a library built without it), so it
// would report oneTBB's own task passing as races. The ThreadSanitizer build (CI) runs the same
// chunks on plain threads instead: really at once, ordered only by the threads' start and join, so
// that a race between two chunks of one of our kernels is reported, and nothing else.
void run_chunks_on_threads(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);
#endif

// Calls fn(begin, end) on chunks of [0, n) of about `grain` elements (oneTBB splits ranges down to
// between grain/2 and grain), in parallel when there is enough work for two chunks, else once on
// this thread.
template <typename Fn>
void parallel_for(int64_t n, int64_t grain, Fn&& fn) {
  if (n <= 0) return;
  if (n < 2 * grain || num_threads() == 1) {
    fn(int64_t{0}, n);
    return;
  }
#if defined(AXIOM_THREAD_SANITIZER)
  run_chunks_on_threads(n, grain, fn);
#else
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, n, grain),
                    [&](const tbb::blocked_range<int64_t>& r) { fn(r.begin(), r.end()); });
#endif
}

}  // namespace axiom::core
