// `axiom classify`: trains a classifier of Fashion-MNIST's (or MNIST's) labels, a Vision
// Transformer or a recurrent network reading rows (models/classifiers.h), as `axiom train` trains
// its models (train_run, train.h: a run directory with checkpoints, metrics and a loss curve,
// --resume, --minutes, signals), then prints its accuracy on the test images. The defaults:
// AdamW, a linear warmup and a linear decay to 0 at the last step, one seed.
// `axiom eval --checkpoint DIR` scores the run's classifier again.
#include <algorithm>
#include <cstdio>

#include "apps/commands.h"
#include "apps/progress.h"
#include "apps/train.h"
#include "core/error.h"
#include "data/datasets.h"
#include "models/models.h"

namespace axiom::apps {

models::ClassifierConfig classifier_config_of(const ClassifyCommand& c) {
  models::ClassifierConfig config;
  config.classifier = c.model, config.features = c.width, config.heads = c.heads, config.layers = c.layers,
  config.patch = c.patch;
  config.validate();
  return config;
}

namespace {

bool config_flags_given(const ClassifyCommand& c) {
  for (const char* flag : {"--model", "--width", "--heads", "--layers", "--patch"}) {
    if (c.run.was_given(flag)) return true;
  }
  return false;
}

// The share of the first `limit` test images (0: all) whose most likely class is their label.
void print_test_accuracy(const ClassifyCommand& c, models::Trainer& trainer) {
  const models::TrainingOptions& o = trainer.options();
  const data::ImageDataset test = data::load_labelled(o.data, "test", {.root = o.data_dir});
  const int64_t count = c.limit > 0 ? std::min(c.limit, test.size()) : test.size();
  Stopwatch clock;
  const models::Score score = models::evaluate(
      trainer.model(), data::TensorDataset{{test.images.narrow(0, 0, count), test.labels.narrow(0, 0, count)}}, 500, {},
      trainer.communicator());
  if (trainer.communicator().rank() != 0) return;
  std::printf("%s test: %.2f%% accuracy over %lld images (%s, step %lld of %lld images a batch; scored in %s)\n",
              o.data.c_str(), 100 * score.accuracy(), static_cast<long long>(count), trainer.model().name(),
              static_cast<long long>(trainer.steps_done()), static_cast<long long>(o.batch_size),
              format_duration(clock.seconds()).c_str());
}

}  // namespace

int classify(const ClassifyCommand& c) {
  return train_run(c.run, {.command = "classify",
                           .classifier = true,
                           .config = [&] { return models::ModelConfig(classifier_config_of(c)); },
                           .config_given = config_flags_given(c),
                           .after = [&](models::Trainer& trainer) { print_test_accuracy(c, trainer); }});
}

}  // namespace axiom::apps
