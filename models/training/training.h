// Training a model on a dataset, and the checkpoints that let a run stop and continue exactly where
// it stopped. The model is any Learner (learner.h) that a ModelConfig describes (model_config.h):
// an image model (an AxialTransformer or a RasterTransformer) on images, or a classifier on images
// and their labels.
//
//   models::Trainer trainer(config, options, train_images);   // a new run
//   while (trainer.steps_done() < 500) {
//     const double bits = trainer.step();                     // one batch, one Adam update
//   }
//   trainer.save("runs/small");                               // a checkpoint, written atomically
//   ...
//   models::Trainer resumed(models::read_checkpoint("runs/small"), train_images);  // at step 500
//
//   models::Trainer reader(classifier_config, options, data::TensorDataset{{images, labels}}, {});
//
// Why resuming is exact: everything that decides step s is either saved or a pure function of s.
// - The batch: step s trains on batch s mod B of epoch s / B of a DataLoader shuffled from the seed.
// - The learning rate: a linear warmup, then constant or a decay that ends at the run's last step
//   (optim::Schedule), a function of s.
// - The model's random numbers (the channel each example trains on, dropout) come from one
//   generator, whose counter is saved; Adam's moments and step counts are saved.
// The optimizer is Adam, or AdamW when weight_decay > 0.
// So N steps, a save, a load and N more steps give, bit for bit, the weights of 2N steps in one go
// (with the same number of threads and processes: a different split of a sum rounds differently).
//
// A checkpoint directory:
//   checkpoint.json                   {"format": "axiom-checkpoint", "version": 1, "step": 500,
//                                      "model": "model-000500.safetensors",
//                                      "optimizer": "optimizer-000500.safetensors",
//                                      "config": {...}, "training": {...}, "rng": {"seed": 0, "offset": 123}}
//   model-000500.safetensors          the weights (metadata: "config" and "step": readable alone)
//   optimizer-000500.safetensors      Adam's state (metadata: "optimizer")
// Each file is written atomically (core/formats/atomic_file.h), the tensors first and checkpoint.json
// last: the JSON is the commit point. A crash at any moment leaves the previous checkpoint whole;
// the files that the previous checkpoint.json recorded are removed only after the new JSON is in place
// (no other file is ever removed: a model-best.safetensors of the user's beside a run stays).
// Before the tensors, checkpoint.pending.json records the names this save will write; it goes
// when the save commits. A save that fails removes what it wrote; one that is killed halfway
// leaves its files to remove_uncommitted_checkpoint_files, which the next start runs.
#pragma once

#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "../../core/distributed/communicator.h"
#include "../../data/loader.h"
#include "../model_config.h"
#include "../../optim/optim.h"

namespace axiom::models {

// What the learning rate does after the warmup: stays at lr, or decays from lr to 0 at the run's
// last step, along a straight line or half a cosine. Written "constant", "linear" or "cosine".
enum class LrSchedule { constant, linear, cosine };
const char* name_of(LrSchedule schedule);
std::vector<std::string> lr_schedule_names();  // "constant", "linear", "cosine": for a command's flag
// The schedule called `name`; an Error (op, then "<what> must be \"constant\", ...") for another name.
LrSchedule lr_schedule_named(const std::string& name, const char* op, const std::string& what);

struct TrainingOptions {
  std::string data = "fashion-mnist";  // a name from data/datasets.h
  std::string data_dir;                // "" = the dataset's default place
  int64_t batch_size = 32;
  double lr = 1e-3;  // Adam's peak rate, reached at the end of the warmup
  double beta1 = 0.9, beta2 = 0.98;
  int64_t warmup_steps = 200;  // linear from 0 to lr over these steps
  // A decaying run's length is part of the run: it ends where the rate reaches 0.
  LrSchedule schedule = LrSchedule::constant;
  int64_t steps = 0;         // the run's length, for linear and cosine; 0 for constant
  double max_grad_norm = 0;  // clip the gradients' global norm to this; 0 = no clipping
  double weight_decay = 0;   // AdamW's decoupled weight decay; 0 = Adam
  uint64_t seed = 0;         // the initial weights, the batch order, channels and dropout
  // Early stopping (early_stopping.h), which the loop of `axiom train` applies: stop after this
  // many held-out evaluations without an improvement of more than min_delta; 0 = never.
  int64_t patience = 0;
  double min_delta = 0;

  void validate() const;  // an Error names the bad field and value
  std::string to_json() const;
};
TrainingOptions training_options_from_json(const std::string& text, const std::string& origin);

// A checkpoint directory, read and checked (the tensors stay in their files until loaded).
struct Checkpoint {
  std::string dir;
  int64_t step = 0;
  ModelConfig config;
  TrainingOptions options;
  uint64_t rng_seed = 0, rng_offset = 0;
  std::string model_file, optimizer_file;  // paths
};
Checkpoint read_checkpoint(const std::string& dir);

// Files of `dir` that checkpoint.pending.json records and checkpoint.json does not: written by a
// save that never committed. Removing them (and the record) is safe when no save is running.
std::vector<std::string> uncommitted_checkpoint_files(const std::string& dir);
// Whether `name` is the name of a checkpoint's tensor file: model-NNNNNN.safetensors or optimizer-NNNNNN.safetensors.
bool is_checkpoint_file_name(const std::string& name);
void remove_uncommitted_checkpoint_files(const std::string& dir);

// The model of a checkpoint directory, or of a model-*.safetensors file (its metadata holds the
// config), ready for evaluation (eval mode), and the config it was made from.
struct LoadedModel {
  ModelConfig config;
  std::unique_ptr<Learner> model;
};
LoadedModel load_learner(const std::string& path);
// load_learner's model, which must be an image model (an Error names what it is otherwise): for sampling.
std::unique_ptr<ImageModel> load_model(const std::string& path);

// The score of every example of `examples` (each column [N, ...]), `batch_size` examples at a
// time, without a graph, in eval mode (and back to the mode it was in). progress(done, total) is
// called after each batch. In a data-parallel job (`comm` of more than one rank), rank r scores
// its contiguous share of the batches and the sums are added up: every rank returns the total of
// one process.
Score evaluate(Learner& model, const data::TensorDataset& examples, int64_t batch_size,
               const std::function<void(int64_t, int64_t)>& progress = {}, Communicator& comm = single_process());

// The exact likelihood of every image (all pixels, all channels), `batch_size` images at a time,
// without a graph, in eval mode (and back to the mode it was in). progress(done, total) is called
// after each batch.
// In a data-parallel job (`comm` of more than one rank), rank r evaluates its contiguous share of
// the batches and the sums are added up: every rank returns the total of one process.
Likelihood evaluate_images(ImageModel& model, const Tensor& images, int64_t batch_size,
                           const std::function<void(int64_t, int64_t)>& progress = {},
                           Communicator& comm = single_process());

// Where a Trainer runs.
struct Placement {
  Device device = Device::cpu();  // of the model and the optimizer's state
  Dtype dtype = Dtype::float32;   // of the parameters (float64 for checks of exactness)
  // The data-parallel job this trainer is one rank of (world() under mpirun); null: this
  // process alone. Every rank makes a Trainer with the same arguments and calls step() and
  // save() as often as the others.
  Communicator* communicator = nullptr;
  // Transformer blocks whose inside is recomputed in the backward pass instead of kept
  // (Learner::set_checkpoint_blocks): less memory, the same numbers, a slower step.
  int64_t checkpoint_blocks = 0;
};

class Trainer {
 public:
  // A new run on `examples`: the columns the model trains on (Learner::columns), each [N, ...];
  // an image model's are the images alone, uint8 [N, H, W] or [N, C, H, W] as its config
  // describes them. The model and the optimizer's state live on `device`; the examples stay where
  // they are (the CPU), and each batch is moved. The initial weights and every random number are
  // drawn on the CPU, so a run starts from the same weights and draws the same numbers on every device.
  Trainer(const ModelConfig& config, const TrainingOptions& options, data::TensorDataset examples,
          const Placement& placement);
  // An image model's run on `images`.
  Trainer(const ModelConfig& config, const TrainingOptions& options, Tensor images, Device device = Device::cpu())
      : Trainer(config, options, data::TensorDataset{{std::move(images)}}, Placement{.device = device}) {}
  Trainer(const ModelConfig& config, const TrainingOptions& options, Tensor images, const Placement& placement)
      : Trainer(config, options, data::TensorDataset{{std::move(images)}}, placement) {}
  // The run saved in `checkpoint`, on the same examples; it may continue on another device, or on
  // another number of processes.
  Trainer(const Checkpoint& checkpoint, data::TensorDataset examples, const Placement& placement);
  Trainer(const Checkpoint& checkpoint, Tensor images, Device device = Device::cpu())
      : Trainer(checkpoint, data::TensorDataset{{std::move(images)}}, Placement{.device = device}) {}
  Trainer(const Checkpoint& checkpoint, Tensor images, const Placement& placement)
      : Trainer(checkpoint, data::TensorDataset{{std::move(images)}}, placement) {}
  // The model points at the trainer's generator: a trainer stays where it was made.
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // Trains on the next batch (one forward, backward and Adam update); returns its loss (bits/dim
  // for an image model, nats for a classifier: loss_unit(config())). A loss or a weight that is not finite after the
  // update is an Error (the last checkpoint is untouched; the weights in memory are then not to be used). The loss and
  // the weights' check are read together, after the update: on a GPU, one wait per step. In a data-parallel job, rank r
  // of N trains on examples [r B/N, (r+1) B/N) of the batch that one process would take, draws the channels and dropout
  // masks that one process would draw for them (BatchShare, core/distributed/batch_share.h), and averages the gradients
  // with the others (optim::GradientAverager): N processes take the single-process step, up to the order of float sums.
  // The loss returned is the whole batch's, on every rank.
  double step();
  // The same step at the learning rate `lr` instead of the schedule's: for the learning-rate range
  // test (lr_find.h), whose trainer is never checkpointed.
  double step_with_lr(double lr);
  // A checkpoint of the run as it is now. In a data-parallel job rank 0 writes it (a checkpoint
  // does not depend on N) and every rank returns once it is written, or throws if it failed.
  // Weights that hold NaN or an infinity are never written (an Error; the last checkpoint stays).
  void save(const std::string& dir) const;

  int64_t steps_done() const { return step_; }
  // The global norm of the last step's gradients (averaged over the ranks), before any clipping:
  // measured when asked for (a pass over every gradient; on a GPU, a few launches for each) or when
  // clipping needs it, NaN otherwise.
  void measure_gradient_norm(bool on = true) { gradient_norm_wanted_ = on; }
  double last_gradient_norm() const { return last_gradient_norm_; }
  double lr_at(int64_t step) const { return schedule_.lr(step); }
  const ModelConfig& config() const { return config_; }
  const TrainingOptions& options() const { return options_; }
  Learner& model() { return *model_; }
  ImageModel& image_model();  // model(), which must be an image model (an Error otherwise)
  Communicator& communicator() const { return comm_; }
  const optim::CommunicationStats& communication() const { return averager_->stats(); }
  const optim::Adam& optimizer() const { return *optimizer_; }
  // Bytes held by live tensors (allocation_stats, core/storage.h) in the last step, when its forward pass
  // began and when it ended: the difference is what the graph keeps for the backward pass.
  struct ForwardMemory {
    int64_t before = 0, after = 0;
  };
  const ForwardMemory& last_forward_memory() const { return forward_memory_; }

 private:
  void write_checkpoint(const std::string& dir) const;
  void write_checkpoint_json(const std::string& dir, const std::string& model, const std::string& optimizer,
                             const std::string& config) const;  // the commit point
  // An Error naming the first parameter that holds NaN or an infinity: a diverged run must stop
  // before any checkpoint of it replaces the last good one.
  void check_weights_finite(int64_t after_step) const;
  [[noreturn]] void throw_weights_not_finite(int64_t after_step) const;

  ModelConfig config_;
  TrainingOptions options_;
  Generator gen_;  // declared before the model, which keeps a pointer to it (dropout)
  std::unique_ptr<Learner> model_;
  std::unique_ptr<optim::Adam> optimizer_;
  optim::Schedule schedule_;
  data::DataLoader loader_;
  Communicator& comm_;
  std::unique_ptr<optim::GradientAverager> averager_;
  ForwardMemory forward_memory_;
  int64_t step_ = 0;
  bool gradient_norm_wanted_ = false;
  double last_gradient_norm_ = std::numeric_limits<double>::quiet_NaN();
};

}  // namespace axiom::models
