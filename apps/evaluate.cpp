// `axiom eval`: scores a trained model on a whole test set, with a progress line: an image model's
// exact bits per dimension (every pixel of every channel of every image), or a classifier's
// accuracy (and its mean cross-entropy). Under mpirun the ranks split the examples and add up their
// sums (models::evaluate): the figure of one process, sooner; rank 0 prints.
#include <cstdio>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "apps/commands.h"
#include "apps/progress.h"
#include "core/error.h"
#include "data/datasets.h"
#include "models/models.h"

namespace axiom::apps {

namespace {

// The data to evaluate on: as asked, else the run's own (a bare weights file: fashion-mnist).
data::DatasetOptions dataset_of(const EvalCommand& c, std::string& name) {
  name = c.data;
  std::string root = c.data_dir;
  if (name.empty() && std::filesystem::is_directory(c.checkpoint)) {
    const models::TrainingOptions run = models::read_checkpoint(c.checkpoint).options;
    name = run.data;
    if (root.empty()) root = run.data_dir;
  }
  if (name.empty()) name = "fashion-mnist";
  return {.root = root};
}

// The examples the model is scored on, the first `limit` of them (0: all): an image model's
// images, or a classifier's images and labels.
data::TensorDataset examples_of(const EvalCommand& c, const models::ModelConfig& config, std::string& name) {
  data::DatasetOptions where = dataset_of(c, name);
  data::TensorDataset examples;
  if (const auto* image = std::get_if<models::ImageModelConfig>(&config)) {
    where.frames = image->channels, where.canvas = image->height;
    examples.columns = {data::load_images(name, c.split, where)};
  } else {
    const data::ImageDataset labelled = data::load_labelled(name, c.split, where);
    examples.columns = {labelled.images, labelled.labels};
  }
  const int64_t n = examples.columns[0].size(0), count = c.limit > 0 ? std::min(c.limit, n) : n;
  for (Tensor& column : examples.columns) column = column.narrow(0, 0, count);
  return examples;
}

void print_result(const EvalCommand& c, const std::string& name, bool classifier, int64_t examples,
                  const models::Score& score, double seconds) {
  if (c.json) {
    nlohmann::ordered_json j = {{"checkpoint", c.checkpoint}, {"data", name}, {"split", c.split}, {"images", examples}};
    if (classifier) {
      j["accuracy"] = score.accuracy(), j["loss"] = score.mean_loss();
    } else {
      j["values"] = score.count, j["bits_per_dim"] = score.mean_loss();
    }
    j["seconds"] = seconds;
    std::printf("%s\n", j.dump().c_str());
  } else if (classifier) {
    std::printf("%s %s: %.2f%% accuracy over %lld images (cross-entropy %.4f nats) in %s\n", name.c_str(),
                c.split.c_str(), 100 * score.accuracy(), static_cast<long long>(examples), score.mean_loss(),
                format_duration(seconds).c_str());
  } else {
    std::printf("%s %s: %.4f bits/dim over %lld images (%lld values) in %s\n", name.c_str(), c.split.c_str(),
                score.mean_loss(), static_cast<long long>(examples), static_cast<long long>(score.count),
                format_duration(seconds).c_str());
  }
}

}  // namespace

int evaluate(const EvalCommand& c) {
  if (c.batch_size <= 0) throw Error("eval", "--batch must be positive, got ", c.batch_size);
  if (c.limit < 0) throw Error("eval", "--limit must be >= 0, got ", c.limit);
  const Device device = device_of("eval", c.device);
  const auto [config, model] = models::load_learner(c.checkpoint);
  if (std::holds_alternative<models::TranslatorConfig>(config)) {
    throw Error("eval", "'", c.checkpoint, "' holds a translator; axiom eval scores image models and classifiers");
  }
  model->to(device);
  std::string name;
  const data::TensorDataset examples = examples_of(c, config, name);
  const int64_t n = examples.columns[0].size(0), batch = std::min(c.batch_size, n);
  models::check_fits(models::evaluation_memory(config, batch, {.device = device}), "eval",
                     "evaluating " + std::to_string(batch) + " images at a time", "use a smaller --batch",
                     world().local_size(), device);

  Communicator& comm = world();
  StatusLine line(comm.rank() == 0);
  Stopwatch clock;
  const auto show = [&](int64_t done, int64_t total) {
    const double eta = clock.seconds() / static_cast<double>(done) * static_cast<double>(total - done);
    line.show("evaluating " + progress_bar(done, total) + " " + std::to_string(done) + "/" + std::to_string(total) +
                  " images  ETA " + format_duration(eta),
              false);
  };
  const models::Score score = models::evaluate(*model, examples, c.batch_size, show, comm);
  line.finish();
  if (comm.rank() == 0)
    print_result(c, name, std::holds_alternative<models::ClassifierConfig>(config), n, score, clock.seconds());
  return 0;
}

}  // namespace axiom::apps
