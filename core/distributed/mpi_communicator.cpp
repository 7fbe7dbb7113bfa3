// The MPI communicator (communicator.h), on plain MPI-3 calls: MPI_Allreduce, MPI_Iallreduce,
// MPI_Bcast, MPI_Barrier, MPI_Abort, and MPI_Comm_split_type for the processes on this machine.
// Built only when CMake finds an MPI library (Debian: libopenmpi-dev).
//
// MPI is initialised by the first world() call in a process started by a launcher, and finalised
// when the process exits normally. Only the thread that called world() may communicate
// (MPI_THREAD_FUNNELED): the training thread; oneTBB's workers never touch MPI.
// Errors come back as return codes (MPI_ERRORS_RETURN) and become axiom::Errors naming the call.
// Every wait for the other ranks is watched (collective_watchdog.h): a rank that waits longer than
// AXIOM_COLLECTIVE_TIMEOUT for a lost host ends, rather than waiting forever.
#include <mpi.h>

#include <climits>
#include <cstdlib>
#include <vector>

#include "core/error.h"
#include "core/distributed/collective_watchdog.h"
#include "core/distributed/communicator.h"

namespace axiom::core {

namespace {

void check(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw Error("mpi", call, " failed: ", std::string(text, length));
}

MPI_Datatype mpi_type(Dtype dtype) {
  switch (dtype) {
    case Dtype::float32: return MPI_FLOAT;
    case Dtype::float64: return MPI_DOUBLE;
    case Dtype::int64: return MPI_INT64_T;
    case Dtype::uint8: return MPI_UINT8_T;
    case Dtype::bfloat16: break;  // (sums of bfloat16 would lose the bits the mode keeps in float32)
  }
  throw Error("mpi", "no MPI type for dtype ", dtype);
}

MPI_Op mpi_op(AllreduceOp op) {
  switch (op) {
    case AllreduceOp::sum: return MPI_SUM;
    case AllreduceOp::min: return MPI_MIN;
    case AllreduceOp::max: return MPI_MAX;
  }
  throw Error("mpi", "unknown reduction");
}

// MPI counts are ints: a buffer of more than INT_MAX elements goes in pieces of at most that many.
template <typename Fn>
void in_pieces(char* data, int64_t count, size_t element_bytes, Fn send) {
  for (int64_t done = 0; done < count; done += INT_MAX) {
    send(data + static_cast<size_t>(done) * element_bytes, static_cast<int>(std::min<int64_t>(INT_MAX, count - done)));
  }
}

using Watch = CollectiveWatchdog::Watch;

class MpiAllreduce final : public PendingCollective {
 public:
  MpiAllreduce(std::vector<MPI_Request> requests, CollectiveWatchdog& watchdog)
      : requests_(std::move(requests)), watchdog_(watchdog) {}
  ~MpiAllreduce() override {
    if (requests_.empty()) return;
    const Watch watch(watchdog_, "MPI_Waitall");
    MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE);
  }
  bool test() override {
    int done = 1;
    if (!requests_.empty())
      check(MPI_Testall(static_cast<int>(requests_.size()), requests_.data(), &done, MPI_STATUSES_IGNORE),
            "MPI_Testall");
    if (done) requests_.clear();
    return done != 0;
  }
  void wait() override {
    if (requests_.empty()) return;
    const Watch watch(watchdog_, "MPI_Waitall");
    check(MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
    requests_.clear();
  }

 private:
  std::vector<MPI_Request> requests_;  // one per piece; empty once finished
  CollectiveWatchdog& watchdog_;
};

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      int provided = 0;
      check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
      std::atexit([] {
        int finalized = 0;
        MPI_Finalized(&finalized);
        if (!finalized) MPI_Finalize();
      });
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    check(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
    check(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
    MPI_Comm node;  // the processes that share this machine's memory
    check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node),
          "MPI_Comm_split_type");
    check(MPI_Comm_size(node, &local_size_), "MPI_Comm_size");
    MPI_Comm_free(&node);
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int length = 0;
    MPI_Get_library_version(version, &length);
    library_ = std::string(version, length);
    library_ = library_.substr(0, library_.find_first_of(",\n"));  // "Open MPI v4.1.4"
    watchdog_ = std::make_unique<CollectiveWatchdog>(rank_, collective_timeout_seconds());
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_size() const override { return local_size_; }
  std::string name() const override { return "MPI (" + library_ + ")"; }
  void barrier() override {
    const Watch watch(*watchdog_, "MPI_Barrier");
    check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
  }
  [[noreturn]] void abort(int code) override {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);  // MPI_Abort does not return; this is for the compiler
  }

 protected:
  void allreduce_buffer(void* data, int64_t count, Dtype dtype, AllreduceOp op) override {
    const Watch watch(*watchdog_, "MPI_Allreduce");
    in_pieces(static_cast<char*>(data), count, dtype_size(dtype), [&](char* piece, int n) {
      check(MPI_Allreduce(MPI_IN_PLACE, piece, n, mpi_type(dtype), mpi_op(op), MPI_COMM_WORLD), "MPI_Allreduce");
    });
  }
  std::unique_ptr<PendingCollective> start_allreduce_buffer(void* data, int64_t count, Dtype dtype,
                                                            AllreduceOp op) override {
    std::vector<MPI_Request> requests;
    in_pieces(static_cast<char*>(data), count, dtype_size(dtype), [&](char* piece, int n) {
      requests.emplace_back();
      check(MPI_Iallreduce(MPI_IN_PLACE, piece, n, mpi_type(dtype), mpi_op(op), MPI_COMM_WORLD, &requests.back()),
            "MPI_Iallreduce");
    });
    return std::make_unique<MpiAllreduce>(std::move(requests), *watchdog_);
  }
  void broadcast_buffer(void* data, int64_t bytes, int root) override {
    const Watch watch(*watchdog_, "MPI_Bcast");
    in_pieces(static_cast<char*>(data), bytes, 1,
              [&](char* piece, int n) { check(MPI_Bcast(piece, n, MPI_BYTE, root, MPI_COMM_WORLD), "MPI_Bcast"); });
  }

 private:
  int rank_ = 0, size_ = 1, local_size_ = 1;
  std::string library_;
  std::unique_ptr<CollectiveWatchdog> watchdog_;
};

}  // namespace

std::unique_ptr<Communicator> start_mpi() { return std::make_unique<MpiCommunicator>(); }

}  // namespace axiom::core
