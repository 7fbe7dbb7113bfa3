// The communicator, run by every rank of `mpirun -np N` (N = 1, 2, 3): allreduce (sum, min, max)
// and broadcast of float32, float64 and int64 tensors, contiguous or not; the non-blocking
// allreduce; the check that every rank got the same text; and the errors.
#include <doctest/doctest.h>

#include <cstdlib>

#include "core/core.h"
#include "core/launch.h"
#include "core/distributed/communicator.h"
#include "tests/support/reference.h"

using namespace axiom;
using namespace axiom::core;
using axiom::test::check_error;
using axiom::test::values_of;

namespace {

Communicator& comm() { return world(); }

// Rank r's values: element i is (i + 1) * (r + 1) - 3 r (rank-dependent and of both signs).
double value_on(int rank, int64_t i) { return static_cast<double>((i + 1) * (rank + 1) - 3 * rank); }

Tensor values_on(int rank, const Shape& shape, Dtype dtype) {
  std::vector<double> v(static_cast<size_t>(numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = value_on(rank, static_cast<int64_t>(i));
  return from_vector<double>(v, shape).to(dtype);
}

// What an allreduce of values_on(every rank) gives, element by element.
std::vector<double> expected(AllreduceOp op, int64_t count) {
  std::vector<double> out(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    double acc = value_on(0, i);
    for (int r = 1; r < comm().size(); ++r) {
      const double v = value_on(r, i);
      acc = op == AllreduceOp::sum ? acc + v : op == AllreduceOp::min ? std::min(acc, v) : std::max(acc, v);
    }
    out[static_cast<size_t>(i)] = acc;
  }
  return out;
}

}  // namespace

TEST_CASE("communicator: the job as mpirun started it") {
  CHECK(comm().size() == launched_processes());
  CHECK(comm().rank() >= 0);
  CHECK(comm().rank() < comm().size());
  // the ranks on this host: all of them on one machine, one per host of the multihost tests'
  // cluster (tests/distributed/cluster.sh), as the launcher counted them
  const char* on_this_host = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  CHECK(comm().local_size() == (on_this_host ? std::atoi(on_this_host) : comm().size()));
  CHECK(built_with_mpi());
  MESSAGE("rank ", comm().rank(), " of ", comm().size(), " over ", comm().name());
}

TEST_CASE("communicator: allreduce of every dtype and reduction") {
  for (const Dtype dtype : {Dtype::float32, Dtype::float64, Dtype::int64}) {
    for (const AllreduceOp op : {AllreduceOp::sum, AllreduceOp::min, AllreduceOp::max}) {
      CAPTURE(dtype);
      CAPTURE(static_cast<int>(op));
      const Tensor t = values_on(comm().rank(), {2, 5}, dtype);
      comm().allreduce(t, op);
      CHECK(values_of(t) == expected(op, 10));
      CHECK(t.dtype() == dtype);
    }
  }
}

TEST_CASE("communicator: allreduce and broadcast write through views") {
  // A transposed view and a strided slice: reduced through a copy, written back into the view;
  // the elements outside the view are untouched.
  const Tensor base = values_on(comm().rank(), {4, 6}, Dtype::float64);
  const Tensor before = base.clone();
  const Tensor view = base.slice(1, 1, 6, 2).transpose(0, 1);  // [3, 4], columns 1, 3, 5
  REQUIRE(!view.is_contiguous());
  comm().allreduce(view);
  const std::vector<double> all = expected(AllreduceOp::sum, 24);
  for (int64_t row = 0; row < 4; ++row) {
    for (int64_t column = 0; column < 6; ++column) {
      const double want = column % 2 == 1 ? all[static_cast<size_t>(row * 6 + column)] : before.at({row, column});
      CHECK(base.at({row, column}) == want);
    }
  }
  const Tensor other = values_on(comm().rank(), {5, 3}, Dtype::int64);
  const Tensor column = other.select(1, 2);  // stride 3
  const int root = comm().size() - 1;
  comm().broadcast(column, root);
  for (int64_t row = 0; row < 5; ++row) {
    CHECK(other.at({row, 2}) == value_on(root, row * 3 + 2));
    CHECK(other.at({row, 0}) == value_on(comm().rank(), row * 3));
  }
}

TEST_CASE("communicator: broadcast of every dtype from the first and the last rank") {
  for (const Dtype dtype : {Dtype::float32, Dtype::float64, Dtype::int64, Dtype::uint8}) {
    for (const int root : {0, comm().size() - 1}) {
      const Tensor t = values_on(comm().rank(), {7}, Dtype::float64).to(dtype == Dtype::uint8 ? Dtype::float64 : dtype);
      const Tensor sent = dtype == Dtype::uint8 ? core::full({7}, 10.0 + comm().rank(), Dtype::uint8) : t;
      comm().broadcast(sent, root);
      if (dtype == Dtype::uint8) {
        CHECK(values_of(sent) == std::vector<double>(7, 10.0 + root));
      } else {
        CHECK(values_of(sent) == values_of(values_on(root, {7}, dtype)));
      }
    }
  }
}

TEST_CASE("communicator: a non-blocking allreduce finishes with the blocking one's result") {
  const Tensor big = values_on(comm().rank(), {1 << 16}, Dtype::float32);
  const auto pending = comm().start_allreduce(big);
  while (!pending->test()) {
  }
  pending->wait();  // finished: returns at once
  CHECK(values_of(big) == expected(AllreduceOp::sum, 1 << 16));
}

TEST_CASE("communicator: what every rank must agree on") {
  check_same_on_every_rank(comm(), "the same text", "test", "texts");
  if (comm().size() > 1) {
    const std::string mine = comm().rank() == 0 ? "rank 0's text" : "another text";
    const std::string ranks = comm().size() == 2 ? "rank 1 differs" : "ranks 1, 2 differ";
    check_error(
        [&] { check_same_on_every_rank(comm(), mine, "test", "texts"); },
        {"[test] the ", std::to_string(comm().size()) + " processes were started with different texts: ", ranks});
  }
}

TEST_CASE("communicator: errors name the call and the values") {
  check_error([&] { comm().allreduce(core::zeros({3}, Dtype::uint8)); },
              {"[allreduce] reduces float32, float64 or int64 tensors, not uint8"});
  check_error([&] { comm().allreduce(Tensor()); }, {"[allreduce] the tensor is undefined"});
  check_error([&] { comm().broadcast(core::zeros({3}), comm().size()); },
              {"[broadcast] root ", std::to_string(comm().size()) + " is not a rank of this job"});
  check_error(
      [&] {
        comm().start_allreduce(core::zeros({3, 2}).transpose(0, 1));
      },
      {"[start_allreduce] needs a contiguous CPU tensor"});
}
