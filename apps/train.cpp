// `axiom train`: trains an Axial Transformer, with a progress line, periodic held-out evaluation,
// a metrics file, a loss curve and atomic checkpoints; Ctrl-C or SIGTERM stops after the current
// step and writes a checkpoint, and --resume continues exactly where a run stopped. A new run goes
// into a new or empty directory (or, with --force, one whose files a run would not touch).
//
// The run's directory (--out):
//   checkpoint.json, model-*.safetensors, optimizer-*.safetensors   the checkpoint (models/training.h)
//   metrics.jsonl   one JSON object a line: {"step": 12, "train_bits_per_dim": 6.1, "lr": 6e-5, "seconds": 2.4}
//                   after each step, {"step": 100, "held_out_bits_per_dim": 4.2} after each evaluation
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
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/factory.h"
#include "core/parallel.h"
#include "data/datasets.h"
#include "models/models.h"

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
  static const char message[] = "\naxiom: stopping after this step to write a checkpoint (a second signal quits at once)\n";
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
void check_same(bool given, const char* flag, const Value& asked, const Value& run) {
  if (given && asked != run) {
    throw Error("train", flag, " ", as_typed(asked), " differs from the run's ", as_typed(run),
                "; a resumed run keeps its settings (or use a new --out)");
  }
}

void check_resume_flags(const TrainCommand& c, const models::Checkpoint& run) {
  const models::TrainingOptions& o = run.options;
  if (c.given_config && models::load_config(c.config).to_json() != run.config.to_json()) {
    throw Error("train", "--config ", c.config, " differs from the run's config; a resumed run keeps its settings (or use a new --out)");
  }
  check_same(c.given_data, "--data", c.data, o.data);
  check_same(c.given_data_dir, "--data-dir", c.data_dir, o.data_dir);
  check_same(c.given_batch_size, "--batch", c.batch_size, o.batch_size);
  check_same(c.given_lr, "--lr", c.lr, o.lr);
  check_same(c.given_beta1, "--beta1", c.beta1, o.beta1);
  check_same(c.given_beta2, "--beta2", c.beta2, o.beta2);
  check_same(c.given_warmup_steps, "--warmup", c.warmup_steps, o.warmup_steps);
  check_same(c.given_schedule, "--schedule", c.schedule, std::string(models::name_of(o.schedule)));
  if (o.steps > 0 && c.given_steps && c.steps != o.steps) {  // a decaying run's length is part of the run
    throw Error("train", "--steps ", c.steps, " differs from the run's ", o.steps, ", where its ", models::name_of(o.schedule),
                " schedule ends; a resumed run keeps its settings (or use a new --out)");
  }
  check_same(c.given_clip, "--clip", c.clip, o.max_grad_norm);
  check_same(c.given_seed, "--seed", c.seed, o.seed);
}

models::TrainingOptions options_of(const TrainCommand& c) {
  models::TrainingOptions o;
  o.data = c.data, o.data_dir = c.data_dir, o.batch_size = c.batch_size, o.lr = c.lr, o.beta1 = c.beta1, o.beta2 = c.beta2;
  o.warmup_steps = c.warmup_steps, o.schedule = models::lr_schedule_named(c.schedule, "train", "--schedule");
  o.steps = o.schedule == models::LrSchedule::constant ? 0 : c.steps;
  o.max_grad_norm = c.clip, o.seed = c.seed;
  return o;
}

// The step this invocation trains to: a decaying run's own length, else --steps.
int64_t target_step(const TrainCommand& c, const models::TrainingOptions& o) { return o.steps > 0 ? o.steps : c.steps; }

Tensor images_of(const models::TrainingOptions& o, const models::ImageModelConfig& config, const std::string& split) {
  return data::load_images(o.data, split, {.root = o.data_dir, .frames = config.channels, .canvas = config.height});
}

models::Placement placement_of(const TrainCommand& c, core::Communicator& comm) {
  return {.device = device_of("train", c.device), .communicator = &comm, .checkpoint_blocks = c.checkpoint_blocks};
}

// Refuses, before anything is allocated, a run whose training step cannot fit in this machine's memory.
void check_memory(const models::ImageModelConfig& config, const models::TrainingOptions& o, int64_t checkpoint_blocks,
                  core::Device device, core::Communicator& comm) {
  const int64_t share = o.batch_size / comm.size();  // each process's images of every batch
  models::check_fits(models::training_memory(config, share, core::Dtype::float32, checkpoint_blocks), "train",
                     "training with " + std::to_string(share) + " images a step" + (comm.size() > 1 ? " in each process" : ""),
                     "use a smaller --batch or config, or --checkpoint-blocks", comm.local_size(), device);
}

// A run that exists is only resumed; a new one goes into a directory that check_new_run_directory accepts.
void check_out(const TrainCommand& c) {
  if (!has_checkpoint(c.out)) return check_new_run_directory(c.out, c.force);
  if (!c.resume) {
    throw Error("train", "'", c.out, "' already holds a run (step ", models::read_checkpoint(c.out).step,
                "); continue it with --resume, or choose another --out");
  }
}

// What a command will train: the run to resume, or the config and options of a new one. Every
// check that needs no data is made here, before the run's directory is created or locked, so that
// a bad flag or config leaves nothing behind.
struct RunPlan {
  std::optional<models::Checkpoint> resumed;
  models::ImageModelConfig config;
  models::TrainingOptions options;
};

RunPlan plan_run(const TrainCommand& c, core::Communicator& comm) {
  check_out(c);
  RunPlan plan;
  if (c.resume && has_checkpoint(c.out)) {
    plan.resumed = models::read_checkpoint(c.out);
    check_resume_flags(c, *plan.resumed);
    plan.config = plan.resumed->config, plan.options = plan.resumed->options;
  } else {
    plan.config = models::load_config(c.config), plan.options = options_of(c);
    plan.options.validate();
  }
  check_memory(plan.config, plan.options, c.checkpoint_blocks, device_of("train", c.device), comm);
  return plan;
}

std::unique_ptr<models::Trainer> start_or_resume(const TrainCommand& c, const RunPlan& plan, core::Communicator& comm) {
  const Tensor images = images_of(plan.options, plan.config, "train");
  if (plan.resumed) {
    if (comm.rank() == 0) std::fprintf(stderr, "axiom: resuming '%s' at step %lld\n", c.out.c_str(), static_cast<long long>(plan.resumed->step));
    return std::make_unique<models::Trainer>(*plan.resumed, images, placement_of(c, comm));
  }
  if (c.resume && comm.rank() == 0) std::fprintf(stderr, "axiom: no run in '%s' yet: starting a new one\n", c.out.c_str());
  return std::make_unique<models::Trainer>(plan.config, plan.options, images, placement_of(c, comm));
}

// Every rank must be at the same step of the same run (a config file or a checkpoint that differs
// between machines would otherwise train N different models).
void check_same_run(const models::Trainer& t, core::Communicator& comm) {
  core::check_same_on_every_rank(comm, t.config().to_json() + t.options().to_json() + std::to_string(t.steps_done()), "train",
                                 "runs (the config, the training options or the checkpoint's step differ)");
}

void check_command(const TrainCommand& c) {
  if (c.out.empty()) throw Error("train", "--out must name the run's directory");
  if (c.steps <= 0) throw Error("train", "--steps must be positive, got ", c.steps);
  if (!(c.minutes >= 0)) throw Error("train", "--minutes must be >= 0, got ", c.minutes);
  if (c.eval_every <= 0) throw Error("train", "--eval-every must be positive, got ", c.eval_every);
  if (c.eval_images <= 0) throw Error("train", "--eval-images must be positive, got ", c.eval_images);
  if (c.checkpoint_every <= 0) throw Error("train", "--checkpoint-every must be positive, got ", c.checkpoint_every);
}

// --- the loop -----------------------------------------------------------------------------------------

// "step 120/500 [####....] 4.123 bits/dim  13.0 img/s  2m10s, ETA 15m42s"
std::string status(const models::Trainer& t, int64_t target, double bits, double seconds_per_step, double elapsed, double eta) {
  char text[200];
  std::snprintf(text, sizeof text, "step %lld/%lld %s %.3f bits/dim  %.1f img/s  %s, ETA %s", static_cast<long long>(t.steps_done()),
                static_cast<long long>(target), progress_bar(t.steps_done(), target).c_str(), bits,
                static_cast<double>(t.options().batch_size) / seconds_per_step, format_duration(elapsed).c_str(),
                format_duration(eta).c_str());
  return text;
}

struct Loop {
  models::Trainer& trainer;
  const TrainCommand& command;
  const int64_t target;         // the step to train to (target_step)
  const Tensor held_out;        // uint8 [eval_images, ...]
  std::optional<RunLog> log;    // rank 0's
  StatusLine line;              // visible on rank 0
  Stopwatch clock;             // since this invocation began
  double average_step = 0;     // seconds, a moving average for the ETA

  core::Communicator& comm() const { return trainer.communicator(); }
  // Wall-clock seconds of the run so far: its earlier invocations (as the metrics recorded them) and this one.
  double run_seconds() const { return (log ? log->seconds_before() : 0) + clock.seconds(); }

  double held_out_bits() {
    line.show("evaluating " + std::to_string(held_out.size(0)) + " held-out images...", false);
    return models::evaluate_images(trainer.model(), held_out, 50, {}, comm()).bits_per_dim();
  }

  void evaluate_and_plot() {
    const double bits = held_out_bits();
    if (!log) return;
    log->held_out(trainer.steps_done(), bits, run_seconds());
    log->plot(trainer.options().data + ", " + std::to_string(trainer.options().batch_size) + " images a batch");
    char text[120];
    std::snprintf(text, sizeof text, "step %lld: held-out %.4f bits/dim", static_cast<long long>(trainer.steps_done()), bits);
    line.show(text, true);
  }

  double seconds_left(int64_t steps_left) const {
    const double by_steps = static_cast<double>(steps_left) * average_step;
    return command.minutes > 0 ? std::min(by_steps, command.minutes * 60 - clock.seconds()) : by_steps;
  }

  bool out_of_time() const { return command.minutes > 0 && clock.seconds() >= command.minutes * 60; }

  void one_step() {
    Stopwatch step_clock;
    const double bits = trainer.step();
    const double seconds = step_clock.seconds();
    average_step = average_step == 0 ? seconds : 0.9 * average_step + 0.1 * seconds;
    const int64_t step = trainer.steps_done();
    if (log) log->train_step(step, bits, trainer.lr_at(step - 1), seconds, run_seconds());
    line.show(status(trainer, target, bits, average_step, run_seconds(), seconds_left(target - step)), step % 10 == 0);
    if (step % command.checkpoint_every == 0) trainer.save(command.out);
    if (step % command.eval_every == 0) evaluate_and_plot();
  }

  // Why to stop now, agreed by every rank: kSignalled + the signal that some rank received, else
  // kOutOfTime when rank 0's time budget is spent, else 0 (a signal outranks the clock).
  static constexpr int64_t kOutOfTime = 1, kSignalled = 100;
  int64_t stop_reason() {
    const int64_t mine = interrupted ? kSignalled + interrupted : comm().rank() == 0 && out_of_time() ? kOutOfTime : 0;
    const core::Tensor reason = core::from_vector<int64_t>({mine});
    comm().allreduce(reason, core::AllreduceOp::max);
    return static_cast<int64_t>(reason.item());
  }

  // Trains until the target step, the time budget or a signal; returns how it stopped.
  const char* run() {
    while (trainer.steps_done() < target) {
      const int64_t reason = stop_reason();
      if (reason >= kSignalled) {
        interrupted = static_cast<int>(reason - kSignalled);  // on every rank, so that all exit alike
        return interrupted == SIGTERM ? "terminated (SIGTERM)" : interrupted == SIGUSR1 ? "asked to stop (SIGUSR1)" : "interrupted";
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

// The last lines a finished (or stopped) run prints: where it is, and how to go on.
void print_summary(const TrainCommand& command, const Loop& loop, const models::Trainer& trainer, const char* why) {
  std::fprintf(stderr, "axiom: stopped at step %lld after %s: %s\n  checkpoint: %s/checkpoint.json\n  loss curve: %s\n",
               static_cast<long long>(trainer.steps_done()), format_duration(loop.clock.seconds()).c_str(), why,
               command.out.c_str(), loop.log->curve_path().c_str());
  if (interrupted) {
    std::fprintf(stderr, "  continue with: axiom train --out %s --resume --steps %lld\n", command.out.c_str(),
                 static_cast<long long>(loop.target));
  }
}

}  // namespace

int train(const TrainCommand& command) {
  check_command(command);
  use_matmul_precision("train", command.matmul, command.device);
  core::Communicator& comm = core::world();
  const bool writer = comm.rank() == 0;  // prints, and writes the run's files
  std::optional<RunLock> lock;  // one training at a time in a run's directory
  RunPlan plan = plan_run(command, comm);
  if (writer) {
    lock.emplace(command.out);
    plan = plan_run(command, comm);  // again, now that no other training can change the directory
  }
  const std::unique_ptr<models::Trainer> trainer = start_or_resume(command, plan, comm);
  check_same_run(*trainer, comm);
  const int64_t target = target_step(command, trainer->options());
  if (trainer->steps_done() >= target) {
    if (writer) std::fprintf(stderr, "axiom: '%s' is at step %lld already (--steps %lld): nothing to train\n", command.out.c_str(),
                 static_cast<long long>(trainer->steps_done()), static_cast<long long>(target));
    return 0;
  }
  const Tensor test_images = images_of(trainer->options(), trainer->config(), "test");
  if (trainer->steps_done() == 0) trainer->save(command.out);  // the run exists from the start (before its metrics)
  Loop loop{*trainer, command, target, test_images.narrow(0, 0, std::min(command.eval_images, test_images.size(0))),
            writer ? std::optional<RunLog>(std::in_place, command.out, trainer->steps_done()) : std::nullopt,
            StatusLine(writer), {}, 0};
  if (writer && comm.size() > 1) {
    std::fprintf(stderr, "axiom: %d processes (%d on this machine, %d threads each) over %s, %lld images each per step\n", comm.size(),
                 comm.local_size(), core::num_threads(), comm.name().c_str(),
                 static_cast<long long>(trainer->options().batch_size / comm.size()));
  }

  const char* why = run_until_stopped(loop);
  loop.line.finish();
  trainer->save(command.out);
  if (trainer->steps_done() % command.eval_every != 0) loop.evaluate_and_plot();
  const int exit_code = interrupted ? 128 + interrupted : 0;  // the shell's code for a process ended by that signal
  if (writer) print_summary(command, loop, *trainer, why);
  return exit_code;
}

}  // namespace axiom::apps
