// Data-parallel training, run by every rank of `mpirun -np N` (N = 1, 2, 3). Each rank also
// trains the same run alone (single_process()), so each test compares N processes with one
// in a single program: the losses and every weight after several steps (float64: 1e-12; float32:
// a tight tolerance), with dropout on and a channel drawn per example; bitwise-identical weights
// on every rank after every step; two runs at one N bitwise identical; a run saved at one N and
// resumed at another; a model on the (emulated) GPU; distributed evaluation; and the gradient
// averager on its own.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "models/models.h"
#include "tests/support/reference.h"
#include "tests/support/emulated_cuda.h"
#include "tests/support/tiny_models.h"
#include "autograd/internal.h"

using namespace axiom;
namespace fs = std::filesystem;
using axiom::test::check_error;
using axiom::test::values_of;

namespace {

Communicator& comm() { return world(); }

// Two channels (a channel drawn per example) and dropout (masks drawn per example): the random
// numbers that must not depend on how the batch is split.
using axiom::test::two_channel_config;

// A batch of 6: 1, 2 and 3 ranks divide it. A large rate, so the weights move far from zero.
models::TrainingOptions batches_of_six() {
  models::TrainingOptions o;
  o.batch_size = 6, o.lr = 1e-2, o.warmup_steps = 2, o.seed = 3, o.max_grad_norm = 1.0;
  return o;
}

Tensor images() {
  Generator gen(42);
  return Tensor(core::randint({14, 2, 3, 4}, 0, 256, gen, Dtype::uint8));
}

std::vector<std::vector<double>> weights_of(models::Trainer& t) {
  std::vector<std::vector<double>> all;
  for (const auto& [name, p] : t.model().named_parameters()) all.push_back(values_of(core_tensor(p)));
  return all;
}

// The largest |a - b| / (1 + |b|) over every weight.
double weight_difference(models::Trainer& a, models::Trainer& b) {
  const auto wa = weights_of(a), wb = weights_of(b);
  REQUIRE(wa.size() == wb.size());
  double worst = 0;
  for (size_t i = 0; i < wa.size(); ++i) {
    for (size_t j = 0; j < wa[i].size(); ++j)
      worst = std::max(worst, std::abs(wa[i][j] - wb[i][j]) / (1 + std::abs(wb[i][j])));
  }
  return worst;
}

// Whether every rank holds exactly rank 0's weights.
bool same_weights_on_every_rank(models::Trainer& t) {
  int64_t differs = 0;
  for (const auto& [name, p] : t.model().named_parameters()) {
    const core::Tensor root = core_tensor(p).clone();
    comm().broadcast(root, 0);
    if (values_of(root) != values_of(core_tensor(p))) differs = 1;
  }
  const core::Tensor any = core::from_vector<int64_t>({differs});
  comm().allreduce(any);
  return any.item() == 0;
}

// A directory every rank names the same (rank 0's process id), removed by rank 0 at the end.
struct SharedDir {
  fs::path path;
  SharedDir() {
    const core::Tensor id = core::from_vector<int64_t>({static_cast<int64_t>(::getpid())});
    comm().broadcast(id, 0);
    path = fs::temp_directory_path() / "axiom_distributed_test";
    path += std::to_string(static_cast<int64_t>(id.item()));
  }
  ~SharedDir() {
    comm().barrier();
    std::error_code ignored;
    if (comm().rank() == 0) fs::remove_all(path, ignored);
  }
};

// Adam divides each gradient by its running size, so a rounding difference in a gradient near zero
// moves a weight by far more than the difference itself: weights get a looser bound than losses.
void check_matches_one_process(Dtype dtype, double loss_tolerance, double weight_tolerance) {
  const models::Placement parallel{.dtype = dtype, .communicator = &comm()};
  const models::Placement alone{.dtype = dtype};
  models::Trainer n_ranks(two_channel_config(), batches_of_six(), images(), parallel);
  models::Trainer one(two_channel_config(), batches_of_six(), images(), alone);
  const auto initial = weights_of(one);
  for (int step = 0; step < 4; ++step) {  // 4 steps of 6 out of 14 images: an epoch boundary
    const double bits = n_ranks.step(), bits_alone = one.step();
    CHECK(std::abs(bits - bits_alone) <= loss_tolerance * bits_alone);
    CHECK(weight_difference(n_ranks, one) <= weight_tolerance);
    CHECK(same_weights_on_every_rank(n_ranks));
  }
  CHECK(weights_of(one) != initial);  // (not trivially: the weights moved)
}

}  // namespace

TEST_CASE("data parallel: N processes take the single-process steps (float64)") {
  check_matches_one_process(Dtype::float64, 1e-12, 1e-12);
}

TEST_CASE("data parallel: N processes take the single-process steps (float32)") {
  check_matches_one_process(Dtype::float32, 2e-6, 1e-4);
}

TEST_CASE("data parallel: a model on a GPU (emulated) averages its gradients through host memory") {
  // The CUDA backend's kernels on the CPU emulator (core/cuda/emulator/); float64, so that the
  // only differences from the CPU are the kernels' order of sums.
  const axiom::test::ScopedEmulatedCuda emulated;
  const models::Placement on_gpus{.device = Device::cuda(), .dtype = Dtype::float64, .communicator = &comm()};
  models::Trainer n_gpus(two_channel_config(), batches_of_six(), images(), on_gpus);
  models::Trainer one_cpu(two_channel_config(), batches_of_six(), images(), {.dtype = Dtype::float64});
  for (int step = 0; step < 2; ++step) CHECK(std::abs(n_gpus.step() - one_cpu.step()) <= 1e-10);
  CHECK(n_gpus.model().device() == Device::cuda());
  CHECK(weight_difference(n_gpus, one_cpu) <= 1e-10);
  CHECK(same_weights_on_every_rank(n_gpus));
  axiom::test::report_memory_faults();
}

TEST_CASE("data parallel: two runs at the same N are bitwise identical") {
  const models::Placement parallel{.communicator = &comm()};
  models::Trainer first(two_channel_config(), batches_of_six(), images(), parallel);
  models::Trainer second(two_channel_config(), batches_of_six(), images(), parallel);
  for (int step = 0; step < 3; ++step) CHECK(first.step() == second.step());
  CHECK(weights_of(first) == weights_of(second));
}

TEST_CASE("data parallel: a run saved at N processes resumes at 1, and one saved at 1 resumes at N") {
  const models::Placement parallel{.dtype = Dtype::float64, .communicator = &comm()};
  const models::Placement alone{.dtype = Dtype::float64};
  models::Trainer straight(two_channel_config(), batches_of_six(), images(), alone);
  for (int step = 0; step < 6; ++step) straight.step();

  const SharedDir dir;
  {
    models::Trainer first_half(two_channel_config(), batches_of_six(), images(), parallel);
    for (int step = 0; step < 3; ++step) first_half.step();
    first_half.save((dir.path / "at_n").string());  // rank 0 writes; every rank returns once it is written
  }
  models::Trainer resumed_alone(models::read_checkpoint((dir.path / "at_n").string()), images(), alone);
  CHECK(resumed_alone.steps_done() == 3);
  for (int step = 0; step < 3; ++step) resumed_alone.step();
  CHECK(weight_difference(resumed_alone, straight) <= 1e-12);

  comm().barrier();  // every rank has read "at_n" before rank 0 writes the next run beside it
  {
    models::Trainer first_half(two_channel_config(), batches_of_six(), images(), alone);
    for (int step = 0; step < 3; ++step) first_half.step();
    if (comm().rank() == 0) first_half.save((dir.path / "at_1").string());
  }
  comm().barrier();
  models::Trainer resumed_at_n(models::read_checkpoint((dir.path / "at_1").string()), images(), parallel);
  for (int step = 0; step < 3; ++step) resumed_at_n.step();
  CHECK(weight_difference(resumed_at_n, straight) <= 1e-12);
  CHECK(same_weights_on_every_rank(resumed_at_n));
}

TEST_CASE("data parallel: distributed evaluation equals one process's") {
  Generator gen(8);
  models::AxialTransformer model(two_channel_config(), gen);
  for (const auto& [name, p] : model.named_parameters()) {  // non-zero weights everywhere, so that every image counts
    core::copy_into(core::randn(p.shape(), gen), core_tensor(p));
  }
  const Tensor test_images = images().narrow(0, 0, 7);  // batches of 2: 4 batches, split unevenly over 3 ranks
  const models::Likelihood alone = models::evaluate_images(model, test_images, 2);
  const models::Likelihood split = models::evaluate_images(model, test_images, 2, {}, comm());
  CHECK(split.count == alone.count);
  CHECK(std::abs(split.nats - alone.nats) <= 1e-12 * alone.nats);
}

TEST_CASE("data parallel: a batch that the ranks cannot share evenly is an Error naming both numbers") {
  models::TrainingOptions options = batches_of_six();
  options.batch_size = 4;
  if (comm().size() == 3) {
    check_error([&] { models::Trainer(two_channel_config(), options, images(), {.communicator = &comm()}); },
                {"[train] the batch of 4 images cannot be split evenly over 3 processes"});
  } else {
    CHECK_NOTHROW(models::Trainer(two_channel_config(), options, images(), {.communicator = &comm()}));
  }
}

TEST_CASE("gradient averager: every gradient becomes the mean over the ranks, in any bucket size") {
  // Rank r's gradient of parameter k is values (r + 1) * (k + 1) * [1, 2, ...]: the mean is known.
  // One parameter gets no gradient: it sends zeros and keeps none.
  const int n = comm().size();
  for (const int64_t bucket_bytes : {int64_t{8}, int64_t{100}, optim::GradientAverager::kDefaultBucketBytes}) {
    optim::NamedParameters parameters;
    for (int k = 0; k < 5; ++k) {
      parameters.emplace_back(std::string(1, static_cast<char>('a' + k)),
                              Tensor(core::zeros({3, k + 1}, Dtype::float64), true));
    }
    parameters.emplace_back("without_gradient", Tensor(core::zeros({2}, Dtype::float64), true));
    optim::GradientAverager averager(parameters, comm(), bucket_bytes);
    Tensor loss = Tensor(core::zeros({}, Dtype::float64));
    for (int k = 0; k < 5; ++k) {
      const core::Tensor weights = core::mul(core::arange(1, 3.0 * (k + 1) + 1, 1, Dtype::float64).reshape({3, k + 1}),
                                             static_cast<double>((comm().rank() + 1) * (k + 1)));
      loss = add(loss, sum(mul(parameters[static_cast<size_t>(k)].second, Tensor(weights))));
    }
    averager.backward(loss);
    for (int k = 0; k < 5; ++k) {
      const core::Tensor mean =
          core::mul(core::arange(1, 3.0 * (k + 1) + 1, 1, Dtype::float64).reshape({3, k + 1}), (k + 1) * (n + 1) / 2.0);
      axiom::test::check_close(core_tensor(parameters[static_cast<size_t>(k)].second.grad()), values_of(mean), 1e-15,
                               0);
    }
    CHECK(!parameters.back().second.grad().defined());
    CHECK(averager.stats().steps == (n > 1 ? 1 : 0));
    CHECK(averager.buckets() >= 1);
    if (bucket_bytes == 8) CHECK(averager.buckets() == 6);  // one parameter per bucket
  }
  const Tensor shared(core::zeros({2}), true);
  check_error(
      [&] {
        optim::GradientAverager(optim::NamedParameters{{"w", shared}, {"tied", shared}}, comm());
      },
      {"[GradientAverager] the parameter 'w' is listed twice"});
}
