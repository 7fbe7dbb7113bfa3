// Early stopping (models/training/early_stopping.h): what improves, when to stop, the reason it
// gives, and the arguments it refuses.
#include <cmath>
#include <limits>

#include "models/training/early_stopping.h"
#include "tests/support/reference.h"

using namespace axiom;

TEST_CASE("early stopping: an improvement is lower than the last by more than min_delta, the best is the lowest") {
  models::EarlyStopping early(2, 0.1);
  CHECK(!early.any());
  CHECK(early.record(10, 5.0));  // the first is an improvement and the best
  CHECK(early.record(20, 4.9));  // 0.1 lower: the best, but not an improvement by more than min_delta
  CHECK((early.best_step() == 20 && early.best_loss() == 4.9 && early.since_improvement() == 1));
  CHECK(!early.should_stop());
  CHECK(early.record(30, 4.85));  // 0.15 lower than 5.0: an improvement
  CHECK((early.best_step() == 30 && early.best_loss() == 4.85 && early.since_improvement() == 0));
  CHECK(!early.record(40, std::numeric_limits<double>::quiet_NaN()));  // neither
  CHECK(early.record(50, 4.8));                                        // the best, not an improvement
  CHECK(early.should_stop());
  CHECK(early.reason("bits/dim") ==
        "the held-out loss has not improved by more than 0.1 for 2 evaluations (since 4.8500 at step 30); best "
        "4.8000 bits/dim at step 50");
}

TEST_CASE("early stopping: a tie is no improvement with min_delta 0, and bad arguments are refused") {
  models::EarlyStopping early(1, 0);
  CHECK(early.record(1, 3.0));
  CHECK(!early.record(2, 3.0));
  CHECK(early.should_stop());
  CHECK(test::error_message([] { models::EarlyStopping(0, 0); }) ==
        "[EarlyStopping] patience is a number of evaluations, at least 1; got 0");
  CHECK(test::error_message([] { models::EarlyStopping(1, -0.5); }) ==
        "[EarlyStopping] min_delta must be a finite number >= 0, got -0.5");
  CHECK(test::error_message([] { models::EarlyStopping(1, std::nan("")); }).find("min_delta must be") !=
        std::string::npos);
}
