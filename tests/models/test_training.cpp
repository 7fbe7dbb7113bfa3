// Training and checkpoints: a resumed run is bit for bit the run that never stopped; checkpoint
// files are complete, replaced atomically and checked when read; models load back for evaluation.
#include <unistd.h>

#include <filesystem>
#include <cmath>
#include <fstream>
#include <iterator>
#include <numbers>

#include "autograd/factory.h"
#include "models/models.h"
#include "tests/support/reference.h"
#include "tests/support/tiny_models.h"
#include "autograd/internal.h"

using namespace axiom;
namespace fs = std::filesystem;

namespace {

// Two channels (so each step draws a channel per example) and dropout (so it draws masks too):
// both come from the generator that a checkpoint must restore.
using axiom::test::two_channel_config;

models::TrainingOptions small_batches() {
  models::TrainingOptions o;
  o.batch_size = 4, o.lr = 1e-2, o.warmup_steps = 3, o.seed = 7;
  return o;
}

// 10 images: 2 batches of 4 per epoch (drop_last), so 6 steps cross two epoch boundaries.
Tensor images_for(const models::ImageModelConfig& c, int64_t n = 10) {
  Generator gen(99);
  return Tensor(core::randint({n, c.channels, c.height, c.width}, 0, 256, gen, Dtype::uint8));
}

// A fresh directory, removed with everything in it.
struct TempDir {
  fs::path path = fs::temp_directory_path() /
                  ("axiom_training_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  TempDir() { fs::create_directories(path); }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
  std::string str() const { return path.string(); }
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(path)) names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
  static inline int counter = 0;
};

void train(models::Trainer& trainer, int64_t steps) {
  for (int64_t i = 0; i < steps; ++i) trainer.step();
}

// Every parameter of both models, equal to the last bit.
bool same_weights(models::Learner& a, models::Learner& b) {
  const auto pa = a.named_parameters(), pb = b.named_parameters();
  REQUIRE(pa.size() == pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    if (test::values_of(core_tensor(pa[i].second)) != test::values_of(core_tensor(pb[i].second))) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("training: N steps, a checkpoint and N more steps give exactly the weights of 2N steps") {
  const auto config = two_channel_config();
  const Tensor images = images_for(config);
  models::Trainer straight(config, small_batches(), images);
  train(straight, 6);
  TempDir dir;
  models::Trainer first_half(config, small_batches(), images);
  train(first_half, 3);
  first_half.save(dir.str());
  const models::Checkpoint checkpoint = models::read_checkpoint(dir.str());
  CHECK(checkpoint.step == 3);
  models::Trainer resumed(checkpoint, images);
  CHECK(resumed.steps_done() == 3);
  train(resumed, 3);
  CHECK(resumed.steps_done() == 6);
  CHECK(same_weights(straight.model(), resumed.model()));

  // The test can fail: a resume that forgets the generator's counter (so it redraws the channels
  // and dropout masks of the first steps) ends elsewhere.
  models::Checkpoint forgetful = checkpoint;
  forgetful.rng_offset = 0;
  models::Trainer wrong(forgetful, images);
  train(wrong, 3);
  CHECK_FALSE(same_weights(straight.model(), wrong.model()));
}

TEST_CASE("training: a run whose rate decays resumes exactly too, with its schedule and length") {
  const auto config = two_channel_config();
  const Tensor images = images_for(config);
  models::TrainingOptions options = small_batches();
  options.schedule = models::LrSchedule::linear, options.steps = 6;
  models::Trainer straight(config, options, images);
  train(straight, 6);
  TempDir dir;
  models::Trainer first_half(config, options, images);
  train(first_half, 3);
  first_half.save(dir.str());
  models::Trainer resumed(models::read_checkpoint(dir.str()), images);
  CHECK(resumed.options().to_json() == options.to_json());
  CHECK(resumed.lr_at(5) == straight.lr_at(5));
  train(resumed, 3);
  CHECK(same_weights(straight.model(), resumed.model()));
}

TEST_CASE("training: blocks recomputed in backward (checkpoint_blocks) change no bit of any step") {
  const auto config = two_channel_config();  // 4 blocks (1 encoder, 2 outer, 1 inner) and dropout
  const Tensor images = images_for(config);
  for (Dtype dtype : {Dtype::float64, Dtype::float32}) {
    CAPTURE(dtype);
    models::Trainer plain(config, small_batches(), images, {.dtype = dtype});
    train(plain, 3);
    for (int64_t blocks : {2, 100}) {  // some, and all
      CAPTURE(blocks);
      models::Trainer recomputed(config, small_batches(), images, {.dtype = dtype, .checkpoint_blocks = blocks});
      CHECK(recomputed.image_model().checkpoint_blocks() == blocks);
      train(recomputed, 3);
      CHECK(same_weights(plain.model(), recomputed.model()));
    }
  }
  // and a run resumed with recomputation ends where the run without it ends
  models::Trainer straight(config, small_batches(), images);
  train(straight, 4);
  TempDir dir;
  models::Trainer first_half(config, small_batches(), images);
  train(first_half, 2);
  first_half.save(dir.str());
  models::Trainer resumed(models::read_checkpoint(dir.str()), images, {.checkpoint_blocks = 100});
  train(resumed, 2);
  CHECK(same_weights(straight.model(), resumed.model()));
  CHECK(straight.image_model().block_count() == 4);
  CHECK_THROWS_WITH_AS(straight.model().set_checkpoint_blocks(-1),
                       "[AxialTransformer] checkpoint_blocks must be >= 0, got -1", Error);
}

TEST_CASE("training: the loss goes down on a small set of images") {
  auto config = two_channel_config();
  config.dropout = 0;
  models::Trainer trainer(config, small_batches(), images_for(config, 8));
  const double first = trainer.step();
  double last = first;
  for (int i = 0; i < 40; ++i) last = trainer.step();
  CHECK(first == doctest::Approx(8.0).epsilon(1e-3));  // the model starts uniform
  CHECK(last < first - 0.5);
}

// sqrt(sum over every gradient element of g^2), a plain loop in double over the values.
static double gradient_norm_of(models::Learner& model) {
  double squares = 0;
  for (const auto& [name, p] : model.named_parameters()) {
    for (const double g : test::values_of(core_tensor(p.grad()))) squares += g * g;
  }
  return std::sqrt(squares);
}

TEST_CASE("training: the gradients' norm of a step, before clipping") {
  models::Trainer unasked(two_channel_config(), small_batches(), images_for(two_channel_config()));
  unasked.step();
  CHECK(std::isnan(unasked.last_gradient_norm()));  // a pass over the gradients that no one asked for

  models::Trainer plain(two_channel_config(), small_batches(), images_for(two_channel_config()));
  plain.measure_gradient_norm();
  plain.step();
  CHECK(plain.last_gradient_norm() == doctest::Approx(gradient_norm_of(plain.model())).epsilon(1e-9));
  CHECK(plain.last_gradient_norm() > 0);

  models::TrainingOptions clipped = small_batches();
  clipped.max_grad_norm = plain.last_gradient_norm() / 4;  // the same first step's gradients, scaled to 1/4
  models::Trainer trainer(two_channel_config(), clipped, images_for(two_channel_config()));
  trainer.step();
  CHECK(trainer.last_gradient_norm() == doctest::Approx(plain.last_gradient_norm()).epsilon(1e-12));
  CHECK(gradient_norm_of(trainer.model()) == doctest::Approx(clipped.max_grad_norm).epsilon(1e-5));
}

TEST_CASE("training: the learning rate warms up linearly, then stays") {
  models::Trainer trainer(two_channel_config(), small_batches(), images_for(two_channel_config()));
  CHECK(trainer.lr_at(0) == 0);
  CHECK(trainer.lr_at(1) == doctest::Approx(1e-2 / 3));
  CHECK(trainer.lr_at(3) == doctest::Approx(1e-2));
  CHECK(trainer.lr_at(1000) == doctest::Approx(1e-2));
}

TEST_CASE("training: a linear or cosine schedule warms up, then decays to 0 at the run's last step") {
  const auto config = two_channel_config();
  models::TrainingOptions options = small_batches();  // lr 1e-2, 3 warmup steps
  options.schedule = models::LrSchedule::linear, options.steps = 13;
  models::Trainer linear(config, options, images_for(config));
  CHECK(linear.lr_at(1) == doctest::Approx(1e-2 / 3));
  CHECK(linear.lr_at(3) == doctest::Approx(1e-2));
  CHECK(linear.lr_at(8) == doctest::Approx(1e-2 / 2));
  CHECK(linear.lr_at(12) == doctest::Approx(1e-2 / 10));  // the last step's rate
  CHECK(linear.lr_at(13) == 0);
  options.schedule = models::LrSchedule::cosine;
  models::Trainer cosine(config, options, images_for(config));
  CHECK(cosine.lr_at(3) == doctest::Approx(1e-2));
  CHECK(cosine.lr_at(8) == doctest::Approx(1e-2 / 2));
  CHECK(cosine.lr_at(12) == doctest::Approx(1e-2 * (1 + std::cos(std::numbers::pi * 9 / 10)) / 2));
}

TEST_CASE("training options: the schedule and the run's length, and options written before they existed") {
  using test::error_message;
  const auto config = two_channel_config();
  auto options = small_batches();
  CHECK(error_message([] { models::training_options_from_json(R"({"schedule": "step"})", "options.json"); }) ==
        "[train] options.json: schedule must be \"constant\", \"linear\" or \"cosine\", got \"step\"");
  CHECK(error_message([] { models::lr_schedule_named("Linear", "train", "--schedule"); }) ==
        "[train] --schedule must be \"constant\", \"linear\" or \"cosine\", got \"Linear\"");
  const models::TrainingOptions cosine =
      models::training_options_from_json(R"({"schedule": "cosine", "steps": 300})", "o.json");
  CHECK(std::string(models::name_of(cosine.schedule)) == "cosine");
  CHECK(cosine.to_json().find(R"("schedule": "cosine")") != std::string::npos);
  options.schedule = models::LrSchedule::constant, options.steps = 100;
  CHECK(error_message([&] { models::Trainer(config, options, images_for(config)); }) ==
        "[train] a constant schedule has no length: steps must be 0, got 100");
  options.schedule = models::LrSchedule::linear, options.steps = 3;  // no step left after the 3 of the warmup
  CHECK(error_message([&] { models::Trainer(config, options, images_for(config)); }) ==
        "[train] a linear schedule decays after the warmup: steps (3) must be greater than warmup_steps (3)");
  const models::TrainingOptions old =
      models::training_options_from_json(R"({"lr": 0.002, "warmup_steps": 10})", "old.json");
  CHECK((old.schedule == models::LrSchedule::constant && old.steps == 0 && old.lr == 0.002));
}

TEST_CASE("checkpoint: a save replaces the previous one whole and leaves only its own files") {
  TempDir dir;
  models::Trainer trainer(two_channel_config(), small_batches(), images_for(two_channel_config()));
  trainer.save(dir.str());
  train(trainer, 2);
  trainer.save(dir.str());
  CHECK(dir.entries() ==
        std::vector<std::string>{"checkpoint.json", "model-000002.safetensors", "optimizer-000002.safetensors"});
  const models::Checkpoint c = models::read_checkpoint(dir.str());
  CHECK(c.step == 2);
  CHECK(models::to_json(c.config) == two_channel_config().to_json());
  CHECK(c.options.to_json() == small_batches().to_json());
  CHECK(c.rng_seed == 7);
  CHECK(c.rng_offset > 0);
}

TEST_CASE("checkpoint: the model loads back from the directory or from its weights file") {
  TempDir dir;
  auto config = two_channel_config();
  config.dropout = 0;
  models::Trainer trainer(config, small_batches(), images_for(config));
  train(trainer, 2);
  trainer.save(dir.str());
  const Tensor images = images_for(config, 3);
  const double expected = models::evaluate_images(trainer.image_model(), images, 2).nats;
  CHECK(models::load_model(dir.str())->evaluate(images).nats == doctest::Approx(expected).epsilon(1e-6));
  CHECK(models::load_model(dir.str() + "/model-000002.safetensors")->evaluate(images).nats ==
        doctest::Approx(expected).epsilon(1e-6));
}

TEST_CASE("evaluate_images: batches add up to the whole, and the mode is restored") {
  auto config = two_channel_config();
  Generator gen(3);
  models::AxialTransformer model(config, gen);
  const Tensor images = images_for(config, 5);
  model.eval();
  const models::Likelihood whole = model.evaluate(images);
  model.train();
  int64_t calls = 0;
  const models::Likelihood batched = models::evaluate_images(model, images, 2, [&](int64_t done, int64_t total) {
    ++calls;
    CHECK(total == 5);
    CHECK(done == std::min<int64_t>(2 * calls, 5));
  });
  CHECK(calls == 3);
  CHECK(batched.count == whole.count);
  CHECK(batched.nats == doctest::Approx(whole.nats).epsilon(1e-5));  // float32 sums, split differently
  CHECK(model.is_training());
  // No images: an error, not "nan bits/dim over 0 images".
  CHECK(test::error_message([&] { models::evaluate_images(model, images.narrow(0, 0, 0), 2); }) ==
        "[evaluate] no images to evaluate (images [0, 2, 3, 4])");
}

TEST_CASE("checkpoint: bad directories and files are errors that name them") {
  TempDir dir;
  using test::error_message;
  CHECK(error_message([&] { models::read_checkpoint(dir.str()); }).find("holds no checkpoint.json") !=
        std::string::npos);
  const std::string json = dir.str() + "/checkpoint.json";
  auto write = [&](const std::string& text) { std::ofstream(json) << text; };
  write("{not json");
  CHECK(error_message([&] { models::read_checkpoint(dir.str()); }).find("not valid JSON") != std::string::npos);
  write(R"({"format": "something-else"})");
  CHECK(error_message([&] { models::read_checkpoint(dir.str()); }).find("not an axiom checkpoint") !=
        std::string::npos);
  write(R"({"format": 2})");  // found by fuzz_checkpoint: a raw nlohmann type_error escaped
  CHECK(error_message([&] { models::read_checkpoint(dir.str()); }).find("not an axiom checkpoint") !=
        std::string::npos);

  models::Trainer trainer(two_channel_config(), small_batches(), images_for(two_channel_config()));
  trainer.save(dir.str());
  fs::remove(dir.path / "optimizer-000000.safetensors");
  const std::string missing = error_message([&] { models::read_checkpoint(dir.str()); });
  CHECK(missing.find("optimizer file") != std::string::npos);
  CHECK(missing.find("optimizer-000000.safetensors' is missing") != std::string::npos);
  CHECK(error_message([&] {
          models::load_model(dir.str() + "/nothing-here");
        }).find("neither a checkpoint directory nor a file") != std::string::npos);
}

TEST_CASE("training: options and images are checked before anything runs") {
  using test::error_message;
  const auto config = two_channel_config();
  auto options = small_batches();
  options.batch_size = 0;
  CHECK(error_message([&] { models::Trainer(config, options, images_for(config)); }) ==
        "[train] batch_size must be positive, got 0");
  options = small_batches();
  options.lr = -1;
  CHECK(error_message([&] { models::Trainer(config, options, images_for(config)); }) ==
        "[train] lr must be positive, got -1");
  const std::string wrong_shape = error_message([&] {
    models::Trainer(config, small_batches(), axiom::zeros({10, 28, 28}, Dtype::uint8));
  });
  CHECK(wrong_shape == "[train] the images are uint8 [10, 28, 28] but the config wants uint8 [N, 2, 3, 4] with N > 0");
  CHECK(error_message([&] { models::Trainer(config, small_batches(), images_for(config, 3)); }) ==
        "[train] a batch of 4 needs at least that many images, got 3");
  CHECK(error_message([&] { models::training_options_from_json(R"({"batch": 3})", "x.json"); }) ==
        "[train] x.json: unknown training option \"batch\"");
  CHECK(error_message([&] { models::training_options_from_json(R"({"seed": -3})", "x.json"); }) ==
        "[train] x.json: seed must be an integer >= 0, got -3");
}

TEST_CASE("training: weights that hold NaN or an infinity never reach a checkpoint") {
  const auto config = two_channel_config();
  const Tensor images = images_for(config);
  TempDir dir;
  const auto read_bytes = [](const fs::path& path) {
    std::ifstream file(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(file), {});
  };
  models::Trainer trainer(config, small_batches(), images);
  train(trainer, 2);
  trainer.save(dir.str());
  const std::string good = read_bytes(dir.path / "model-000002.safetensors");
  // A diverged weight (as a huge learning rate leaves): save refuses, the checkpoint stays.
  core_tensor(trainer.model().named_parameters()[3].second).reshape({-1}).set({0}, INFINITY);
  test::check_error([&] { trainer.save(dir.str()); },
                    {"[train] after step 2 the weights '", "' hold NaN or infinite values: the training diverged",
                     "the last checkpoint is kept"});
  CHECK(read_bytes(dir.path / "model-000002.safetensors") == good);
  CHECK(models::read_checkpoint(dir.str()).step == 2);
  // And the step that makes a weight NaN stops there, naming it.
  core_tensor(trainer.model().named_parameters()[3].second).reshape({-1}).set({0}, NAN);
  test::check_error([&] { trainer.step(); }, {"[train] "});
}

// --- a classifier, through the same Trainer ------------------------------------------------------

namespace {
models::ClassifierConfig tiny_vit() {
  models::ClassifierConfig c;
  c.height = 4, c.width = 4, c.features = 4, c.heads = 2, c.layers = 1, c.patch = 2;
  return c;
}

data::TensorDataset labelled_examples() {  // 10 images [4, 4] and their labels
  Generator gen(5);
  const core::Tensor images = core::randint({10, 4, 4}, 0, 256, gen, Dtype::uint8);
  const core::Tensor labels = core::randint({10}, 0, 10, gen, Dtype::int64);
  return {{Tensor(images), Tensor(labels)}};
}
}  // namespace

TEST_CASE("training a classifier: AdamW, a checkpoint that resumes bit for bit and scores again") {
  models::TrainingOptions o = small_batches();
  o.weight_decay = 0.05, o.schedule = models::LrSchedule::linear, o.steps = 8;
  TempDir dir;
  models::Trainer straight(tiny_vit(), o, labelled_examples(), {});
  train(straight, 6);
  models::Trainer first(tiny_vit(), o, labelled_examples(), {});
  train(first, 3);
  first.save(dir.str());
  const models::Checkpoint checkpoint = models::read_checkpoint(dir.str());
  REQUIRE(std::holds_alternative<models::ClassifierConfig>(checkpoint.config));
  CHECK(models::to_json(checkpoint.config) == tiny_vit().to_json());
  CHECK(checkpoint.options.weight_decay == 0.05);
  models::Trainer resumed(checkpoint, labelled_examples(), {});
  train(resumed, 3);
  CHECK(same_weights(straight.model(), resumed.model()));

  models::TrainingOptions no_decay = o;
  no_decay.weight_decay = 0;
  models::Trainer plain(tiny_vit(), no_decay, labelled_examples(), {});
  train(plain, 6);
  CHECK_FALSE(same_weights(straight.model(), plain.model()));  // the decay acts

  const std::unique_ptr<models::Learner> loaded = models::load_learner(dir.str()).model;
  CHECK(std::string(loaded->name()) == "VisionTransformer");
  const data::TensorDataset examples = labelled_examples();
  const models::Score score = models::evaluate(*loaded, examples, 3);  // batches of 3, 3, 3 and 1
  auto& vit = dynamic_cast<models::Classifier&>(*loaded);
  NoGrad no_grad;
  const Tensor logits = vit.forward(models::pixels_to_unit(examples.columns[0]));  // [10, 10]
  const double right = sum(eq(argmax(logits, 1), examples.columns[1]).to(Dtype::float64)).item();
  CHECK(score.examples == 10);
  CHECK(score.count == 10);
  CHECK(score.correct == static_cast<int64_t>(right));
  CHECK(score.mean_loss() == doctest::Approx(cross_entropy(logits, examples.columns[1]).item()).epsilon(1e-5));
  CHECK_THROWS_WITH_AS(models::load_model(dir.str()), doctest::Contains("holds a classifier, not an image model"),
                       Error);
}

TEST_CASE("a classifier's examples must be two columns of one length") {
  CHECK_THROWS_WITH_AS(models::Trainer(tiny_vit(), small_batches(), Tensor(core::zeros({10, 4, 4}, Dtype::uint8))),
                       "[train] a VisionTransformer trains on 2 columns of examples, got 1", Error);
  const data::TensorDataset uneven{
      {Tensor(core::zeros({10, 4, 4}, Dtype::uint8)), Tensor(core::zeros({9}, Dtype::int64))}};
  CHECK_THROWS_WITH_AS(models::Trainer(tiny_vit(), small_batches(), uneven, {}),
                       doctest::Contains("one row per example"), Error);
  const data::TensorDataset float_labels{{Tensor(core::zeros({10, 4, 4}, Dtype::uint8)), Tensor(core::zeros({10}))}};
  models::Trainer wrong(tiny_vit(), small_batches(), float_labels, {});
  CHECK_THROWS_WITH_AS(wrong.step(), doctest::Contains("labels must be int64 [4], one per image"), Error);
}
