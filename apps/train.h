// The training run that `axiom train` and `axiom classify` share (train.cpp): a run directory with
// checkpoints, metrics and a loss curve, --resume, --minutes, signals, data parallelism.
#pragma once

#include <functional>

#include "apps/commands.h"
#include "models/training/training.h"

namespace axiom::apps {

// What a command asks of a run.
struct RunRequest {
  const char* command;      // "train" or "classify": errors and hints name it
  bool classifier = false;  // what it trains: a classifier, or an image model
  // The config of a new run: called when a run starts, and on --resume when config_given, to
  // compare with the run's own (a resumed run keeps its settings).
  std::function<models::ModelConfig()> config;
  bool config_given = false;                    // whether the user's flags said anything about the config
  std::function<void(models::Trainer&)> after;  // run once training has stopped (may be empty)
};

// Trains as `command` asks; returns the process's exit code (128 + the signal that stopped it).
int train_run(const TrainCommand& command, const RunRequest& request);

// The examples a model trains and is scored on (`split`: "train" or "test"): an image model's
// images, or a classifier's images and labels, from the options' dataset.
data::TensorDataset examples_of(const models::TrainingOptions& o, const models::ModelConfig& config,
                                const std::string& split);

}  // namespace axiom::apps
