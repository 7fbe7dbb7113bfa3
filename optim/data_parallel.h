// Data parallelism: N processes, each holding a copy of the model and its own share of every
// batch, take the step that one process would take on the whole batch, because they average
// their gradients before the optimizer runs.
//
//   Communicator& comm = world();                               // core/distributed/communicator.h
//   optim::broadcast_parameters(model.named_parameters(), comm);  // every rank starts from rank 0's weights
//   optim::GradientAverager averager(model.named_parameters(), comm);
//   for (each step) {
//     optimizer.zero_grad();
//     Tensor loss = model.loss(my_share_of_the_batch);            // the mean over this rank's share
//     averager.backward(loss);    // loss.backward(), then every gradient is the mean over the ranks
//     optimizer.step();           // the same gradients, so the same update, on every rank
//   }
//
// How (the design of PyTorch's DistributedDataParallel and Horovod): the parameters, in reverse
// order (backward reaches the last layers first), are packed into buckets of about 4 MiB, one
// dtype per bucket. During backward the engine's GradientReadyHook reports each parameter whose
// gradient is complete; when the last one of a bucket arrives, the bucket's gradients are copied
// into one flat buffer and a non-blocking allreduce of it starts, while backward goes on with the
// layers below. MPI moves data only inside MPI calls, so every report also tests the buckets in
// flight. Buckets start in bucket order on every rank (MPI requires one order of collectives).
// After backward, what has not started starts, every bucket is waited for, and sum / N is written
// back into each gradient. A parameter that got no gradient in this pass sends zeros and keeps
// no gradient. Gradients on a GPU travel through host memory (Debian's Open MPI is not CUDA-aware).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "../core/distributed/communicator.h"
#include "optimizer.h"

namespace axiom::optim {

// Where a data-parallel step's time went (totals since the averager was made).
struct CommunicationStats {
  int64_t steps = 0;                 // backward() or average() calls
  double backward_seconds = 0;       // inside loss.backward() (buckets overlap this)
  double communication_seconds = 0;  // from a step's first bucket starting to its last finishing
  double exposed_seconds = 0;        // after backward returned, until every gradient was averaged
  double bytes = 0;                  // gradient bytes reduced
};

class GradientAverager {
 public:
  static constexpr int64_t kDefaultBucketBytes = int64_t{4} << 20;

  // Every rank must pass the same parameters (names, shapes, dtypes): an Error on every rank if not.
  GradientAverager(NamedParameters parameters, Communicator& comm, int64_t bucket_bytes = kDefaultBucketBytes);
  ~GradientAverager();
  GradientAverager(const GradientAverager&) = delete;
  GradientAverager& operator=(const GradientAverager&) = delete;

  // loss.backward(), with the gradients averaged over the ranks as backward produces them. Every
  // rank must call it in the same step. An exception during backward on one rank leaves the others
  // waiting for its buckets: end the job (axiom's commands call MPI_Abort).
  void backward(const Tensor& loss);
  // Averages the gradients as they are now (after a backward the caller ran itself); no overlap.
  void average();

  int64_t buckets() const { return static_cast<int64_t>(buckets_.size()); }
  const CommunicationStats& stats() const { return stats_; }

 private:
  struct Bucket;
  void on_gradient_ready(const Tensor& leaf);
  void start_ready_buckets();
  void start(Bucket& bucket);
  void test_started();
  void finish();

  NamedParameters parameters_;
  Communicator& comm_;
  std::vector<std::unique_ptr<Bucket>> buckets_;             // in starting order
  std::unordered_map<const TensorImpl*, size_t> bucket_of_;  // parameter -> its bucket
  size_t next_to_start_ = 0;
  bool started_any_ = false;                           // in this pass
  std::chrono::steady_clock::time_point first_start_;  // of this pass's first bucket
  CommunicationStats stats_;
};

// Every rank's parameters take rank `root`'s values (in place).
void broadcast_parameters(const NamedParameters& parameters, Communicator& comm, int root = 0);

}  // namespace axiom::optim
