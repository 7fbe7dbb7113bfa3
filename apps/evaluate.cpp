// `axiom eval`: the exact bits per dimension of a trained model on a whole test set (every pixel
// of every channel of every image), with a progress line. Under mpirun the ranks split the images
// and add up their sums (models::evaluate_images): the figure of one process, sooner; rank 0 prints.
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

}  // namespace

int evaluate(const EvalCommand& c) {
  if (c.batch_size <= 0) throw Error("eval", "--batch must be positive, got ", c.batch_size);
  if (c.limit < 0) throw Error("eval", "--limit must be >= 0, got ", c.limit);
  const core::Device device = device_of("eval", c.device);
  const std::unique_ptr<models::ImageModel> model = models::load_model(c.checkpoint);
  model->to(device);
  std::string name;
  data::DatasetOptions where = dataset_of(c, name);
  where.frames = model->config().channels, where.canvas = model->config().height;
  Tensor images = data::load_images(name, c.split, where);
  if (c.limit > 0) images = images.narrow(0, 0, std::min(c.limit, images.size(0)));
  const int64_t batch = std::min(c.batch_size, images.size(0));
  models::check_fits(models::evaluation_memory(model->config(), batch), "eval", "evaluating " + std::to_string(batch) + " images at a time",
                     "use a smaller --batch", core::world().local_size(), device);

  core::Communicator& comm = core::world();
  StatusLine line(comm.rank() == 0);
  Stopwatch clock;
  const auto show = [&](int64_t done, int64_t total) {
    const double eta = clock.seconds() / static_cast<double>(done) * static_cast<double>(total - done);
    line.show("evaluating " + progress_bar(done, total) + " " + std::to_string(done) + "/" + std::to_string(total) +
                  " images  ETA " + format_duration(eta),
              false);
  };
  const models::Likelihood result = models::evaluate_images(*model, images, c.batch_size, show, comm);
  line.finish();
  if (comm.rank() != 0) return 0;
  if (c.json) {
    const nlohmann::ordered_json j = {{"checkpoint", c.checkpoint}, {"data", name},          {"split", c.split},
                                      {"images", images.size(0)},   {"values", result.count}, {"bits_per_dim", result.bits_per_dim()},
                                      {"seconds", clock.seconds()}};
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("%s %s: %.4f bits/dim over %lld images (%lld values) in %s\n", name.c_str(), c.split.c_str(),
                result.bits_per_dim(), static_cast<long long>(images.size(0)), static_cast<long long>(result.count),
                format_duration(clock.seconds()).c_str());
  }
  return 0;
}

}  // namespace axiom::apps
