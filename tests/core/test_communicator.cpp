// The single-process communicator (core/distributed/communicator.h): rank 0 of 1, whose collectives leave
// every tensor as it is, with the same argument checks as MPI's; tests/distributed/ runs the MPI one.
#include "core/distributed/communicator.h"
#include "tests/support/reference.h"

using namespace axiom::core;
using namespace axiom::test;

TEST_CASE("single-process communicator: rank 0 of 1, collectives keep the values") {
  Communicator& comm = single_process();
  CHECK(comm.rank() == 0);
  CHECK(comm.size() == 1);
  CHECK(comm.local_size() == 1);
  CHECK(comm.name() == "single process");
  const Tensor t = from_vector<double>({1, -2, 3}, {3});
  comm.allreduce(t);
  comm.allreduce(t, AllreduceOp::max);
  comm.broadcast(t, 0);
  comm.barrier();
  CHECK(values_of(t) == std::vector<double>{1, -2, 3});
  CHECK(comm.start_allreduce(t)->test());
  check_same_on_every_rank(comm, "anything", "test", "texts");
}

TEST_CASE("single-process communicator: errors") {
  Communicator& comm = single_process();
  check_error([&] { comm.allreduce(zeros({2}, Dtype::uint8)); },
              {"[allreduce] reduces float32, float64 or int64 tensors, not uint8"});
  check_error([&] { comm.broadcast(zeros({2}), 1); }, {"[broadcast] root 1 is not a rank of this job (0 to 0)"});
  check_error(
      [&] {
        comm.start_allreduce(zeros({2, 3}).transpose(0, 1));
      },
      {"[start_allreduce] needs a contiguous CPU tensor"});
  check_error([&] { comm.abort(3); }, {"[abort] the job was aborted with code 3"});
}
