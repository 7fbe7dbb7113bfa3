// Early stopping (Keras' EarlyStopping, Lightning's EarlyStopping with ModelCheckpoint): the
// held-out loss after each evaluation, lower being better. An evaluation improves when it is the
// first, or lower than the best so far by more than `min_delta`; a run stops when `patience`
// evaluations in a row have not improved, and keeps the checkpoint of the best one.
//
//   models::EarlyStopping early(5, 0.001);
//   if (early.record(trainer.steps_done(), score.mean_loss())) trainer.save("runs/x/best");
//   if (early.should_stop()) { std::cerr << early.reason("bits/dim"); break; }
//
// A held-out loss that is not finite never improves.
#pragma once

#include <cstdint>
#include <string>

namespace axiom::models {

class EarlyStopping {
 public:
  // An Error unless patience >= 1 and min_delta is finite and >= 0.
  EarlyStopping(int64_t patience, double min_delta);

  // The held-out loss of the evaluation at `step`: true when it is the best so far (keep it).
  bool record(int64_t step, double loss);
  bool should_stop() const { return since_best_ >= patience_; }

  bool any() const { return best_step_ >= 0; }      // an evaluation recorded
  int64_t best_step() const { return best_step_; }  // -1 before the first
  double best_loss() const { return best_loss_; }
  int64_t since_best() const { return since_best_; }  // evaluations after the best that did not improve
  // "the held-out loss has not improved by more than 0.001 for 5 evaluations: best 3.2114 bits/dim at step 400"
  std::string reason(const std::string& unit) const;

 private:
  int64_t patience_;
  double min_delta_;
  int64_t best_step_ = -1, since_best_ = 0;
  double best_loss_ = 0;
};

}  // namespace axiom::models
