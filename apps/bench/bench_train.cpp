// `axiom bench train --config tiny|small|medium`: one full training step of the Axial Transformer
// (forward, backward, Adam) on 28 x 28 images, as `axiom train` runs it.
//
// Under mpirun the batch is the global one, split over the ranks, and the figures are rank 0's (the
// memory: one process's), plus where the step's communication went (optim::CommunicationStats):
// from the first gradient bucket's allreduce starting to the last one finishing (mostly hidden
// behind backward), and the exposed part, spent waiting after backward returned.
//
// Figures: the median step time after two warm-up steps, images per second, the peak resident
// memory while stepping (the process's, with the allocator's cache of freed buffers) and the peak
// of the bytes held by live tensors alone (next to models/training/memory_budget.h's estimate of it), split
// into parameters, the optimizer's state, gradients and the activations the forward pass saves for
// backward; and the achieved GFLOP/s next to the limit of a CPU step: its products at the best
// rate of OpenBLAS and oneDNN on each of their shapes, timed in the same run (apps/bench/products.h).
//
// FLOPs are counted by the model itself: the step run on the shape-only device, which counts the
// matrix products' and the attention kernels' arithmetic, forward and backward (models/training/cost.h,
// core/meta/meta.h; a multiply-add counts two). apps/bench/torch_reference.py counts the same
// products from a formula of the architecture, three times the forward pass's.
#include <ctime>
#include <fstream>
#include <optional>
#include <string>

#include "apps/bench/bench.h"
#include "apps/bench/products.h"
#include "apps/commands.h"
#include "core/core.h"
#include "core/launch.h"
#include "models/models.h"
#include "autograd/profiler.h"
#include "core/cpu/vector_math.h"

namespace axiom::bench {

namespace {

// Peak resident memory (VmHWM) of this process, in bytes; reset_peak_memory() restarts it from the
// current size (Linux: writing 5 to /proc/self/clear_refs).
double peak_memory_bytes() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) * 1024;  // "VmHWM:   123456 kB"
  }
  return 0;
}
void reset_peak_memory() { std::ofstream("/proc/self/clear_refs") << "5"; }

// The step's products at the best rate of OpenBLAS and oneDNN on each of their shapes, timed now
// (apps/bench/products.h): the limit of a CPU step, in a process of its own (a data-parallel job's
// ranks would time theirs while the others run).
std::optional<ProductsLimit> products_limit(Device device, const Communicator& comm, const models::Cost& cost) {
  if (device != Device::cpu() || comm.size() > 1) return std::nullopt;
  return limit_of(time_products(cost.products));
}

// A data-parallel job's communication per step, between two readings of the trainer's counters
// (averaged over the timed steps and the one warm-up of seconds_per_call).
template <typename Figure>
void report_communication(const Figure& figure, const optim::CommunicationStats& before,
                          const optim::CommunicationStats& after, double step_seconds) {
  const double steps = static_cast<double>(after.steps - before.steps);
  figure("communication_per_step", "s", (after.communication_seconds - before.communication_seconds) / steps);
  figure("exposed_communication_per_step", "s", (after.exposed_seconds - before.exposed_seconds) / steps);
  figure("exposed_communication_share", "%",
         100 * (after.exposed_seconds - before.exposed_seconds) / steps / step_seconds);
  figure("gradient_mib_per_step", "MiB", (after.bytes - before.bytes) / steps / (1 << 20));
}

// Where a training step's tensor memory goes, in bytes (read after a step; the gradients are kept
// until the next step's zero_grad).
struct MemoryBreakdown {
  double parameters = 0, optimizer_state = 0, gradients = 0, saved_activations = 0;
};

MemoryBreakdown memory_breakdown(const models::Trainer& trainer) {
  MemoryBreakdown m;
  auto bytes = [](const Tensor& t) {
    return t.defined() ? static_cast<double>(t.numel() * dtype_size(t.dtype())) : 0.0;
  };
  for (const auto& [name, p] : trainer.optimizer().parameters()) {
    m.parameters += bytes(p);
    m.gradients += bytes(p.grad());
    for (const auto& [buffer, value] : trainer.optimizer().state_of(name).buffers) m.optimizer_state += bytes(value);
  }
  const models::Trainer::ForwardMemory& forward = trainer.last_forward_memory();
  m.saved_activations = static_cast<double>(forward.after - forward.before);
  return m;
}

// "AMD EPYC 9R14 96-Core Processor": /proc/cpuinfo's model name ("" where there is none).
std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) return line.substr(line.find(':') + 2);
  }
  return "";
}

// --profile N: N more steps under the profiler, the table, and the machine and day it ran on.
void print_profile(const Reporter& reporter, models::Trainer& trainer, int steps, core::Backend& backend) {
  Profiler profiler;
  for (int i = 0; i < steps; ++i) {
    trainer.step();
    backend.synchronize();
  }
  const Profile profile = profiler.stop();
  char day[16];
  const std::time_t now = std::time(nullptr);
  std::strftime(day, sizeof day, "%Y-%m-%d", std::localtime(&now));
  reporter.note("profile of " + std::to_string(steps) + " steps (autograd/profiler.h), " + cpu_model() + ", SIMD " +
                core::cpu::vec::target() + ", " + std::to_string(core::num_threads()) + " threads, " + day + ":");
  reporter.note(profile.table());
}

}  // namespace

void bench_train(const Reporter& reporter, const TrainBenchOptions& options, Communicator& comm) {
  const Device device = apps::device_of("bench", options.device);
  apps::use_matmul_precision("bench", options.matmul, options.device);
  const models::ImageModelConfig config = models::load_config(options.config);
  const int64_t batch = options.batch > 0 ? options.batch : preset_batch(options.config);
  const std::string ranks = comm.size() > 1 ? std::to_string(comm.size()) + " processes x " : "";
  reporter.note("axiom bench train --config " + options.config + " on " + device.str() + ": " + ranks +
                std::to_string(core::num_threads()) + " threads, batch " + std::to_string(batch) + ", " +
                options.matmul + " products, " + std::to_string(options.steps) + " timed steps after 2 warm-up steps");
  const models::Measuring measuring{.device = device, .checkpoint_blocks = options.checkpoint_blocks};
  const models::MemoryEstimate estimate = models::training_memory(config, batch / comm.size(), measuring);
  models::check_fits(estimate, "bench", "a training step of " + std::to_string(batch / comm.size()) + " images",
                     "use a smaller --batch or config", comm.local_size(), device);
  Generator gen(11);
  const core::Shape image_shape = config.channels == 1
                                      ? core::Shape{4 * batch, config.height, config.width}
                                      : core::Shape{4 * batch, config.channels, config.height, config.width};
  const Tensor images(core::randint(image_shape, 0, 256, gen, Dtype::uint8));
  models::TrainingOptions training;
  training.data = "random images", training.batch_size = batch, training.warmup_steps = 0;
  models::Trainer trainer(config, training, images,
                          {.device = device, .communicator = &comm, .checkpoint_blocks = options.checkpoint_blocks});

  trainer.step();  // warm-up: the allocator's cache, lazy initialisation (seconds_per_call adds one more)
  reset_peak_memory();
  core::reset_allocation_peak();
  const optim::CommunicationStats before = trainer.communication();
  core::Backend& backend = core::backend(device);
  const double step_seconds = seconds_per_call(
      [&] {
        trainer.step();
        backend.synchronize();  // a device may still be running the step's last kernels
      },
      options.steps, 0);
  const double peak = peak_memory_bytes();
  const double peak_tensors = static_cast<double>(core::allocation_stats().peak_bytes);
  const models::Cost cost = models::measured_training_cost(config, batch, measuring);  // the whole job's batch
  const double flops = cost.flops;

  auto figure = [&](const std::string& name, const std::string& unit, double value) {
    reporter.report({.bench = "train",
                     .name = options.config + "_" + name,
                     .unit = unit,
                     .value = value,
                     .baseline = {},
                     .baseline_name = {}});
  };
  figure("step", "s", step_seconds);
  figure("images_per_second", "img/s", static_cast<double>(batch) / step_seconds);
  figure("peak_memory", "MiB", peak / (1 << 20));
  figure("peak_tensor_memory", "MiB", peak_tensors / (1 << 20));
  figure("estimated_tensor_memory", "MiB",
         estimate.total() / (1 << 20));  // models/training/memory_budget.h: measured on meta, before the step
  const MemoryBreakdown split = memory_breakdown(trainer);
  figure("parameter_memory", "MiB", split.parameters / (1 << 20));
  figure("optimizer_state_memory", "MiB", split.optimizer_state / (1 << 20));
  figure("gradient_memory", "MiB", split.gradients / (1 << 20));
  figure("saved_activation_memory", "MiB", split.saved_activations / (1 << 20));
  figure("gflop_per_step", "GFLOP", flops / 1e9);
  if (comm.size() > 1) report_communication(figure, before, trainer.communication(), step_seconds);
  const std::optional<ProductsLimit> limit = products_limit(device, comm, cost);
  if (limit) {
    figure("products_at_best_rate", "s", limit->best_seconds);
    figure("products_in_chosen_library", "s", limit->chosen_seconds);
    if (core::matmul_precision() == core::MatmulPrecision::bfloat16) {
      figure("products_on_bfloat16_operands", "s", limit->bfloat16_operands_seconds);
    }
  }
  reporter.report({.bench = "train",
                   .name = options.config + "_gflops",
                   .unit = "GFLOP/s",
                   .value = flops / step_seconds / 1e9,
                   .baseline = limit ? std::optional(flops / limit->best_seconds / 1e9) : std::nullopt,
                   .baseline_name = limit ? "best GEMM rate" : ""});
  if (options.profile > 0) print_profile(reporter, trainer, options.profile, backend);
}

}  // namespace axiom::bench
