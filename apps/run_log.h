// A run's metrics file and loss curve (`axiom train`, `axiom classify`):
//   metrics.jsonl   one JSON object a line: {"step": 12, "train_bits_per_dim": 6.1, "lr": 6e-5, "grad_norm": 0.8,
//                   "seconds": 2.4, "wall_seconds": 30.5} after each step, {"step": 100, "held_out_bits_per_dim": 4.2,
//                   "wall_seconds": 250.1} after each evaluation. "seconds" is the step's own time;
//                   "wall_seconds" the run's wall-clock time when the line was written, summed over
//                   the invocations that made it (the time between them not counted). A
//                   classifier's loss is "train_loss" and "held_out_loss" (nats), and its held-out
//                   lines add "held_out_accuracy".
//   loss.png        the curves of both, redrawn after each evaluation
//   events.out.tfevents.axiom   the same figures for TensorBoard (event_file.h), on by default:
//                   train/<loss>, train/lr, train/gradient_norm, train/images_per_second after
//                   each step; held_out/<loss> and held_out/accuracy after each evaluation, and an
//                   image model's samples: a grid of images drawn from the same seed each time
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "apps/event_file.h"
#include "apps/plot.h"
#include "autograd/tensor.h"

namespace axiom::apps {

class RunLog {
 public:
  // Keeps the lines of `dir`/metrics.jsonl up to `step` (a resumed run redoes what came after its
  // checkpoint), drops lines that are not whole metrics (torn by a crash or a full disk, or not
  // axiom's), and appends from there. Each line is flushed as it is written; a write that fails
  // is an Error naming the file.
  // The loss is written as "train_<loss_key>" and "held_out_<loss_key>", and plotted in `unit`.
  // `batch_size` gives TensorBoard's images_per_second. The event file is kept up to `step` too.
  RunLog(const std::string& dir, int64_t step, const std::string& loss_key = "bits_per_dim",
         const std::string& unit = "bits/dim", int64_t batch_size = 0);

  // grad_norm: the gradients' global norm before clipping (Trainer::last_gradient_norm).
  void train_step(int64_t step, double loss, double lr, double grad_norm, double seconds, double wall_seconds);
  void held_out(int64_t step, double loss, std::optional<double> accuracy, double wall_seconds);
  // A picture for TensorBoard only: uint8 [H, W] or [H, W, 3] as a PNG, under `tag`.
  void image(const std::string& tag, int64_t step, const Tensor& picture);
  // loss.png: the loss of each training batch and of the held-out examples, against the step.
  void plot(const std::string& title) const;
  std::string curve_path() const { return curve_; }
  // The largest wall_seconds of the lines kept (0 if none): where this invocation's clock starts.
  double seconds_before() const { return seconds_before_; }
  // The held-out losses kept and written so far: x the steps, y the losses.
  const Series& held_out_history() const { return held_out_; }

 private:
  void write(const std::string& line);
  struct Closer {
    void operator()(std::FILE* file) const { std::fclose(file); }
  };
  std::string path_, curve_, loss_key_, train_key_, held_out_key_, unit_;
  int64_t batch_size_;
  std::unique_ptr<std::FILE, Closer> file_;
  EventFile events_;
  Series train_{"training batch", {}, {}}, held_out_{"held-out test images", {}, {}};
  double seconds_before_ = 0;
};

}  // namespace axiom::apps
