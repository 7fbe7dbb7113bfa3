// `axiom bench allreduce`, launched by mpirun: the time of one in-place MPI allreduce (sum) of a
// float32 buffer of 1 to 64 MiB across the job's ranks, and its bandwidth two ways (the
// conventions of nccl-tests):
//   algorithm bandwidth  bytes / time
//   bus bandwidth        2 (N-1)/N x bytes / time: what each rank sends and receives in a ring
//                        allreduce, comparable with the link's speed whatever N is
// The time is the median over 10 trials, each started together (a barrier) and ended when the
// slowest rank is done (a second barrier). Rank 0 prints.
#include <string>
#include <vector>

#include "apps/bench/bench.h"
#include "core/core.h"
#include "core/launch.h"

namespace axiom::bench {

void bench_allreduce(const Reporter& reporter, Communicator& comm) {
  const int n = comm.size();
  reporter.note("axiom bench allreduce: " + std::to_string(n) + " processes (" + std::to_string(comm.local_size()) +
                " on this machine), " + comm.name() +
                (n == 1 ? "; one process has nothing to exchange: launch with mpirun -np N" : ""));
  for (int64_t mib = 1; mib <= 64; mib *= 2) {
    const int64_t elements = mib * (1 << 20) / 4;
    const core::Tensor buffer = core::ones({elements});
    const double seconds = seconds_per_call(
        [&] {
          comm.barrier();
          comm.allreduce(buffer);
          comm.barrier();
        },
        10, 0);
    const double bytes = static_cast<double>(elements) * 4;
    const std::string name = std::to_string(mib) + "MiB";
    reporter.report({.bench = "allreduce",
                     .name = name + "_time",
                     .unit = "ms",
                     .value = seconds * 1e3,
                     .baseline = {},
                     .baseline_name = {}});
    reporter.report({.bench = "allreduce",
                     .name = name + "_algorithm_bandwidth",
                     .unit = "GB/s",
                     .value = bytes / seconds / 1e9,
                     .baseline = {},
                     .baseline_name = {}});
    reporter.report({.bench = "allreduce",
                     .name = name + "_bus_bandwidth",
                     .unit = "GB/s",
                     .value = 2.0 * (n - 1) / n * bytes / seconds / 1e9,
                     .baseline = {},
                     .baseline_name = {}});
  }
}

}  // namespace axiom::bench
