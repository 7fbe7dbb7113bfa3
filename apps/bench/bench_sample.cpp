// `axiom bench sample --config tiny|small|...`: milliseconds per 28 x 28 image for the two samplers of
// models/sampler.h, at batch 1 and batch 16, on a model with random weights (the cost does not
// depend on the weights).
//
// - naive: the whole model once per pixel. Timing whole images would take minutes, so one
//   evaluation of the whole model on the batch is timed (median of trials) and multiplied by the
//   number of pixels, H * W * C: that is all the naive sampler does, less the drawing itself.
// - fast: the semi-parallel sampler (outer decoder once per row, inner decoder once per pixel with
//   key/value caches; a raster model's blocks once per pixel with caches), timed on whole images.
// speedup = naive / fast: how many times faster the semi-parallel sampler is.
// The arithmetic of drawing an image, counted on the shape-only device (core/meta/meta.h), and the
// rate the fast sampler reaches. Memory: the peak of the bytes held by live tensors (the weights included) while the
// fast sampler draws, and while the model scores the batch (an evaluation), each next to its estimate, measured
// beforehand on the shape-only device (models/training/memory_budget.h).
// With --device cuda the model and its inputs live on the GPU, and the clock is read after the
// device has finished (the fast sampler's images come back to the host, which waits anyway).
#include <functional>
#include <string>

#include "apps/bench/bench.h"
#include "autograd/factory.h"
#include "apps/commands.h"
#include "core/core.h"
#include "core/launch.h"
#include "models/models.h"

namespace axiom::bench {

namespace {
// The most bytes that live tensors on `device` held since the last reset (and while `work` runs).
double peak_tensor_bytes(Device device) { return static_cast<double>(core::allocation_stats(device.type).peak_bytes); }
template <typename Work>
double peak_tensor_bytes(Device device, Work&& work) {
  core::reset_allocation_peak();
  work();
  return peak_tensor_bytes(device);
}

using Report = std::function<void(const std::string& name, const std::string& unit, double value)>;

struct Measured {
  double fast_ms = 0;       // the fast sampler's time per image
  double fast_peak = 0;     // bytes: the fast sampler's peak of live tensors
  double scoring_peak = 0;  // bytes: an evaluation's
};

// The arithmetic of drawing one image (counted on meta) and the rate reached; each peak beside its
// estimate (models/training/memory_budget.h).
void report_costs(const Report& figure, const models::ImageModelConfig& config, int64_t batch, Device device,
                  const Measured& m) {
  const models::Measuring measuring{.device = device};
  const double flops = models::measured_sampling_cost(config, batch, models::Sampler::fast, measuring).flops /
                       static_cast<double>(batch);
  figure("fast_gflop_per_image", "GFLOP", flops / 1e9);
  figure("fast_gflops", "GFLOP/s", flops / m.fast_ms * 1e3 / 1e9);
  figure("fast_peak_tensor_memory", "MiB", m.fast_peak / (1 << 20));
  figure("fast_estimated_tensor_memory", "MiB",
         models::sampling_memory(config, batch, models::Sampler::fast, measuring).total() / (1 << 20));
  figure("evaluation_peak_tensor_memory", "MiB", m.scoring_peak / (1 << 20));
  figure("evaluation_estimated_tensor_memory", "MiB",
         models::evaluation_memory(config, batch, measuring).total() / (1 << 20));
}

}  // namespace

void bench_sample(const Reporter& reporter, const SampleBenchOptions& options) {
  const Device device = apps::device_of("bench", options.device);
  const std::string& config_name = options.config;
  const models::ImageModelConfig config = models::load_config(config_name);
  models::check_fits(models::sampling_memory(config, 16, models::Sampler::fast, {.device = device}), "bench",
                     "drawing 16 images", "use a smaller config", 1, device);
  Generator gen(12);
  const std::unique_ptr<models::ImageModel> model = models::make_image_model(config, gen);
  model->to(device);
  core::Backend& backend = core::backend(device);
  reporter.note("axiom bench sample --config " + config_name + " on " + device.str() + ": " +
                std::to_string(core::num_threads()) +
                " threads; milliseconds per image (naive: one whole-model evaluation timed, times H*W*C pixels)");
  const double pixels = static_cast<double>(config.height * config.width * config.channels);
  for (const int64_t batch : {int64_t{1}, int64_t{16}}) {
    const core::Shape shape = config.channels == 1 ? core::Shape{batch, config.height, config.width}
                                                   : core::Shape{batch, config.channels, config.height, config.width};
    const Tensor images(core::randint(shape, 0, 256, gen, Dtype::uint8).to(device));
    const Tensor channel = zeros({batch}, Dtype::int64, device);
    const double evaluation = seconds_per_call(
        [&] {
          NoGrad no_grad;
          model->logits(images, channel);
          backend.synchronize();
        },
        5, 0.2);
    const double naive_ms = evaluation * pixels / static_cast<double>(batch) * 1e3;
    core::reset_allocation_peak();
    const double fast_ms =
        seconds_per_call([&] { models::sample_fast(*model, {.count = batch, .temperature = 1, .seed = 1}); }, 3, 0) /
        static_cast<double>(batch) * 1e3;
    const double fast_peak = peak_tensor_bytes(device);
    const double scoring_peak = peak_tensor_bytes(device, [&] { (void)model->batch_score({images}); });
    const Report figure = [&](const std::string& name, const std::string& unit, double value) {
      reporter.report({.bench = "sample",
                       .name = config_name + "_" + name + "_batch" + std::to_string(batch),
                       .unit = unit,
                       .value = value,
                       .baseline = {},
                       .baseline_name = {}});
    };
    figure("naive", "ms/image", naive_ms);
    figure("fast", "ms/image", fast_ms);
    figure("speedup", "x", naive_ms / fast_ms);
    report_costs(figure, config, batch, device,
                 {.fast_ms = fast_ms, .fast_peak = fast_peak, .scoring_peak = scoring_peak});
  }
}

}  // namespace axiom::bench
