// Gradient averaging across the ranks of a data-parallel job (data_parallel.h).
#include "optim/data_parallel.h"

#include <chrono>
#include <sstream>

#include "core/error.h"
#include "core/factory.h"
#include "core/launch.h"
#include "autograd/internal.h"

namespace axiom::optim {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// "name shape dtype" of every parameter: what must agree on every rank.
std::string describe(const NamedParameters& parameters) {
  std::ostringstream out;
  for (const auto& [name, p] : parameters) {
    out << name << ' ';
    axiom::detail::append(out, p.shape());
    out << ' ' << p.dtype() << '\n';
  }
  return out.str();
}

}  // namespace

struct GradientAverager::Bucket {
  std::vector<size_t> members;   // indices into parameters_, in the order they sit in `flat`
  std::vector<int64_t> offsets;  // where each member starts in `flat`
  core::Tensor flat;             // [elements] on the CPU, the members' dtype (none in a process alone: nothing to send)
  size_t ready = 0;              // members whose gradient is complete in this pass
  std::unique_ptr<core::PendingCollective> pending;  // the allreduce under way, if started
  bool finished = false;                             // allreduce done in this pass
};

GradientAverager::GradientAverager(NamedParameters parameters, Communicator& comm, int64_t bucket_bytes)
    : parameters_(std::move(parameters)), comm_(comm) {
  if (bucket_bytes <= 0) throw Error("GradientAverager", "bucket_bytes must be positive, got ", bucket_bytes);
  core::check_same_on_every_rank(comm_, describe(parameters_), "GradientAverager",
                                 "models (parameter names, shapes or dtypes)");
  // Buckets from the last parameter to the first, each of one dtype and about bucket_bytes.
  std::unique_ptr<Bucket> bucket;
  int64_t elements = 0;
  auto close = [&] {
    if (!bucket) return;
    if (comm_.size() > 1) bucket->flat = core::zeros({elements}, parameters_[bucket->members[0]].second.dtype());
    buckets_.push_back(std::move(bucket));
    elements = 0;
  };
  for (size_t i = parameters_.size(); i-- > 0;) {
    const Tensor& p = parameters_[i].second;
    const bool other_dtype = bucket && parameters_[bucket->members[0]].second.dtype() != p.dtype();
    if (bucket && (other_dtype || elements * static_cast<int64_t>(dtype_size(p.dtype())) >= bucket_bytes)) close();
    if (!bucket) bucket = std::make_unique<Bucket>();
    bucket->members.push_back(i);
    bucket->offsets.push_back(elements);
    if (!bucket_of_.emplace(p.impl().get(), buckets_.size()).second) {  // its gradient would be averaged twice
      throw Error("GradientAverager", "the parameter '", parameters_[i].first,
                  "' is listed twice (under another name too)");
    }
    elements += p.numel();
  }
  close();
}

GradientAverager::~GradientAverager() = default;

void GradientAverager::backward(const Tensor& loss) {
  if (comm_.size() == 1) {
    loss.backward();
    return;
  }
  const Clock::time_point began = Clock::now();
  {
    const GradientReadyHook hook([this](const Tensor& leaf) { on_gradient_ready(leaf); });
    loss.backward();
  }
  stats_.backward_seconds += seconds_since(began);
  finish();
}

void GradientAverager::average() {
  if (comm_.size() == 1) return;
  finish();
}

void GradientAverager::on_gradient_ready(const Tensor& leaf) {
  const auto found = bucket_of_.find(leaf.impl().get());
  if (found == bucket_of_.end()) return;  // a leaf that is not one of our parameters
  Bucket& bucket = *buckets_[found->second];
  if (++bucket.ready == bucket.members.size()) start_ready_buckets();
  test_started();
}

// Starts, in bucket order, every bucket whose gradients are all complete.
void GradientAverager::start_ready_buckets() {
  while (next_to_start_ < buckets_.size() &&
         buckets_[next_to_start_]->ready == buckets_[next_to_start_]->members.size()) {
    start(*buckets_[next_to_start_++]);
  }
}

// Packs the bucket's gradients (zeros where there is none) into its flat buffer and starts the allreduce.
void GradientAverager::start(Bucket& bucket) {
  if (!started_any_) first_start_ = Clock::now(), started_any_ = true;
  for (size_t k = 0; k < bucket.members.size(); ++k) {
    const Tensor grad = parameters_[bucket.members[k]].second.grad();
    const core::Tensor slot = bucket.flat.narrow(0, bucket.offsets[k], parameters_[bucket.members[k]].second.numel());
    if (grad.defined()) {
      core::copy_into(core_tensor(grad).reshape({-1}).to(Device::cpu()), slot);
    } else {
      core::copy_into(core::zeros(slot.shape(), slot.dtype()), slot);
    }
  }
  bucket.pending = comm_.start_allreduce(bucket.flat);
  stats_.bytes += static_cast<double>(bucket.flat.numel() * static_cast<int64_t>(dtype_size(bucket.flat.dtype())));
}

void GradientAverager::test_started() {
  for (size_t b = 0; b < next_to_start_; ++b) {
    Bucket& bucket = *buckets_[b];
    if (!bucket.finished) bucket.finished = bucket.pending->test();
  }
}

// Starts what is left, waits for every bucket and writes sum / N into each gradient; ready for the next pass.
void GradientAverager::finish() {
  const Clock::time_point finishing = Clock::now();
  while (next_to_start_ < buckets_.size()) start(*buckets_[next_to_start_++]);
  const double scale = 1.0 / comm_.size();
  for (auto& bucket : buckets_) {
    bucket->pending->wait();
    for (size_t k = 0; k < bucket->members.size(); ++k) {
      const Tensor& p = parameters_[bucket->members[k]].second;
      if (!p.grad().defined()) continue;
      const core::Tensor mean = core::mul(bucket->flat.narrow(0, bucket->offsets[k], p.numel()), scale);
      core::copy_into(mean.reshape(p.shape()).to(p.grad().device()), core_tensor(p.grad()));
    }
    bucket->pending.reset();
    bucket->ready = 0;
    bucket->finished = false;
  }
  stats_.communication_seconds += seconds_since(first_start_);
  stats_.exposed_seconds += seconds_since(finishing);
  ++stats_.steps;
  next_to_start_ = 0;
  started_any_ = false;
}

void broadcast_parameters(const NamedParameters& parameters, Communicator& comm, int root) {
  for (const auto& [name, p] : parameters) comm.broadcast(core_tensor(p), root);
}

}  // namespace axiom::optim
