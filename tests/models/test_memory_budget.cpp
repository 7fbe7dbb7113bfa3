// The memory budget (models/training/memory_budget.h): the parameter count is exact, and the estimates of a
// training step, an evaluation and a sampling run are close to what allocation_stats measures.
#include "core/memory.h"
#include "models/models.h"
#include "tests/support/reference.h"
#include "tests/support/emulated_cuda.h"

using namespace axiom;

namespace {

models::ImageModelConfig small_config() {
  models::ImageModelConfig c;
  c.height = 8, c.width = 8, c.channels = 1, c.features = 32, c.heads = 2;
  c.upper_layers = 2, c.row_layers = 2, c.encoder_layers = 0, c.ff_multiple = 2;
  return c;
}

// Configs that move every term of the estimate: width, feed-forward, heads, lines, layers,
// channels with an encoder, the LSTM inner decoder, one set of position tables for both decoders,
// relative positions (attention from plain ops); the raster models, full and local (1-D with
// padding, 2-D with padding on both axes).
std::vector<models::ImageModelConfig> configs() {
  std::vector<models::ImageModelConfig> all(12, small_config());
  all[1].features = 64;
  all[2].ff_multiple = 8, all[2].heads = 8;
  all[3].height = 16, all[3].upper_layers = 4;
  all[4].channels = 3, all[4].encoder_layers = 3;
  all[5].inner = models::Inner::lstm;
  all[6].height = 12, all[6].width = 16, all[6].channels = 2, all[6].features = 48, all[6].heads = 4,
  all[6].encoder_layers = 2, all[6].inner = models::Inner::lstm;
  all[7].channels = 2, all[7].encoder_layers = 1, all[7].positions = models::Positions::shared,
  all[7].init = models::Init::authors;
  all[8].relative = 3, all[8].heads = 4;
  all[9].attention = models::Attention::full;
  all[10].attention = models::Attention::local1d, all[10].local_length = 10;
  all[11].attention = models::Attention::local2d, all[11].local_rows = 3, all[11].local_columns = 3, all[11].heads = 4;
  return all;
}

Tensor images_for(const models::ImageModelConfig& c, int64_t n) {
  Generator gen(99);
  if (c.channels == 1) return Tensor(core::randint({n, c.height, c.width}, 0, 256, gen, Dtype::uint8));
  return Tensor(core::randint({n, c.channels, c.height, c.width}, 0, 256, gen, Dtype::uint8));
}

// The most bytes alive at once while `work` runs, beyond those alive before it.
template <typename Work>
double peak_bytes_of(Work&& work) {
  const int64_t before = core::allocation_stats().live_bytes;
  core::reset_allocation_peak();
  work();
  return static_cast<double>(core::allocation_stats().peak_bytes - before);
}

}  // namespace

// The CPU's measurements: training, evaluation and sampling of whole models (label memory-budget;
// 3 s in Release, 6 minutes under ThreadSanitizer, whose build starts plain threads for every
// parallel loop: CI's ThreadSanitizer run leaves them out, having run the same kernels elsewhere).
TEST_SUITE("memory-budget") {
  TEST_CASE("a model made on the meta device has the CPU model's parameters, and nothing is drawn") {
    for (const models::ImageModelConfig& c : configs()) {
      CAPTURE(c.to_json());
      Generator gen(1);
      const std::unique_ptr<models::ImageModel> model = models::make_image_model(c, gen);
      const double cpu_before = static_cast<double>(core::allocation_stats(DeviceType::cpu).live_bytes);
      core::reset_allocation_peak();
      CHECK(models::measured_parameter_count(c) == model->parameter_count());
      CHECK(static_cast<double>(core::allocation_stats(DeviceType::cpu).peak_bytes) ==
            cpu_before);  // no draw on the CPU
    }
  }

  TEST_CASE("the estimates are the measured peaks of training, evaluation and sampling") {
    const int64_t batch = 4;
    const std::vector<models::ImageModelConfig> all = configs();
    for (size_t i = 0; i < all.size(); ++i) {
      const models::ImageModelConfig& c = all[i];
      CAPTURE(c.to_json());
      const Tensor images = images_for(c, batch);
      models::TrainingOptions options;
      options.batch_size = batch;
      const double training = peak_bytes_of([&] {
        models::Trainer trainer(c, options, images);
        trainer.step(), trainer.step();  // the second step holds Adam's moments too
      });
      // the CPU's peak but for the few bytes of the batch the CPU holds besides
      const double estimate = models::training_memory(c, batch).total();
      CHECK(estimate >= 0.999 * training);
      CHECK(estimate <= 1.001 * training);
      const double recomputing = peak_bytes_of([&] {  // every block recomputed in backward
        models::Trainer trainer(c, options, images, {.checkpoint_blocks = 100});
        trainer.step(), trainer.step();
      });
      const double recomputing_estimate = models::training_memory(c, batch, {.checkpoint_blocks = 100}).total();
      CHECK(recomputing_estimate >= 0.999 * recomputing);
      CHECK(recomputing_estimate <= 1.001 * recomputing);

      Generator gen(1);
      const std::unique_ptr<models::ImageModel> model = models::make_image_model(c, gen);
      model->eval();
      const double weights = static_cast<double>(model->parameter_count()) * 4;
      const double evaluation = weights + peak_bytes_of([&] { (void)model->batch_score({images}); });
      CHECK(models::evaluation_memory(c, batch).total() >= 0.99 * evaluation);
      CHECK(models::evaluation_memory(c, batch).total() <= 1.01 * evaluation);
      for (const models::Sampler sampler : {models::Sampler::fast, models::Sampler::naive}) {
        if (sampler == models::Sampler::naive && i % 3 != 0)
          continue;  // (axial, tall, LSTM and channels, full: a whole model a pixel is slow)
        CAPTURE(static_cast<int>(sampler));
        const double sampling =
            weights + peak_bytes_of([&] {
              (void)(sampler == models::Sampler::fast ? models::sample_fast(*model, {.count = batch})
                                                      : models::sample_naive(*model, {.count = batch}));
            });
        // the noise's CPU peak and the model's added, though they need not meet: a little more
        CHECK(models::sampling_memory(c, batch, sampler).total() >= 0.99 * sampling);
        CHECK(models::sampling_memory(c, batch, sampler).total() <= 1.10 * sampling);
      }
    }
  }

  TEST_CASE("a training step measured on the shape-only device allocates what the same step allocates on the CPU") {
    const int64_t batch = 4;
    for (const models::ImageModelConfig& c : configs()) {
      CAPTURE(c.to_json());
      for (const int64_t recomputed : {int64_t{0}, int64_t{2}, int64_t{100}}) {
        CAPTURE(recomputed);
        models::TrainingOptions options;
        options.batch_size = batch;
        // the CPU's peak during the second step, counting the model and the optimizer's state, not the images
        const Tensor images = images_for(c, batch);
        const int64_t before = core::allocation_stats(DeviceType::cpu).live_bytes;
        double cpu = 0;
        {
          models::Trainer trainer(c, options, images, {.checkpoint_blocks = recomputed});
          trainer.step();  // Adam's moments
          core::reset_allocation_peak();
          trainer.step();
          cpu = static_cast<double>(core::allocation_stats(DeviceType::cpu).peak_bytes - before);
        }
        const double meta = models::measured_training_cost(c, batch, {.checkpoint_blocks = recomputed}).peak_bytes;
        CHECK(meta >= 0.999 * cpu);  // the same buffers: equal but for a few bytes that the CPU's step keeps besides
        CHECK(meta <= 1.001 * cpu);
      }
    }
  }

  TEST_CASE("a training step computes the forward pass three times over, four with every block recomputed") {
    for (const models::ImageModelConfig& c : configs()) {
      CAPTURE(c.to_json());
      if (c.channels > 1) continue;  // evaluation scores every channel, a training step one
      const double forward = models::measured_evaluation_cost(c, 4).flops;
      CHECK(forward > 0);
      const double step = models::measured_training_cost(c, 4).flops;
      CHECK(step >= 2.9 * forward);  // a gradient for each operand of every product: twice the forward
      CHECK(step <= 3.0 * forward);  // (less where an operand needs none: the first layer's input)
      const double recomputing = models::measured_training_cost(c, 4, {.checkpoint_blocks = 100}).flops;
      CHECK(recomputing > step);
      CHECK(recomputing <= 4.0 * forward);                            // the blocks' forward once more
      CHECK(models::measured_training_cost(c, 8).flops == 2 * step);  // linear in the batch
    }
  }

  TEST_CASE(
      "local blocks larger than the image cost what blocks the size of the image cost (local_attention cuts them)") {
    models::ImageModelConfig huge = small_config(), whole = small_config();
    huge.attention = whole.attention = models::Attention::local2d;
    huge.local_rows = huge.local_columns = 65536, whole.local_rows = 8, whole.local_columns = 8;
    CHECK(models::training_memory(huge, 4).total() == models::training_memory(whole, 4).total());
    huge.attention = whole.attention = models::Attention::local1d;
    huge.local_length = int64_t{1} << 32, whole.local_length = 64;
    CHECK(models::evaluation_memory(huge, 4).total() == models::evaluation_memory(whole, 4).total());
  }

  TEST_CASE("check_fits refuses what the machine cannot hold, with the estimate and the machine's memory") {
    models::ImageModelConfig huge = small_config();
    huge.features = int64_t{1} << 20;  // the largest a config takes: 4 blocks of 8 D^2 weights
    CHECK(models::measured_parameter_count(huge) > int64_t{32} << 40);
    CHECK_THROWS_WITH_AS(
        models::check_fits(models::training_memory(huge, 1), "train", "this run", "use a smaller config"),
        doctest::Contains("[train] this run needs about "), Error);
    CHECK_THROWS_WITH_AS(
        models::check_fits(models::training_memory(huge, 1), "train", "this run", "use a smaller config"),
        doctest::Contains("), but this machine has "), Error);
    CHECK_THROWS_WITH_AS(models::check_fits(models::sampling_memory(small_config(), int64_t{1} << 40), "sample",
                                            "drawing", "use a smaller --n"),
                         doctest::Contains("is free; use a smaller --n"), Error);
    CHECK_NOTHROW(models::check_fits(models::training_memory(small_config(), 4), "train", "this run", ""));
    // Four processes on one machine need four times one process's memory.
    const double half = static_cast<double>(core::machine_memory().available) / 2;
    const models::MemoryEstimate third{.weights = 0, .activations = half * 2 / 3};
    CHECK_NOTHROW(models::check_fits(third, "train", "this run", "", 1));
    CHECK_THROWS_WITH_AS(models::check_fits(third, "train", "this run", "", 4),
                         doctest::Contains("in each of the 4 processes"), Error);
  }

}  // TEST_SUITE

TEST_SUITE("cuda-emulated") {
  TEST_CASE(
      "a training step measured for the GPU allocates what the GPU allocates: attention composed where CUDA composes "
      "it") {
    axiom::test::ScopedEmulatedCuda emulated;
    const std::vector<models::ImageModelConfig> all = configs();
    for (const size_t which : {size_t{0}, size_t{9}, size_t{11}}) {  // axial, full, local 2-D
      const models::ImageModelConfig& c = all[which];
      CAPTURE(c.to_json());
      models::TrainingOptions options;
      options.batch_size = 2;
      const Tensor images = images_for(c, 2);
      double gpu = 0;
      {
        models::Trainer trainer(c, options, images, Device::cuda());
        trainer.step();  // Adam's moments
        core::reset_allocation_peak();
        trainer.step();
        gpu = static_cast<double>(
            core::allocation_stats(DeviceType::cuda).peak_bytes);  // the model and the optimizer's state too
      }
      const double for_gpu = models::measured_training_cost(c, 2, {.device = Device::cuda()}).peak_bytes;
      CHECK(for_gpu >=
            0.99 * gpu);  // the GPU's kernels keep a few hundred bytes of scratch (a reduction's partial sums)
      CHECK(for_gpu <= 1.01 * gpu);
      if (c.attention == models::Attention::local2d) {  // the CPU fuses local attention and keeps less
        CHECK(models::measured_training_cost(c, 2).peak_bytes < 0.999 * for_gpu);
      }
    }
  }

  TEST_CASE("check_fits on the GPU weighs the estimate against the GPU's free memory, not the machine's") {
    axiom::test::ScopedEmulatedCuda emulated;  // a GPU of 4 GiB (core/cuda/emulator/memory.h)
    const Device gpu = Device::cuda();
    const core::MachineMemory memory = core::backend(gpu).memory();
    CHECK(memory.total == axiom::cuda_emulator::kDeviceBytes);
    const models::MemoryEstimate five_gib{.weights = 0, .activations = 5.0 * (1 << 30)};
    const models::MemoryEstimate one_gib{.weights = 0, .activations = 1.0 * (1 << 30)};
    CHECK_THROWS_WITH_AS(models::check_fits(five_gib, "train", "this run", "use a smaller --batch", 1, gpu),
                         doctest::Contains("), but the GPU (cuda:0) has 4.0 GiB, of which "), Error);
    CHECK_NOTHROW(models::check_fits(one_gib, "train", "this run", "", 1, gpu));
    if (core::machine_memory().available > size_t(6) << 30)
      CHECK_NOTHROW(models::check_fits(five_gib, "train", "this run", ""));
  }

}  // TEST_SUITE
