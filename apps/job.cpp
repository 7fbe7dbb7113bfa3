// Joining a data-parallel job (commands.h): one command line on every rank, and threads per rank.
#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "apps/commands.h"
#include "core/parallel.h"

namespace axiom::apps {

namespace {

// Cores this process may run on: a launcher may have bound it to a few (Open MPI binds each of
// one or two ranks to a core of its own).
int cores_allowed() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace

Communicator& join_job(int argc, char** argv, bool threads_given) {
  Communicator& comm = world();
  if (comm.size() == 1) return comm;
  std::string command_line;
  for (int i = 1; i < argc; ++i) command_line += std::string(argv[i]) + '\n';
  core::check_same_on_every_rank(comm, command_line, "axiom", "command lines");
  if (!threads_given && std::getenv("AXIOM_NUM_THREADS") == nullptr) {
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    core::set_num_threads(std::max(1, std::min(cores_allowed(), cores / comm.local_size())));
  }
  return comm;
}

std::string rank_prefix() {
  if (!core::world_started() || world().size() == 1) return "";
  return "rank " + std::to_string(world().rank()) + " of " + std::to_string(world().size()) + ": ";
}

}  // namespace axiom::apps
