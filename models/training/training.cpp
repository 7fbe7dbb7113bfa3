#include "models/training/training.h"

#include <cmath>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "core/distributed/batch_share.h"
#include "core/error.h"
#include "core/formats/json.h"
#include "core/factory.h"
#include "core/launch.h"
#include "autograd/internal.h"
#include "autograd/profiler.h"

namespace axiom::models {

namespace {

// A float64 scalar on the model's device: how many values of all the weights are NaN or infinite,
// counted there (on a GPU, a few launches for every weight at once; no copy).
core::Tensor weights_check(const Learner& model) {
  std::vector<core::Tensor> weights;
  for (const auto& [name, p] : model.named_parameters()) weights.push_back(core_tensor(p));
  return weights.empty() ? core::zeros({}, Dtype::float64, model.device()) : core::count_non_finite(weights);
}

// The loader's shuffles use a seed of their own, so that its random words are not the ones the
// generator draws for the weights from the same seed.
constexpr uint64_t kLoaderSeedOffset = 0x9E3779B97F4A7C15ull;

// images must be the config's shape: [N, H, W] for one channel, [N, C, H, W] for more.
void check_images(const ImageModelConfig& c, const Tensor& images) {
  const Shape want = c.channels == 1 ? Shape{c.height, c.width} : Shape{c.channels, c.height, c.width};
  const bool shape_ok = images.dim() == static_cast<int64_t>(want.size()) + 1 &&
                        Shape(images.shape().begin() + 1, images.shape().end()) == want;
  if (images.dtype() != Dtype::uint8 || !shape_ok || images.size(0) == 0) {
    throw Error("train", "the images are ", images.dtype(), " ", images.shape(), " but the config wants uint8 [N, ",
                c.channels == 1 ? "" : std::to_string(c.channels) + ", ", c.height, ", ", c.width, "] with N > 0");
  }
}

// The examples must be the model's columns, defined, each of N > 0 rows; an image model's images
// also the config's shape (a classifier checks its images when it reads them).
data::TensorDataset checked_examples(const ModelConfig& config, const Learner& model, data::TensorDataset examples) {
  const std::vector<Tensor>& columns = examples.columns;
  if (static_cast<int64_t>(columns.size()) != model.columns()) {
    throw Error("train", "a ", model.name(), " trains on ", model.columns(), " columns of examples, got ",
                columns.size());
  }
  for (const Tensor& column : columns) {
    if (!column.defined()) throw Error("train", "the examples hold an undefined tensor");
    if (column.dim() == 0 || column.size(0) != columns[0].size(0)) {
      throw Error("train", "every column of the examples must have one row per example, got ", column.shape(),
                  " beside ", columns[0].shape());
    }
  }
  if (const auto* image = std::get_if<ImageModelConfig>(&config)) check_images(*image, columns[0]);
  if (columns[0].size(0) == 0) throw Error("train", "there are no examples to train on");
  return examples;
}

const TrainingOptions& validated(const TrainingOptions& options) {
  options.validate();
  return options;
}

// The training options' JSON keys, in the order to_json writes them.
constexpr core::EnumNames<LrSchedule, 3> kScheduleNames{{
    {LrSchedule::constant, "constant"},
    {LrSchedule::linear, "linear"},
    {LrSchedule::cosine, "cosine"},
}};

const std::array<core::JsonField<TrainingOptions>, 14> kOptionFields{{
    {"data", &TrainingOptions::data},
    {"data_dir", &TrainingOptions::data_dir},
    {"batch_size", &TrainingOptions::batch_size},
    {"lr", &TrainingOptions::lr},
    {"beta1", &TrainingOptions::beta1},
    {"beta2", &TrainingOptions::beta2},
    {"warmup_steps", &TrainingOptions::warmup_steps},
    {"schedule", core::enum_field<&TrainingOptions::schedule, kScheduleNames>()},
    {"steps", &TrainingOptions::steps},
    {"max_grad_norm", &TrainingOptions::max_grad_norm},
    {"weight_decay", &TrainingOptions::weight_decay},
    {"seed", &TrainingOptions::seed},
    {"patience", &TrainingOptions::patience},
    {"min_delta", &TrainingOptions::min_delta},
}};

// The rate of every step: the warmup, then the run's schedule (checked by validate()).
optim::Schedule schedule_of(const TrainingOptions& o) {
  const optim::Warmup warmup{.steps = o.warmup_steps};
  switch (o.schedule) {
    case LrSchedule::linear: return optim::Schedule::linear(o.lr, warmup, o.steps - o.warmup_steps);
    case LrSchedule::cosine: return optim::Schedule::cosine(o.lr, warmup, o.steps - o.warmup_steps);
    case LrSchedule::constant: break;
  }
  return optim::Schedule::constant(o.lr, warmup);
}

}  // namespace

const char* name_of(LrSchedule schedule) { return core::name_of(kScheduleNames, schedule); }

std::vector<std::string> lr_schedule_names() {
  std::vector<std::string> names;
  for (const auto& [schedule, name] : kScheduleNames) names.emplace_back(name);
  return names;
}

LrSchedule lr_schedule_named(const std::string& name, const char* op, const std::string& what) {
  LrSchedule schedule = LrSchedule::constant;
  if (!core::value_named(kScheduleNames, name, schedule)) {
    throw Error(op, what, " must be ", core::quoted_names(kScheduleNames), ", got \"", name, "\"");
  }
  return schedule;
}

void TrainingOptions::validate() const {
  if (data.empty()) throw Error("train", "data must name a dataset");
  if (batch_size <= 0) throw Error("train", "batch_size must be positive, got ", batch_size);
  if (!(lr > 0) || !std::isfinite(lr)) throw Error("train", "lr must be positive, got ", lr);
  if (!(beta1 >= 0 && beta1 < 1)) throw Error("train", "beta1 must be in [0, 1), got ", beta1);
  if (!(beta2 >= 0 && beta2 < 1)) throw Error("train", "beta2 must be in [0, 1), got ", beta2);
  if (warmup_steps < 0) throw Error("train", "warmup_steps must be >= 0, got ", warmup_steps);
  if (std::string_view(name_of(schedule)) == "?")
    throw Error("train", "schedule ", static_cast<int>(schedule), " is not a schedule");
  if (schedule == LrSchedule::constant && steps != 0) {
    throw Error("train", "a constant schedule has no length: steps must be 0, got ", steps);
  }
  if (schedule != LrSchedule::constant && steps <= warmup_steps) {
    throw Error("train", "a ", name_of(schedule), " schedule decays after the warmup: steps (", steps,
                ") must be greater than warmup_steps (", warmup_steps, ")");
  }
  if (!(max_grad_norm >= 0) || !std::isfinite(max_grad_norm))
    throw Error("train", "max_grad_norm must be >= 0, got ", max_grad_norm);
  if (!(weight_decay >= 0) || !std::isfinite(weight_decay))
    throw Error("train", "weight_decay must be >= 0, got ", weight_decay);
  if (patience < 0) throw Error("train", "patience must be >= 0 (0: no early stopping), got ", patience);
  if (!(min_delta >= 0) || !std::isfinite(min_delta)) throw Error("train", "min_delta must be >= 0, got ", min_delta);
  if (min_delta > 0 && patience == 0)
    throw Error("train", "min_delta ", min_delta, " needs a patience (early stopping)");
}

std::string TrainingOptions::to_json() const { return core::write_fields(*this, kOptionFields).dump(2); }

TrainingOptions training_options_from_json(const std::string& text, const std::string& origin) {
  return core::read_validated(text, kOptionFields, "train", origin, "training option");
}

// --- Trainer ----------------------------------------------------------------------------------------

namespace {
// The model, drawn on the CPU (the same first weights on every device); for the shape-only device,
// made there: nothing drawn (nn/init.h).
std::unique_ptr<Learner> model_for(const ModelConfig& config, Generator& gen, Device device) {
  if (device.type != DeviceType::meta) return make_model(config, gen);
  nn::init::MadeOn meta(device);
  return make_model(config, gen);
}
}  // namespace

Trainer::Trainer(const ModelConfig& config, const TrainingOptions& options, data::TensorDataset examples,
                 const Placement& placement)
    : config_(config),
      options_(validated(options)),
      gen_(options_.seed),
      model_(model_for(config_, gen_, placement.device)),
      schedule_(schedule_of(options_)),
      loader_(checked_examples(config_, *model_, std::move(examples)), {.batch_size = options_.batch_size,
                                                                        .shuffle = true,
                                                                        .drop_last = true,
                                                                        .seed = options_.seed + kLoaderSeedOffset,
                                                                        .prefetch = false}),
      comm_(placement.communicator ? *placement.communicator : single_process()) {
  if (loader_.size() == 0) {
    throw Error("train", "a batch of ", options_.batch_size, " needs at least that many images, got ",
                loader_.examples());
  }
  if (options_.batch_size % comm_.size() != 0) {
    throw Error("train", "the batch of ", options_.batch_size, " images cannot be split evenly over ", comm_.size(),
                " processes; choose a batch that ", comm_.size(), " divides");
  }
  model_->to(placement.dtype);
  model_->to(placement.device);
  model_->set_checkpoint_blocks(placement.checkpoint_blocks);
  optimizer_ = std::make_unique<optim::Adam>(model_->named_parameters(),
                                             optim::AdamOptions{.lr = options_.lr,
                                                                .betas = {options_.beta1, options_.beta2},
                                                                .weight_decay = options_.weight_decay,
                                                                .decoupled_weight_decay = options_.weight_decay > 0});
  averager_ = std::make_unique<optim::GradientAverager>(model_->named_parameters(), comm_);
  optim::broadcast_parameters(model_->named_parameters(), comm_);  // one set of weights, rank 0's
}

Trainer::Trainer(const Checkpoint& checkpoint, data::TensorDataset examples, const Placement& placement)
    : Trainer(checkpoint.config, checkpoint.options, std::move(examples), placement) {
  model_->load(checkpoint.model_file);
  optimizer_->load(checkpoint.optimizer_file);
  gen_.set_state(checkpoint.rng_seed, checkpoint.rng_offset);
  step_ = checkpoint.step;
  optim::broadcast_parameters(model_->named_parameters(), comm_);
}

ImageModel& Trainer::image_model() {
  auto* image = dynamic_cast<ImageModel*>(model_.get());
  if (!image) throw Error("train", "this run's model is a ", model_->name(), ", not an image model");
  return *image;
}

namespace {
// The mean over the ranks of a value each computed (each rank's share is the same size). The
// communicator works on numbers (core::Tensor), as the optimizers do.
double mean_over_ranks(Communicator& comm, double value) {
  const core::Tensor all = core::from_vector<double>({value});
  comm.allreduce(all);
  return all.item() / comm.size();
}
}  // namespace

double Trainer::step() { return step_with_lr(schedule_.lr(step_)); }

// Each phase of a step is a ProfileRange (autograd/profiler.h): a box in a profile's trace.
double Trainer::step_with_lr(double lr) {
  if (!(lr >= 0) || !std::isfinite(lr)) throw Error("train", "a step's learning rate must be >= 0, got ", lr);
  std::vector<Tensor> mine;  // this rank's share of every column
  int64_t share = 0, first = 0, batch_size = 0;
  {
    const ProfileRange phase("data");
    const int64_t batches = loader_.size();
    const data::Batch batch = loader_.batch(step_ / batches, step_ % batches);  // each column [B, ...]
    batch_size = batch.size();
    share = batch_size / comm_.size(), first = comm_.rank() * share;
    for (const Tensor& column : batch.columns) mine.push_back(column.narrow(0, first, share));
  }
  model_->train();
  optimizer_->set_lr(lr);
  optimizer_->zero_grad();
  Tensor loss;                    // of this rank's share
  core::Tensor gradient_squares;  // [1] float64
  forward_memory_.before = core::allocation_stats().live_bytes;
  {
    const ProfileRange phase("forward");
    const core::BatchShare draws(gen_, first, share, batch_size);  // the channels and dropout of the whole batch
    loss = model_->batch_loss(mine, gen_);
  }
  forward_memory_.after = core::allocation_stats().live_bytes;
  {
    const ProfileRange phase("backward");
    averager_->backward(loss);  // loss.backward(), gradients averaged over the ranks
  }
  {
    const ProfileRange phase("optimizer");
    // the norm of the averaged gradients (the same on every rank), before clipping
    const bool clip = options_.max_grad_norm > 0;
    if (clip || gradient_norm_wanted_) gradient_squares = optim::gradient_sum_of_squares(optimizer_->parameters());
    if (clip) optim::clip_grad_norm(optimizer_->parameters(), options_.max_grad_norm, gradient_squares);
    optimizer_->step();
  }
  // The step's one copy back to the host (on a GPU, a wait for its queue): the loss, the weights'
  // check and the gradients' norm, read together. A loss that is not finite is reported first; the
  // weights in memory are then not to be used (a checkpoint refuses them), the last checkpoint is.
  const ProfileRange phase("check");
  std::vector<core::Tensor> read = {core_tensor(loss).to(Dtype::float64).reshape({1}),
                                    weights_check(*model_).reshape({1})};
  if (gradient_squares.defined()) read.push_back(gradient_squares);
  const core::Tensor readings = core::concat(read, 0).to(Device::cpu());
  last_gradient_norm_ =
      gradient_squares.defined() ? std::sqrt(readings.at({2})) : std::numeric_limits<double>::quiet_NaN();
  const double mean = mean_over_ranks(comm_, readings.at({0}));  // the same on every rank, so all stop together
  if (!std::isfinite(mean)) {
    throw Error("train", "the loss is ", mean, " at step ", step_, " (lr ", optimizer_->lr(),
                "); try a smaller --lr or --clip, and resume from the last checkpoint");
  }
  if (readings.at({1}) != 0) throw_weights_not_finite(step_ + 1);
  ++step_;
  return mean;
}

void Trainer::check_weights_finite(int64_t after_step) const {
  if (weights_check(*model_).item() != 0) throw_weights_not_finite(after_step);
}

void Trainer::throw_weights_not_finite(int64_t after_step) const {
  std::string name = "?";
  for (const auto& [parameter, p] : model_->named_parameters()) {
    if (core::count_non_finite({core_tensor(p)}).item() != 0) {
      name = parameter;
      break;
    }
  }
  throw Error("train", "after step ", after_step, " the weights '", name,
              "' hold NaN or infinite values: the training diverged (lr ", options_.lr,
              "); the last checkpoint is kept: resume from it with a smaller --lr or with --clip");
}

namespace {

// Runs score(start, count) on this rank's contiguous share of the batches of n examples, and returns
// the sum of what it gives, added up over the ranks by sum_over_ranks. Every batch is the one a
// single process would score; only the order in which the sums are added differs.
template <typename Sums, typename Scorer, typename Reducer>
Sums score_in_batches(Learner& model, int64_t n, int64_t batch_size,
                      const std::function<void(int64_t, int64_t)>& progress, Communicator& comm, const Scorer& score,
                      const Reducer& sum_over_ranks) {
  if (batch_size <= 0) throw Error("evaluate", "batch_size must be positive, got ", batch_size);
  if (n == 0) throw Error("evaluate", "no examples to evaluate");
  const bool was_training = model.is_training();
  model.eval();
  const int64_t batches = (n + batch_size - 1) / batch_size;
  const int64_t first_batch = batches * comm.rank() / comm.size(),
                end_batch = batches * (comm.rank() + 1) / comm.size();
  const int64_t first = first_batch * batch_size, end = std::min(n, end_batch * batch_size);
  Sums mine;
  for (int64_t start = first; start < end; start += batch_size) {
    score(mine, start, std::min(batch_size, end - start));
    if (progress) progress(std::min(start + batch_size, end) - first, end - first);
  }
  model.train(was_training);
  return sum_over_ranks(mine);
}

}  // namespace

Score evaluate(Learner& model, const data::TensorDataset& examples, int64_t batch_size,
               const std::function<void(int64_t, int64_t)>& progress, Communicator& comm) {
  if (static_cast<int64_t>(examples.columns.size()) != model.columns()) {
    throw Error("evaluate", "a ", model.name(), " scores ", model.columns(), " columns of examples, got ",
                examples.columns.size());
  }
  const int64_t n = examples.columns[0].dim() == 0 ? 0 : examples.columns[0].size(0);
  auto score = [&](Score& sums, int64_t start, int64_t count) {
    std::vector<Tensor> batch;
    for (const Tensor& column : examples.columns) batch.push_back(column.narrow(0, start, count));
    const Score part = model.batch_score(batch);
    sums.loss += part.loss, sums.count += part.count, sums.examples += part.examples, sums.correct += part.correct;
  };
  auto sum_over_ranks = [&](const Score& mine) {  // counts stay exact in a double up to 2^53
    const core::Tensor sums =
        core::from_vector<double>({mine.loss, static_cast<double>(mine.count), static_cast<double>(mine.examples),
                                   static_cast<double>(mine.correct)});
    comm.allreduce(sums);
    return Score{.loss = sums.at({0}),
                 .count = static_cast<int64_t>(sums.at({1})),
                 .examples = static_cast<int64_t>(sums.at({2})),
                 .correct = static_cast<int64_t>(sums.at({3}))};
  };
  return score_in_batches<Score>(model, n, batch_size, progress, comm, score, sum_over_ranks);
}

Likelihood evaluate_images(ImageModel& model, const Tensor& images, int64_t batch_size,
                           const std::function<void(int64_t, int64_t)>& progress, Communicator& comm) {
  if (images.dim() == 0 || images.size(0) == 0)
    throw Error("evaluate", "no images to evaluate (images ", images.shape(), ")");
  auto score = [&](Likelihood& sums, int64_t start, int64_t count) {
    const Likelihood part = model.evaluate(images.narrow(0, start, count));
    sums.nats += part.nats, sums.count += part.count;
  };
  auto sum_over_ranks = [&](const Likelihood& mine) {  // counts stay exact in a double up to 2^53
    const core::Tensor sums = core::from_vector<double>({mine.nats, static_cast<double>(mine.count)});
    comm.allreduce(sums);
    return Likelihood{sums.at({0}), static_cast<int64_t>(sums.at({1}))};
  };
  return score_in_batches<Likelihood>(model, images.size(0), batch_size, progress, comm, score, sum_over_ranks);
}

}  // namespace axiom::models
