// The learning-rate range test (models/training/lr_find.h): rates growing exponentially from
// start to end, one step each; the suggestion between the steepest descent and a tenth of the
// lowest point; the ranges it refuses.
#include <algorithm>
#include <cmath>

#include "models/models.h"
#include "tests/support/reference.h"
#include "tests/support/tiny_models.h"

using namespace axiom;

TEST_CASE("the steepest descent of a loss that falls like a step lies at the fall's middle") {
  std::vector<double> lrs, smoothed;
  for (int i = 0; i < 50; ++i) {
    lrs.push_back(std::pow(10.0, -6 + 0.1 * i));                  // 1e-6 .. 1e-1.1
    smoothed.push_back(8 - 4 / (1 + std::exp(-(i - 30) / 2.0)));  // falls from 8 to 4 around i = 30
  }
  CHECK(models::steepest_descent(lrs, smoothed) == 30);
  CHECK(test::error_message([] {
          models::steepest_descent({1, 2}, {1, 2});
        }) == "[lr-find] a suggestion needs at least 3 steps, got 2");
}

TEST_CASE("the range test takes one step a rate, from start to end, and suggests one of them") {
  const auto config = test::two_channel_config();
  models::TrainingOptions options;
  options.batch_size = 4, options.seed = 3;
  Generator gen(5);
  const Tensor images(core::randint({8, config.channels, config.height, config.width}, 0, 256, gen, Dtype::uint8));
  const models::LrRange range =
      models::lr_range_test(config, options, data::TensorDataset{{images}}, {.start = 1e-5, .end = 1e-1, .steps = 12});
  REQUIRE(!range.diverged);  // rates this low do not make a fresh model diverge
  REQUIRE(range.lrs.size() == 12);
  CHECK(range.lrs.front() == doctest::Approx(1e-5));
  CHECK(range.lrs.back() == doctest::Approx(1e-1));
  for (size_t i = 1; i < range.lrs.size(); ++i) {
    CHECK(range.lrs[i] / range.lrs[i - 1] == doctest::Approx(std::pow(1e4, 1.0 / 11)));
  }
  CHECK(range.losses.front() == doctest::Approx(8.0).epsilon(1e-3));  // a fresh model: uniform over 256 values
  const double steep = range.lrs.at(static_cast<size_t>(range.steepest_step)),
               lowest = range.lrs.at(static_cast<size_t>(range.lowest_step));
  CHECK(range.steepest_step <= std::max<int64_t>(range.lowest_step, 2));
  CHECK(range.smoothed.at(static_cast<size_t>(range.lowest_step)) ==
        *std::min_element(range.smoothed.begin(), range.smoothed.end()));
  CHECK(range.suggestion == doctest::Approx(std::sqrt(steep * lowest / 10)).epsilon(1e-12));
  CHECK(range.rule.find("geometric mean") != std::string::npos);
}

TEST_CASE("the range test refuses a range upside down, too few steps, and a bad smoothing before any work") {
  const auto config = test::two_channel_config();
  const data::TensorDataset none;
  auto refusal = [&](const models::LrRangeOptions& r) {
    return test::error_message([&] { models::lr_range_test(config, {}, none, r); });
  };
  CHECK(refusal({.start = 1, .end = 1e-3}) ==
        "[lr-find] the rates run from start to end, 0 < start < end; got start 1, end 0.001");
  CHECK(refusal({.start = 0, .end = 1}) ==
        "[lr-find] the rates run from start to end, 0 < start < end; got start 0, end 1");
  CHECK(refusal({.steps = 9}) == "[lr-find] steps must be at least 10, got 9");
  CHECK(refusal({.smoothing = 1}) == "[lr-find] smoothing must be in [0, 1), got 1");
  CHECK(refusal({.diverge = 1}) == "[lr-find] diverge must be > 1, got 1");
}

TEST_CASE("a loss that diverges within 3 steps leaves no curve to read: an Error, not a suggestion") {
  const auto config = test::two_channel_config();
  models::TrainingOptions options;
  options.batch_size = 4, options.seed = 3;
  Generator gen(5);
  const Tensor images(core::randint({8, config.channels, config.height, config.width}, 0, 256, gen, Dtype::uint8));
  // From the second step on (steps / 10), any rise of the smoothed loss counts as divergence.
  const std::string error = test::error_message([&] {
    models::lr_range_test(config, options, data::TensorDataset{{images}},
                          {.start = 1, .end = 10, .steps = 10, .smoothing = 0, .diverge = 1.000001});
  });
  CHECK(error.starts_with("[lr-find] the loss diverged after 2 steps (at rate "));
}
