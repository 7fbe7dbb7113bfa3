// `axiom train`: trains an image model (an Axial Transformer, or a raster Transformer), with a
// progress line, periodic held-out evaluation, a metrics file, a loss curve and atomic
// checkpoints; Ctrl-C or SIGTERM stops after the current step and writes a checkpoint, and
// --resume continues exactly where a run stopped. A new run goes into a new or empty directory (or,
// with --force, one whose files a run would not touch). `axiom classify` trains its classifiers
// through the same run (train_run, train.h).
//
// The run's directory (--out):
//   checkpoint.json, model-*.safetensors, optimizer-*.safetensors   the checkpoint (models/training/training.h)
//   metrics.jsonl   one JSON object a line: {"step": 12, "train_bits_per_dim": 6.1, "lr": 6e-5, "seconds": 2.4}
//                   after each step, {"step": 100, "held_out_bits_per_dim": 4.2} after each evaluation
//                   (a classifier's: "train_loss", "held_out_loss" in nats, and "held_out_accuracy")
//   loss.png        the curves of both, redrawn after each evaluation
//
// Under mpirun each rank trains on its share of every batch (models::Trainer); rank 0 alone
// prints, writes the metrics, the curve and the checkpoints. Every rank stops at the same step:
// they agree after each step on whether to stop (a signal on any rank, or rank 0's clock).
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

#include <nlohmann/json.hpp>

#include "apps/commands.h"
#include "apps/pictures.h"
#include "apps/progress.h"
#include "apps/run_directory.h"
#include "apps/run_log.h"
#include "apps/train.h"
#include "core/formats/atomic_file.h"
#include "core/error.h"
#include "core/factory.h"
#include "core/parallel.h"
#include "data/datasets.h"
#include "models/models.h"
#include "autograd/profiler.h"

namespace axiom::apps {

namespace fs = std::filesystem;

namespace {

// --- signals ----------------------------------------------------------------------------------------

volatile std::sig_atomic_t interrupted = 0;

// The first Ctrl-C (SIGINT) or SIGTERM (what `timeout`, job schedulers and `docker stop` send)
// asks the loop to stop after the step it is in; the handler then steps aside, so that a second
// signal ends the process at once (the last checkpoint stays whole: every write is atomic).
extern "C" void on_interrupt(int signal) {
  interrupted = signal;
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  static const char message[] =
      "\naxiom: stopping after this step to write a checkpoint (a second signal quits at once)\n";
  [[maybe_unused]] const ssize_t ignored = ::write(STDERR_FILENO, message, sizeof message - 1);
}

// Under mpirun, Ctrl-C ends the job at once (mpirun kills its ranks), but mpirun passes SIGUSR1 on
// to every rank: `kill -USR1 <mpirun's pid>` stops the job after the current step, with a checkpoint.
extern "C" void on_stop_request(int signal) { interrupted = signal; }

// --- starting or resuming ---------------------------------------------------------------------------

// A setting as the user would type it: strings as they are, numbers in the shortest form that
// reads back as the same value (4e-07, not to_string's 0.000000).
std::string as_typed(const std::string& text) { return text; }

template <typename Number>
std::string as_typed(Number value) {
  char text[32];
  const auto end = std::to_chars(text, text + sizeof text, value).ptr;
  return std::string(text, end);
}

// On --resume, a flag the user gave must agree with the run's own value: a run is one experiment.
// The values themselves are compared, so --lr 1e-7 differs from a run's 4e-7.
template <typename Value>
void check_same(const TrainCommand& c, const char* op, const char* flag, const Value& asked, const Value& run) {
  if (c.was_given(flag) && asked != run) {
    throw Error(op, flag, " ", as_typed(asked), " differs from the run's ", as_typed(run),
                "; a resumed run keeps its settings (or use a new --out)");
  }
}

void check_resume_flags(const TrainCommand& c, const RunRequest& request, const models::Checkpoint& run) {
  const char* op = request.command;
  const models::TrainingOptions& o = run.options;
  if (request.config_given && models::to_json(request.config()) != models::to_json(run.config)) {
    throw Error(op, "the model's flags (", c.was_given("--config") ? "--config " + c.config : std::string("its sizes"),
                ") differ from the run's config; a resumed run keeps its settings (or use a new --out)");
  }
  check_same(c, op, "--data", c.data, o.data);
  check_same(c, op, "--data-dir", c.data_dir, o.data_dir);
  check_same(c, op, "--batch", c.batch_size, o.batch_size);
  check_same(c, op, "--lr", c.lr, o.lr);
  check_same(c, op, "--beta1", c.beta1, o.beta1);
  check_same(c, op, "--beta2", c.beta2, o.beta2);
  check_same(c, op, "--warmup", c.warmup_steps, o.warmup_steps);
  check_same(c, op, "--schedule", c.schedule, std::string(models::name_of(o.schedule)));
  if (o.steps > 0 && c.was_given("--steps") && c.steps != o.steps) {  // a decaying run's length is part of the run
    throw Error(op, "--steps ", c.steps, " differs from the run's ", o.steps, ", where its ",
                models::name_of(o.schedule), " schedule ends; a resumed run keeps its settings (or use a new --out)");
  }
  check_same(c, op, "--clip", c.clip, o.max_grad_norm);
  check_same(c, op, "--weight-decay", c.weight_decay, o.weight_decay);
  check_same(c, op, "--seed", c.seed, o.seed);
  check_same(c, op, "--patience", c.patience, o.patience);
  check_same(c, op, "--min-delta", c.min_delta, o.min_delta);
}

models::TrainingOptions options_of(const TrainCommand& c, const char* op) {
  models::TrainingOptions o;
  o.data = c.data, o.data_dir = c.data_dir, o.batch_size = c.batch_size, o.lr = c.lr, o.beta1 = c.beta1,
  o.beta2 = c.beta2;
  // The default warmup fits any decaying run, whose length is part of it: at most a fifth of its
  // steps. (A constant schedule's run may be extended, so its default stays what it is: --steps
  // does not change it.) A --warmup the user gives is theirs; one that a decaying schedule cannot
  // follow stays an Error.
  o.schedule = models::lr_schedule_named(c.schedule, op, "--schedule");
  const bool decaying = o.schedule != models::LrSchedule::constant;
  o.warmup_steps = decaying && !c.was_given("--warmup") ? std::min(c.warmup_steps, c.steps / 5) : c.warmup_steps;
  o.steps = o.schedule == models::LrSchedule::constant ? 0 : c.steps;
  o.max_grad_norm = c.clip, o.weight_decay = c.weight_decay, o.seed = c.seed;
  o.patience = c.patience, o.min_delta = c.min_delta;
  return o;
}

// The step this invocation trains to: a decaying run's own length, else --steps.
int64_t target_step(const TrainCommand& c, const models::TrainingOptions& o) { return o.steps > 0 ? o.steps : c.steps; }

// The first `count` examples (or all, if fewer).
data::TensorDataset first_examples(const data::TensorDataset& examples, int64_t count) {
  data::TensorDataset first;
  for (const Tensor& column : examples.columns)
    first.columns.push_back(column.narrow(0, 0, std::min(count, column.size(0))));
  return first;
}

models::Placement placement_of(const TrainCommand& c, const char* op, Communicator& comm) {
  return {.device = device_of(op, c.device), .communicator = &comm, .checkpoint_blocks = c.checkpoint_blocks};
}

// Refuses, before anything is allocated, a run whose training step cannot fit in the device's
// memory (models/training/memory_budget.h: the step measured on the shape-only device).
void check_memory(const models::ModelConfig& model, const models::TrainingOptions& o, int64_t checkpoint_blocks,
                  Device device, Communicator& comm) {
  const int64_t share = o.batch_size / comm.size();                            // each process's images of every batch
  const bool image = std::holds_alternative<models::ImageModelConfig>(model);  // (a classifier recomputes no blocks)
  models::check_fits(
      models::training_memory(model, share, {.device = device, .checkpoint_blocks = checkpoint_blocks}), "train",
      "training with " + std::to_string(share) + " images a step" + (comm.size() > 1 ? " in each process" : ""),
      image ? "use a smaller --batch or config, or --checkpoint-blocks" : "use a smaller --batch, --width or --layers",
      comm.local_size(), device);
}

// A run that exists is only resumed; a new one goes into a directory that check_new_run_directory accepts.
void check_out(const TrainCommand& c, const char* op) {
  if (!has_checkpoint(c.out)) return check_new_run_directory(c.out, c.force);
  if (!c.resume) {
    throw Error(op, "'", c.out, "' already holds a run (step ", models::read_checkpoint(c.out).step,
                "); continue it with --resume, or choose another --out");
  }
}

// The run in `dir` must be of the kind the command trains: an image model for train, a classifier for classify.
void check_kind(const models::Checkpoint& run, const RunRequest& request) {
  const bool image = std::holds_alternative<models::ImageModelConfig>(run.config);
  const bool classifier = std::holds_alternative<models::ClassifierConfig>(run.config);
  if (request.classifier ? classifier : image) return;
  if (!image && !classifier) {
    throw Error(request.command, "'", run.dir, "' holds a run of a translator, which the axiom command does not train ",
                "(apps/examples/translate.cpp does)");
  }
  throw Error(request.command, "'", run.dir, "' holds a run of ", classifier ? "a classifier" : "an image model",
              "; continue it with axiom ", classifier ? "classify" : "train", " --resume");
}

// What a command will train: the run to resume, or the config and options of a new one. Every
// check that needs no data is made here, before the run's directory is created or locked, so that
// a bad flag or config leaves nothing behind.
struct RunPlan {
  std::optional<models::Checkpoint> resumed;
  models::ModelConfig config;
  models::TrainingOptions options;
};

RunPlan plan_run(const TrainCommand& c, const RunRequest& request, Communicator& comm) {
  check_out(c, request.command);
  RunPlan plan;
  if (c.resume && has_checkpoint(c.out)) {
    plan.resumed = models::read_checkpoint(c.out);
    check_kind(*plan.resumed, request);
    check_resume_flags(c, request, *plan.resumed);
    plan.config = plan.resumed->config, plan.options = plan.resumed->options;
  } else {
    plan.config = request.config(), plan.options = options_of(c, request.command);
    plan.options.validate();
  }
  check_memory(plan.config, plan.options, c.checkpoint_blocks, device_of(request.command, c.device), comm);
  return plan;
}

std::unique_ptr<models::Trainer> start_or_resume(const TrainCommand& c, const RunRequest& request, const RunPlan& plan,
                                                 Communicator& comm) {
  data::TensorDataset examples = examples_of(plan.options, plan.config, "train");
  const models::Placement placement = placement_of(c, request.command, comm);
  if (plan.resumed) {
    if (comm.rank() == 0)
      std::fprintf(stderr, "axiom: resuming '%s' at step %lld\n", c.out.c_str(),
                   static_cast<long long>(plan.resumed->step));
    return std::make_unique<models::Trainer>(*plan.resumed, std::move(examples), placement);
  }
  if (c.resume && comm.rank() == 0)
    std::fprintf(stderr, "axiom: no run in '%s' yet: starting a new one\n", c.out.c_str());
  return std::make_unique<models::Trainer>(plan.config, plan.options, std::move(examples), placement);
}

// Every rank must be at the same step of the same run (a config file or a checkpoint that differs
// between machines would otherwise train N different models).
void check_same_run(const models::Trainer& t, const char* op, Communicator& comm) {
  core::check_same_on_every_rank(comm,
                                 models::to_json(t.config()) + t.options().to_json() + std::to_string(t.steps_done()),
                                 op, "runs (the config, the training options or the checkpoint's step differ)");
}

void check_command(const TrainCommand& c, const char* op) {
  if (c.out.empty()) throw Error(op, "--out must name the run's directory");
  if (c.steps <= 0) throw Error(op, "--steps must be positive, got ", c.steps);
  if (!(c.minutes >= 0)) throw Error(op, "--minutes must be >= 0, got ", c.minutes);
  if (c.eval_every <= 0) throw Error(op, "--eval-every must be positive, got ", c.eval_every);
  if (c.eval_images <= 0) throw Error(op, "--eval-images must be positive, got ", c.eval_images);
  if (c.checkpoint_every <= 0) throw Error(op, "--checkpoint-every must be positive, got ", c.checkpoint_every);
  if (c.min_delta > 0 && c.patience == 0) {
    throw Error(op, "--min-delta ", c.min_delta, " says what an improvement is for --patience, which is not given");
  }
}

// --- the loop -----------------------------------------------------------------------------------------

std::string percent(double share) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f%%", 100 * share);
  return text;
}

// "step 120/500 [####....] 4.123 bits/dim  13.0 img/s  2m10s, ETA 15m42s" (a classifier's loss in nats)
std::string status(const models::Trainer& t, int64_t target, double loss, double seconds_per_step, double elapsed,
                   double eta) {
  char text[200];
  std::snprintf(text, sizeof text, "step %lld/%lld %s %.3f %s  %.1f img/s  %s, ETA %s",
                static_cast<long long>(t.steps_done()), static_cast<long long>(target),
                progress_bar(t.steps_done(), target).c_str(), loss, models::loss_unit(t.config()),
                static_cast<double>(t.options().batch_size) / seconds_per_step, format_duration(elapsed).c_str(),
                format_duration(eta).c_str());
  return text;
}

struct Loop {
  models::Trainer& trainer;
  const TrainCommand& command;
  const int64_t target;                // the step to train to (target_step)
  const data::TensorDataset held_out;  // the first --eval-images test examples
  std::optional<RunLog> log;           // rank 0's
  StatusLine line;                     // visible on rank 0
  Stopwatch clock;                     // since this invocation began
  double average_step = 0;             // seconds, a moving average for the ETA

  Communicator& comm() const { return trainer.communicator(); }
  // Wall-clock seconds of the run so far: its earlier invocations (as the metrics recorded them) and this one.
  double run_seconds() const { return (log ? log->seconds_before() : 0) + clock.seconds(); }

  bool classifier() const { return std::holds_alternative<models::ClassifierConfig>(trainer.config()); }

  // --patience: the held-out losses so far (on every rank alike), and where the best one's checkpoint goes.
  std::optional<models::EarlyStopping> early;
  std::string best_dir() const { return (fs::path(command.out) / "best").string(); }

  void evaluate_and_plot() {
    line.show("evaluating " + std::to_string(held_out.columns[0].size(0)) + " held-out images...", false);
    const models::Score score = models::evaluate(trainer.model(), held_out, 50, {}, comm());  // the same on every rank
    if (early && early->record(trainer.steps_done(), score.mean_loss())) trainer.save(best_dir());
    if (!log) return;
    const std::optional<double> accuracy = classifier() ? std::optional<double>(score.accuracy()) : std::nullopt;
    log->held_out(trainer.steps_done(), score.mean_loss(), accuracy, run_seconds());
    if (!classifier()) log->image("samples", trainer.steps_done(), sample_grid());
    log->plot(trainer.options().data + ", " + std::to_string(trainer.options().batch_size) + " images a batch");
    char text[160];
    std::snprintf(text, sizeof text, "step %lld: held-out %.4f %s", static_cast<long long>(trainer.steps_done()),
                  score.mean_loss(), models::loss_unit(trainer.config()));
    line.show(text + (accuracy ? ", " + percent(*accuracy) + " accuracy" : std::string()), true);
  }

  // TensorBoard's picture of the model so far: 8 images drawn from seed 0 (the same uniforms each
  // time, so that the grids differ only as the model does), laid out by image_grid: 4 to a row,
  // or one row per image of a model whose channels are frames. uint8 [GH, GW(, 3)].
  Tensor sample_grid() {
    models::ImageModel& model = trainer.image_model();
    const bool was_training = model.is_training();
    model.eval();  // no dropout
    const Tensor samples = models::sample_fast(model, {.count = 8, .seed = 0});
    model.train(was_training);
    return image_grid(samples, 4);
  }

  double seconds_left(int64_t steps_left) const {
    const double by_steps = static_cast<double>(steps_left) * average_step;
    return command.minutes > 0 ? std::min(by_steps, command.minutes * 60 - clock.seconds()) : by_steps;
  }

  bool out_of_time() const { return command.minutes > 0 && clock.seconds() >= command.minutes * 60; }

  std::string stopped_early;  // why, when --patience stopped the run

  // --profile N: steps 2 to N + 1 of this invocation (the first allocates what the others reuse).
  std::optional<Profiler> profiler;
  int64_t steps_this_invocation = 0;

  void profile_before_step() {
    if (command.profile > 0 && steps_this_invocation == 1) profiler.emplace();
  }

  // The table on standard output, profile.csv and profile.trace.json in the run's directory.
  void write_profile() {
    const Profile profile = profiler->stop();
    const int64_t steps = steps_this_invocation - 1;
    profiler.reset();
    if (comm().rank() != 0) return;
    char said[160];
    std::snprintf(said, sizeof said, "profile of %lld steps (rank 0), %.1f ms a step; also in %s/profile.csv, %s",
                  static_cast<long long>(steps),
                  1e3 * profile.wall_seconds() / static_cast<double>(std::max<int64_t>(steps, 1)), command.out.c_str(),
                  "profile.trace.json (chrome://tracing, ui.perfetto.dev):");
    line.show(said, true);
    std::printf("%s", profile.table().c_str());
    std::fflush(stdout);  // before the status lines that follow on standard error
    core::write_file_atomically((std::filesystem::path(command.out) / "profile.csv").string(), profile.csv(), "train");
    core::write_file_atomically((std::filesystem::path(command.out) / "profile.trace.json").string(),
                                profile.chrome_trace(), "train");
  }

  void one_step() {
    profile_before_step();
    Stopwatch step_clock;
    const double loss = trainer.step();
    const double seconds = step_clock.seconds();
    ++steps_this_invocation;
    const ProfileRange bookkeeping("log, checkpoint, evaluate");  // when profiling, a row of its own
    average_step = average_step == 0 ? seconds : 0.9 * average_step + 0.1 * seconds;
    const int64_t step = trainer.steps_done();
    if (log) log->train_step(step, loss, trainer.lr_at(step - 1), trainer.last_gradient_norm(), seconds, run_seconds());
    line.show(status(trainer, target, loss, average_step, run_seconds(), seconds_left(target - step)), step % 10 == 0);
    if (step % command.checkpoint_every == 0) trainer.save(command.out);
    if (step % command.eval_every == 0) evaluate_and_plot();
    if (profiler && steps_this_invocation == 1 + command.profile) write_profile();
  }

  // Why to stop now, agreed by every rank: kSignalled + the signal that some rank received, else
  // kStoppedImproving when --patience says so (on every rank alike), else kOutOfTime when rank 0's
  // time budget is spent, else 0 (a signal outranks the others).
  static constexpr int64_t kOutOfTime = 1, kStoppedImproving = 2, kSignalled = 100;
  int64_t stop_reason() {
    const int64_t mine = interrupted                           ? kSignalled + interrupted
                         : early && early->should_stop()       ? kStoppedImproving
                         : comm().rank() == 0 && out_of_time() ? kOutOfTime
                                                               : 0;
    const core::Tensor reason = core::from_vector<int64_t>({mine});
    comm().allreduce(reason, AllreduceOp::max);
    return static_cast<int64_t>(reason.item());
  }

  // Trains until the target step, the time budget or a signal; returns how it stopped.
  const char* run() {
    const char* why = run_steps();
    if (profiler) write_profile();  // stopped before the profile's last step: what it recorded
    return why;
  }

  const char* run_steps() {
    while (trainer.steps_done() < target) {
      const int64_t reason = stop_reason();
      if (reason >= kSignalled) {
        interrupted = static_cast<int>(reason - kSignalled);  // on every rank, so that all exit alike
        return interrupted == SIGTERM   ? "terminated (SIGTERM)"
               : interrupted == SIGUSR1 ? "asked to stop (SIGUSR1)"
                                        : "interrupted";
      }
      if (reason == kStoppedImproving) {
        stopped_early = "stopped early: " + early->reason(models::loss_unit(trainer.config()));
        return stopped_early.c_str();
      }
      if (reason == kOutOfTime) return "the time budget (--minutes) is spent";
      one_step();
    }
    return "the target step (--steps) is reached";
  }
};

// Runs the loop with Ctrl-C, SIGTERM and SIGUSR1 turned into "stop after this step"; says why it stopped.
const char* run_until_stopped(Loop& loop) {
  interrupted = 0;
  std::signal(SIGINT, on_interrupt);
  std::signal(SIGTERM, on_interrupt);
  std::signal(SIGUSR1, on_stop_request);
  const char* why = loop.run();
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  std::signal(SIGUSR1, SIG_DFL);
  return why;
}

// --patience: the best held-out checkpoint goes into out/best, which must be absent, empty, or a
// checkpoint (this run's, from an earlier invocation): axiom writes there only its own files.
void check_best_directory(const std::string& best, const char* op) {
  std::error_code ec;
  if (!fs::exists(best, ec) || has_checkpoint(best)) return;
  if (!fs::is_directory(best, ec) || !fs::is_empty(best, ec)) {
    throw Error(op, "'", best, "' exists and is not a checkpoint; --patience keeps the best one there, and axiom ",
                "writes only where it wrote before (move it away, or choose another --out)");
  }
}

// --profile writes profile.csv and profile.trace.json into --out: over an earlier profile's, never
// over files of the same names that axiom did not write.
void check_profile_files(const std::string& out, const char* op) {
  for (const auto& [name, start] :
       {std::pair{"profile.csv", Profile::kCsvStart}, std::pair{"profile.trace.json", Profile::kTraceStart}}) {
    const fs::path path = fs::path(out) / name;
    std::error_code ec;
    const fs::file_status status = fs::symlink_status(path, ec);
    if (!fs::exists(status)) continue;
    std::string head(start.size(), '\0');
    std::ifstream file;
    if (fs::is_regular_file(status)) file.open(path, std::ios::binary);  // never a FIFO: opening one would wait
    file.read(head.data(), static_cast<std::streamsize>(head.size()));
    if (!fs::is_regular_file(status) || !file || head != start) {
      throw Error(op, "'", path.string(), "' is not a profile axiom wrote; --profile writes there, and axiom ",
                  "overwrites only its own files (move it away, or choose another --out)");
    }
  }
}

// --patience on a resumed run: the held-out losses that the metrics recorded, replayed (rank 0
// reads them; every rank gets them, so that all decide alike).
models::EarlyStopping early_stopping_so_far(const models::TrainingOptions& o, const std::optional<RunLog>& log,
                                            Communicator& comm) {
  std::vector<double> steps_and_losses;
  if (log) {
    const Series& history = log->held_out_history();
    for (size_t i = 0; i < history.x.size(); ++i)
      steps_and_losses.push_back(history.x[i]), steps_and_losses.push_back(history.y[i]);
  }
  const core::Tensor count = core::from_vector<int64_t>({static_cast<int64_t>(steps_and_losses.size())});
  comm.broadcast(count, 0);
  const auto n = static_cast<int64_t>(count.item());
  const core::Tensor values =
      comm.rank() == 0 ? core::from_vector<double>(steps_and_losses) : core::zeros({n}, Dtype::float64);
  if (n > 0) comm.broadcast(values, 0);
  models::EarlyStopping early(o.patience, o.min_delta);
  for (int64_t i = 0; i + 1 < n; i += 2) {
    early.record(static_cast<int64_t>(values.at({i})), values.at({i + 1}));
  }
  return early;
}

// The last lines a finished (or stopped) run prints: where it is, and how to go on.
void print_summary(const TrainCommand& command, const char* op, const Loop& loop, const models::Trainer& trainer,
                   const char* why) {
  std::fprintf(stderr, "axiom: stopped at step %lld after %s: %s\n  checkpoint: %s/checkpoint.json\n  loss curve: %s\n",
               static_cast<long long>(trainer.steps_done()), format_duration(loop.clock.seconds()).c_str(), why,
               command.out.c_str(), loop.log->curve_path().c_str());
  if (loop.early && loop.early->any()) {
    std::fprintf(stderr, "  best held-out: %s (step %lld, %.4f %s)\n", loop.best_dir().c_str(),
                 static_cast<long long>(loop.early->best_step()), loop.early->best_loss(),
                 models::loss_unit(trainer.config()));
  }
  if (interrupted) {
    std::fprintf(stderr, "  continue with: axiom %s --out %s --resume --steps %lld\n", op, command.out.c_str(),
                 static_cast<long long>(loop.target));
  }
}

}  // namespace

// The examples a model trains and is scored on: an image model's images, or a classifier's images and labels.
data::TensorDataset examples_of(const models::TrainingOptions& o, const models::ModelConfig& config,
                                const std::string& split) {
  if (const auto* image = std::get_if<models::ImageModelConfig>(&config)) {
    return {
        {data::load_images(o.data, split, {.root = o.data_dir, .frames = image->channels, .canvas = image->height})}};
  }
  const data::ImageDataset labelled = data::load_labelled(o.data, split, {.root = o.data_dir});
  return {{labelled.images, labelled.labels}};
}

int train(const TrainCommand& command) {
  return train_run(command, {.command = "train",
                             .classifier = false,
                             .config = [&] { return models::ModelConfig(models::load_config(command.config)); },
                             .config_given = command.was_given("--config"),
                             .after = {}});
}

int train_run(const TrainCommand& command, const RunRequest& request) {
  const char* op = request.command;
  check_command(command, op);
  use_matmul_precision(op, command.matmul, command.device);
  Communicator& comm = world();
  const bool writer = comm.rank() == 0;  // prints, and writes the run's files
  std::optional<RunLock> lock;           // one training at a time in a run's directory
  RunPlan plan = plan_run(command, request, comm);
  if (writer) {
    lock.emplace(command.out);
    plan = plan_run(command, request, comm);  // again, now that no other training can change the directory
  }
  const std::unique_ptr<models::Trainer> trainer = start_or_resume(command, request, plan, comm);
  check_same_run(*trainer, op, comm);
  if (command.profile > 0) check_profile_files(command.out, op);
  const int64_t target = target_step(command, trainer->options());
  if (trainer->steps_done() >= target) {
    if (writer)
      std::fprintf(stderr, "axiom: '%s' is at step %lld already (--steps %lld): nothing to train\n",
                   command.out.c_str(), static_cast<long long>(trainer->steps_done()), static_cast<long long>(target));
    if (request.after) request.after(*trainer);
    return 0;
  }
  trainer->measure_gradient_norm();  // for the metrics and TensorBoard
  const data::TensorDataset test = examples_of(trainer->options(), trainer->config(), "test");
  if (trainer->steps_done() == 0) trainer->save(command.out);  // the run exists from the start (before its metrics)
  Loop loop{*trainer,
            command,
            target,
            first_examples(test, command.eval_images),
            writer ? std::optional<RunLog>(std::in_place, command.out, trainer->steps_done(),
                                           models::loss_key(trainer->config()), models::loss_unit(trainer->config()),
                                           trainer->options().batch_size)
                   : std::nullopt,
            StatusLine(writer),
            {},
            0};
  if (trainer->options().patience > 0) {
    check_best_directory(loop.best_dir(), op);
    loop.early = early_stopping_so_far(trainer->options(), loop.log, comm);
    if (loop.early->should_stop()) {  // an earlier invocation stopped it: say so, train no further
      if (writer)
        std::fprintf(stderr, "axiom: '%s' stopped early at step %lld: %s; nothing to train\n  best held-out: %s\n",
                     command.out.c_str(), static_cast<long long>(trainer->steps_done()),
                     loop.early->reason(models::loss_unit(trainer->config())).c_str(), loop.best_dir().c_str());
      if (request.after) request.after(*trainer);
      return 0;
    }
  }
  if (writer && comm.size() > 1) {
    std::fprintf(stderr,
                 "axiom: %d processes (%d on this machine, %d threads each) over %s, %lld images each per step\n",
                 comm.size(), comm.local_size(), core::num_threads(), comm.name().c_str(),
                 static_cast<long long>(trainer->options().batch_size / comm.size()));
  }

  const char* why = run_until_stopped(loop);
  loop.line.finish();
  trainer->save(command.out);
  if (trainer->steps_done() % command.eval_every != 0) loop.evaluate_and_plot();
  const int exit_code = interrupted ? 128 + interrupted : 0;  // the shell's code for a process ended by that signal
  if (writer) print_summary(command, op, loop, *trainer, why);
  if (request.after && !interrupted) request.after(*trainer);
  return exit_code;
}

}  // namespace axiom::apps
