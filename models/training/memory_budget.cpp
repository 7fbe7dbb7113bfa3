#include "models/training/memory_budget.h"

#include <algorithm>

#include "core/backend.h"
#include "core/error.h"
#include "core/memory.h"

namespace axiom::models {

namespace {

// What work on `n` examples costs, measure(n) giving it: measured at n itself up to 64; beyond
// that, at 32 and 64 and extrapolated, every tensor's size linear in n from there (where the peak
// falls can move at small n, not at large).
template <typename Measure>
Cost cost_of(int64_t n, Measure measure) {
  constexpr int64_t kMeasured = 64;
  Cost at = measure(std::min(n, kMeasured));
  if (n > kMeasured) {
    const Cost half = measure(kMeasured / 2);
    const double further = static_cast<double>(n - kMeasured) / (kMeasured / 2);
    at.peak_bytes += further * (at.peak_bytes - half.peak_bytes);
    at.flops += further * (at.flops - half.flops);
  }
  return at;
}

// `copies` of the model's parameters (measured: made on meta), and the rest of what work on `n`
// examples holds at its peak. Weights that alone exceed the device's memory already refuse the
// work: it is not measured.
template <typename Measure>
MemoryEstimate estimate(const ModelConfig& config, int64_t n, const Measuring& how, double copies, Measure measure) {
  const double parameters =
      static_cast<double>(measured_parameter_count(config)) * static_cast<double>(dtype_size(how.dtype));
  const double weights = copies * parameters;
  if (weights > static_cast<double>(core::backend(how.device).memory().total))
    return {.weights = weights, .activations = 0};
  return {.weights = weights, .activations = cost_of(n, measure).peak_bytes - weights};
}

}  // namespace

MemoryEstimate training_memory(const ModelConfig& config, int64_t batch, const Measuring& how) {
  // parameters, gradients, Adam's m and v
  return estimate(config, batch, how, 4, [&](int64_t n) { return measured_training_cost(config, n, how); });
}

MemoryEstimate evaluation_memory(const ModelConfig& config, int64_t batch, const Measuring& how) {
  return estimate(config, batch, how, 1, [&](int64_t n) { return measured_evaluation_cost(config, n, how); });
}

MemoryEstimate sampling_memory(const ImageModelConfig& config, int64_t count, Sampler sampler, const Measuring& how) {
  return estimate(config, count, how, 1, [&](int64_t n) { return measured_sampling_cost(config, n, sampler, how); });
}

void check_fits(const MemoryEstimate& need, const char* op, const std::string& what, const std::string& advice,
                int processes_here, Device device) {
  const bool on_cpu = device.type == DeviceType::cpu;
  const core::MachineMemory memory = core::backend(device).memory();
  const double total = need.total() * std::max(processes_here, 1);
  if (total <= static_cast<double>(memory.available)) return;
  const std::string each =
      processes_here > 1 ? " in each of the " + std::to_string(processes_here) + " processes on this machine" : "";
  const std::string where = on_cpu ? "this machine" : "the GPU (" + device.str() + ")";
  throw Error(op, what, " needs about ", core::format_bytes(need.total()), each, " (weights ",
              core::format_bytes(need.weights), ", activations ", core::format_bytes(need.activations), "), but ",
              where, " has ", core::format_bytes(static_cast<double>(memory.total)), ", of which ",
              core::format_bytes(static_cast<double>(memory.available)), " is free; ", advice);
}

}  // namespace axiom::models
