// The Axial Transformer on a device: training steps, evaluation and sampling give the CPU's
// results, with every tensor on the model's device. Runs core/cuda's own kernels on the CPU
// emulator always, and on the real GPU when there is one (tests/support/emulated_cuda.h).
#include <cmath>
#include <utility>

#include "models/models.h"
#include "tests/support/reference.h"
#include "tests/support/emulated_cuda.h"
#include "autograd/internal.h"

using namespace axiom;
using axiom::Device;

namespace {

// Two channels (the encoder, a channel drawn per example) and dropout (masks from the generator).
models::ImageModelConfig device_config(models::Inner inner = models::Inner::transformer) {
  models::ImageModelConfig c;
  c.height = 3, c.width = 4, c.channels = 2, c.features = 8, c.heads = 2;
  c.upper_layers = 2, c.row_layers = 1, c.encoder_layers = 1, c.ff_multiple = 2, c.dropout = 0.1, c.inner = inner;
  return c;
}

Tensor device_test_images(const models::ImageModelConfig& c) {
  Generator gen(99);
  return Tensor(core::randint({8, c.channels, c.height, c.width}, 0, 256, gen, Dtype::uint8));
}

// The largest difference between the two models' parameters, each read back to the CPU.
double largest_weight_difference(models::Learner& a, models::Learner& b) {
  const auto pa = a.named_parameters(), pb = b.named_parameters();
  REQUIRE(pa.size() == pb.size());
  double worst = 0;
  for (size_t i = 0; i < pa.size(); ++i) {
    const core::Tensor diff =
        core::abs(core::sub(core_tensor(pa[i].second).to(Device::cpu()), core_tensor(pb[i].second).to(Device::cpu())));
    worst = std::max(worst, core::max(diff).item());
  }
  return worst;
}

}  // namespace

TEST_SUITE("cuda-emulated") {
  TEST_CASE("three training steps of a model on the device match the same steps on the CPU") {
    for (const models::Attention attention :
         {models::Attention::axial, models::Attention::local2d,
          models::Attention::full}) {  // the fused kernels, and local attention's plain ops
      CAPTURE(attention);
      auto config = device_config();
      config.attention = attention, config.local_rows = 2, config.local_columns = 3;
      const Tensor images = device_test_images(config);
      models::TrainingOptions options;
      options.batch_size = 4, options.lr = 1e-2, options.warmup_steps = 2, options.seed = 3;
      models::Trainer on_cpu(config, options, images);
      std::vector<double> cpu_losses;
      for (int i = 0; i < 3; ++i) cpu_losses.push_back(on_cpu.step());

      axiom::test::on_every_device([&] {
        models::Trainer on_device(config, options, images, Device::cuda());
        CHECK(on_device.model().device() == Device::cuda());
        for (int i = 0; i < 3; ++i) CHECK(on_device.step() == doctest::Approx(cpu_losses[i]).epsilon(1e-4));
        for (const auto& [name, p] : on_device.model().named_parameters()) {
          INFO(name);
          CHECK(p.device() == Device::cuda());
          CHECK(p.grad().defined());
          CHECK(p.grad().device() == Device::cuda());
        }
        CHECK(largest_weight_difference(on_cpu.model(), on_device.model()) < 1e-4);
      });
    }
  }

  // What one training step asks of the device, on the emulator: kernel launches, copies back to the
  // host (each one waits for the GPU's queue to drain) and uploads, and cuBLAS calls.
  struct StepTraffic {
    int64_t launches = 0, copies_to_host = 0, uploads = 0, cublas_calls = 0;
  };

  StepTraffic traffic_of_one_step(models::Trainer & trainer) {
    const auto grid_before = axiom::cuda_emulator::grid_stats();
    const auto copies_before = axiom::cuda_emulator::traffic_stats();
    trainer.step();
    const auto grid_after = axiom::cuda_emulator::grid_stats();
    const auto copies_after = axiom::cuda_emulator::traffic_stats();
    StepTraffic t{grid_after.launches - grid_before.launches,
                  copies_after.device_to_host - copies_before.device_to_host,
                  copies_after.host_to_device - copies_before.host_to_device, 0};
    for (const auto& [entry, calls] : axiom::test::cublas_calls_between(copies_before, copies_after))
      t.cublas_calls += calls;
    return t;
  }

  // The traffic of the second training step (the first also makes Adam's state) of `config` on the
  // device, batches of 2 of 8 random images; printed with `what`.
  StepTraffic traffic_of_a_step(const models::ImageModelConfig& config, models::TrainingOptions options,
                                const std::string& what) {
    Generator gen(5);
    const Tensor images(core::randint({8, config.height, config.width}, 0, 256, gen, Dtype::uint8));
    options.batch_size = 2, options.warmup_steps = 0;
    models::Trainer trainer(config, options, images, Device::cuda());
    trainer.step();
    const StepTraffic t = traffic_of_one_step(trainer);
    MESSAGE("one training step of ", what, " on the device: ", t.launches, " kernel launches, ", t.cublas_calls,
            " cuBLAS calls, ", t.copies_to_host, " copies to the host, ", t.uploads, " uploads");
    return t;
  }

  // A guard: a change that adds a launch, a copy back or an upload to the step fails here. The
  // ceilings are the counts of the step as it is; lower them as it gets leaner. (Before the weights'
  // finiteness was counted on the device in a few launches and read with the loss, and before Adam
  // took 16 parameters a launch (now 128), and before a column sum was one launch rather than two: 824 launches, 147
  // cuBLAS calls, 114 copies to the host, 49 uploads; before the index checks ran on the device, 7 copies; before
  // attention ran in shared memory, 147 cuBLAS calls and 49 uploads of their pointer arrays.)
  TEST_CASE(
      "a training step of the small preset's structure asks the device for no more launches and copies than today") {
    auto config =
        models::load_config("small");  // small's layers, heads and parameters, at a size the emulator runs fast
    config.height = 4, config.width = 4, config.features = 8;
    axiom::test::ScopedEmulatedCuda emulated;
    const StepTraffic t = traffic_of_a_step(config, {}, "small's structure");
    CHECK(t.launches <= 343);
    CHECK(t.cublas_calls <= 99);
    CHECK(t.copies_to_host <= 1);  // the loss, read with the weights' check
    CHECK(t.uploads <= 1);         // the batch's images
    // Clipping the gradients' norm reads one number more (the norm), whatever the parameter count.
    models::TrainingOptions clipped;
    clipped.max_grad_norm = 1.0;
    CHECK(traffic_of_a_step(config, clipped, "small's structure, clipped").copies_to_host == t.copies_to_host + 1);
    axiom::test::report_memory_faults();
  }

  // A raster model's attention runs over one line of every pixel: at 10 x 10, lines of 100 positions,
  // too long for a block's shared memory, so the GPU takes them a tile at a time (core/cuda/attention.cu):
  // no pointer array goes up for them, and the step still reads the host once.
  TEST_CASE("a training step of full attention over lines too long for shared memory uploads only its batch") {
    auto config = models::load_config("small-full");
    config.height = 10, config.width = 10, config.features = 32, config.upper_layers = 2, config.row_layers = 1;
    axiom::test::ScopedEmulatedCuda emulated;
    const StepTraffic t = traffic_of_a_step(config, {}, "small-full's structure at 10 x 10");
    CHECK(t.launches <= 161);
    CHECK(t.cublas_calls <= 39);   // the linear layers' (57 when attention's products went to cuBLAS)
    CHECK(t.copies_to_host <= 1);  // the loss, read with the weights' check
    CHECK(t.uploads <= 1);         // the batch's images (19 with attention's pointer arrays)
    axiom::test::report_memory_faults();
  }

  TEST_CASE("evaluation on the device gives the CPU's likelihood") {
    Generator gen(4);
    models::AxialTransformer model(device_config(), gen);
    model.eval();
    const Tensor images = device_test_images(device_config());
    const double cpu_bits = models::evaluate_images(model, images, 3).bits_per_dim();
    axiom::test::on_every_device([&] {
      model.to(Device::cuda());
      const double device_bits = models::evaluate_images(model, images, 3).bits_per_dim();
      model.to(Device::cpu());
      CHECK(device_bits == doctest::Approx(cpu_bits).epsilon(1e-5));
    });
  }

  TEST_CASE("on the device the semi-parallel sampler makes exactly the naive sampler's images and the CPU's") {
    struct Case {
      models::Inner inner;
      int64_t relative;
      models::Attention attention;
    };
    using models::Attention;
    constexpr auto T = models::Inner::transformer, L = models::Inner::lstm;
    for (const auto& [inner, relative, attention] :
         {Case{T, 0, Attention::axial}, Case{L, 0, Attention::axial}, Case{T, 2, Attention::axial},
          Case{T, 0, Attention::full}, Case{T, 0, Attention::local2d}}) {
      CAPTURE(inner);
      CAPTURE(relative);
      CAPTURE(attention);
      Generator gen(9);
      auto config = device_config(inner);
      config.dropout = 0, config.relative = relative, config.attention = attention, config.local_rows = 2,
      config.local_columns = 2;
      const std::unique_ptr<models::ImageModel> made = models::make_image_model(config, gen);
      models::ImageModel& model = *made;
      for (const auto& [name, p] : model.named_parameters())
        core::copy_into(core::normal(p.shape(), 0, 0.5, gen, p.dtype()), core_tensor(p));
      model.eval();
      const models::SampleOptions options{.count = 2, .temperature = 1.0, .seed = 11};
      const core::Tensor on_cpu = core_tensor(models::sample_fast(model, options));
      axiom::test::on_every_device([&] {
        model.to(Device::cuda());
        const core::Tensor fast = core_tensor(models::sample_fast(model, options));
        const core::Tensor naive = core_tensor(models::sample_naive(model, options));
        model.to(Device::cpu());
        CHECK(fast.device() == Device::cpu());  // samples come back to the host
        CHECK(core::sum(core::ne(fast, naive)).item() == 0);
        CHECK(core::sum(core::ne(fast, on_cpu)).item() == 0);
      });
    }
  }

}  // TEST_SUITE
