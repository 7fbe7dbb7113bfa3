// Communicating between the processes of a data-parallel job: rank, size, allreduce, broadcast.
//
//   core::Communicator& comm = core::world();   // MPI under mpirun, this process alone otherwise
//   core::Tensor g = ...;                        // the same shape on every rank
//   comm.allreduce(g);                           // every rank now holds the sum over all ranks
//   comm.broadcast(weights, /*root=*/0);         // every rank now holds rank 0's values
//
// Two implementations: `single_process()` (rank 0 of 1: every collective leaves the tensor as it
// is) and MPI (core/distributed/mpi_communicator.cpp, built when CMake finds an MPI library; written against
// plain MPI-3 calls, so Open MPI and MPICH both work). A later one (NCCL, say) only has to move
// contiguous buffers: the public calls below turn any tensor into one and back.
//
// Tensors may be float32, float64 or int64, of any shape and strides (a transposed or sliced view
// is reduced through a contiguous copy and written back into the view), on any device (a device
// tensor travels through host memory: Debian's Open MPI is not CUDA-aware). Every rank must make
// the same collective calls in the same order with the same shapes and dtypes, as MPI requires.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "../tensor.h"

namespace axiom::core {

enum class AllreduceOp { sum, min, max };

// A collective that is under way (a non-blocking allreduce). MPI libraries such as Open MPI have
// no progress thread: the data moves while some rank is inside an MPI call, so the caller calls
// test() now and then (the gradient averager does it between backward rules).
class PendingCollective {
 public:
  virtual ~PendingCollective() = default;
  virtual bool test() = 0;  // moves it along; true once it has finished
  virtual void wait() = 0;  // returns when it has finished
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;          // 0 .. size() - 1
  virtual int size() const = 0;          // processes in the job
  virtual int local_size() const = 0;    // processes of the job on this machine
  virtual std::string name() const = 0;  // "single process", "MPI (Open MPI v4.1.4)"

  // In place, on every rank: the element-wise sum (min, max) of `tensor` over all ranks.
  void allreduce(const Tensor& tensor, AllreduceOp op = AllreduceOp::sum);
  // Starts an allreduce of a contiguous CPU tensor, in place, and returns at once: the tensor holds
  // the result once the returned collective has finished; it must not be touched before.
  std::unique_ptr<PendingCollective> start_allreduce(const Tensor& contiguous_cpu, AllreduceOp op = AllreduceOp::sum);
  // In place: every rank's `tensor` takes the values of rank `root`'s.
  void broadcast(const Tensor& tensor, int root = 0);
  // Waits until every rank has called it.
  virtual void barrier() = 0;
  // Ends every process of the job with `code` (MPI_Abort): for an error on one rank, which the
  // others, waiting in a collective, would otherwise wait for forever. With a single process it
  // throws an Error instead (there is nothing else to end).
  [[noreturn]] virtual void abort(int code) = 0;

 protected:
  // The transport: `count` elements of `dtype` in contiguous host memory.
  virtual void allreduce_buffer(void* data, int64_t count, Dtype dtype, AllreduceOp op) = 0;
  virtual std::unique_ptr<PendingCollective> start_allreduce_buffer(void* data, int64_t count, Dtype dtype,
                                                                    AllreduceOp op) = 0;
  virtual void broadcast_buffer(void* data, int64_t bytes, int root) = 0;
};

// Rank 0 of 1.
Communicator& single_process();

// The job this process belongs to. The first call decides: started by mpirun (or srun, or any
// launcher that sets the usual PMI/Open MPI variables) and built with MPI, it initialises MPI; not
// started by a launcher, it is single_process(). Started by a launcher with more than one process
// in a build without MPI, it is an Error that says so, rather than N copies training alone.
Communicator& world();
bool world_started();  // whether world() has been called (and MPI initialised, if it was used)
bool built_with_mpi();
// How many processes the launcher says the job has (1 when no launcher started this process).
int launched_processes();

// Rank 0 broadcasts a 64-bit fingerprint of `text`; every rank compares it with its own. If any
// differs, every rank throws an Error from `op` that names `what` and the ranks that differ: for
// flags and configs that every rank must share.
void check_same_on_every_rank(Communicator& comm, const std::string& text, const char* op, const char* what);

}  // namespace axiom::core

// The layers above autograd (optim, models, apps) write these names for the ideas above.
namespace axiom {
using core::AllreduceOp;
using core::Communicator;
using core::single_process;
using core::world;
}  // namespace axiom
