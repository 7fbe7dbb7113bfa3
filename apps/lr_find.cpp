// `axiom lr-find`: the learning-rate range test (models/training/lr_find.h) from a fresh model
// (an image model's preset, or a classifier with classify's default sizes), on the training
// images. It writes, into a new or empty --out, lr_find.csv (step, lr, loss, smoothed) and
// lr_find.png (the losses against log10 of the rate), and prints the suggested rate and its rule.
// It makes no run: no checkpoint, no metrics, nothing in any run's directory.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "apps/commands.h"
#include "apps/plot.h"
#include "apps/train.h"
#include "core/error.h"
#include "core/formats/atomic_file.h"
#include "models/models.h"

namespace axiom::apps {

namespace fs = std::filesystem;

namespace {

// --out is new or empty: lr-find writes only where nothing is.
void check_out(const std::string& out) {
  std::error_code ec;
  if (!fs::exists(out, ec)) return;
  if (!fs::is_directory(out, ec) || !fs::is_empty(out, ec)) {
    throw Error("lr-find", "--out '", out, "' is not a new or empty directory; axiom writes only where nothing is");
  }
}

models::ModelConfig config_of(const LrFindCommand& c) {
  if (!c.model) return models::load_config(c.config);
  ClassifyCommand classify;  // classify's default sizes
  classify.model = *c.model;
  return classifier_config_of(classify);
}

// train's or classify's defaults: Adam with batch 32, or AdamW (weight decay 0.05) with batch 64.
models::TrainingOptions options_of(const LrFindCommand& c) {
  const bool classifier = c.model.has_value();
  models::TrainingOptions o;
  o.data = c.data.empty() ? "fashion-mnist" : c.data, o.data_dir = c.data_dir, o.seed = c.seed;
  o.batch_size = c.batch_size > 0 ? c.batch_size : classifier ? 64 : 32;
  if (classifier) o.weight_decay = 0.05;
  return o;
}

std::string csv_of(const models::LrRange& range) {
  std::ostringstream out;
  out.precision(9);
  out << "step,lr,loss,smoothed\n";
  for (size_t i = 0; i < range.lrs.size(); ++i) {
    out << i << ',' << range.lrs[i] << ',' << range.losses[i] << ',' << range.smoothed[i] << '\n';
  }
  return out.str();
}

void plot(const std::string& path, const models::LrRange& range, const char* unit) {
  std::vector<double> log_lrs;
  for (const double lr : range.lrs) log_lrs.push_back(std::log10(lr));
  const std::vector<double> suggestion_x(2, std::log10(range.suggestion));
  const auto [low, high] = std::minmax_element(range.losses.begin(), range.losses.end());
  plot_curves(path,
              {{"loss of each batch", log_lrs, range.losses},
               {"smoothed", log_lrs, range.smoothed},
               {"suggested rate", suggestion_x, {*low, *high}}},
              "learning-rate range test", "log10 of the learning rate", unit);
}

}  // namespace

int lr_find(const LrFindCommand& c) {
  check_out(c.out);
  const models::ModelConfig config = config_of(c);
  const models::TrainingOptions options = options_of(c);
  options.validate();
  const models::LrRangeOptions range_options{.start = c.start, .end = c.end, .steps = c.steps};
  const models::LrRange range =
      models::lr_range_test(config, options, examples_of(options, config, "train"), range_options);
  fs::create_directories(c.out);
  core::write_file_atomically((fs::path(c.out) / "lr_find.csv").string(), csv_of(range), "lr-find");
  plot((fs::path(c.out) / "lr_find.png").string(), range, models::loss_unit(config));
  std::printf("suggested learning rate: %.3g (%s)\n", range.suggestion, range.rule.c_str());
  std::printf("%zu steps from %.3g to %.3g%s; the curve: %s/lr_find.png, %s/lr_find.csv\n", range.lrs.size(),
              range.lrs.front(), range.lrs.back(), range.diverged ? " (stopped: the loss diverged)" : "", c.out.c_str(),
              c.out.c_str());
  return 0;
}

}  // namespace axiom::apps
