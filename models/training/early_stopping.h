// Early stopping (Keras' EarlyStopping, Lightning's EarlyStopping with ModelCheckpoint): the
// held-out loss after each evaluation, lower being better. An evaluation improves when it is the
// first, or lower than the last improvement by more than `min_delta`; a run stops when `patience`
// evaluations in a row have not improved. The checkpoint kept is the best one: the lowest loss,
// by any margin (an evaluation may be the best without being an improvement by min_delta).
//
//   models::EarlyStopping early(5, 0.001);
//   if (early.record(trainer.steps_done(), score.mean_loss())) trainer.save("runs/x/best");
//   if (early.should_stop()) { std::cerr << early.reason("bits/dim"); break; }
//
// A held-out loss that is not finite is never an improvement nor the best.
#pragma once

#include <cstdint>
#include <string>

namespace axiom::models {

class EarlyStopping {
 public:
  // An Error unless patience >= 1 and min_delta is finite and >= 0.
  EarlyStopping(int64_t patience, double min_delta);

  // The held-out loss of the evaluation at `step`: true when it is the lowest so far (keep it).
  bool record(int64_t step, double loss);
  bool should_stop() const { return since_improvement_ >= patience_; }

  bool any() const { return best_step_ >= 0; }      // a finite evaluation recorded
  int64_t best_step() const { return best_step_; }  // the lowest loss's; -1 before the first
  double best_loss() const { return best_loss_; }
  int64_t since_improvement() const { return since_improvement_; }  // evaluations that did not improve, in a row
  // "the held-out loss has not improved by more than 0.001 for 5 evaluations (since 3.2114 at step
  // 400); best 3.2105 bits/dim at step 600"
  std::string reason(const std::string& unit) const;

 private:
  int64_t patience_;
  double min_delta_;
  int64_t best_step_ = -1, improved_step_ = -1, since_improvement_ = 0;
  double best_loss_ = 0, improved_loss_ = 0;
};

}  // namespace axiom::models
