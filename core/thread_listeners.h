// Who else must hear the thread count (core/parallel.h): a backend with a thread pool of its own
// (the CPU backend's OpenBLAS) registers here, so that core/parallel.cpp knows none of them.
#pragma once

namespace axiom::core {

// Calls listener(count) now if the count is already set, and every time it is set after this
// (set_num_threads, or the first num_threads() reading AXIOM_NUM_THREADS).
void listen_to_thread_count(void (*listener)(int count));

}  // namespace axiom::core
