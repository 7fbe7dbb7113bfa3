// Early stopping (models/training/early_stopping.h): what improves, when to stop, the reason it
// gives, and the arguments it refuses.
#include <cmath>
#include <limits>

#include "models/training/early_stopping.h"
#include "tests/support/reference.h"

using namespace axiom;

TEST_CASE("early stopping: an improvement is lower than the best by more than min_delta") {
  models::EarlyStopping early(2, 0.1);
  CHECK(!early.any());
  CHECK(early.record(10, 5.0));   // the first is the best
  CHECK(!early.record(20, 4.9));  // 0.1 lower: not more than min_delta
  CHECK(early.since_best() == 1);
  CHECK(!early.should_stop());
  CHECK(early.record(30, 4.85));  // 0.15 lower than 5.0
  CHECK((early.best_step() == 30 && early.best_loss() == 4.85 && early.since_best() == 0));
  CHECK(!early.record(40, std::numeric_limits<double>::quiet_NaN()));  // never an improvement
  CHECK(!early.record(50, 4.9));
  CHECK(early.should_stop());
  CHECK(early.reason("bits/dim") ==
        "the held-out loss has not improved by more than 0.1 for 2 evaluations: best 4.8500 bits/dim at step 30");
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
