// Learning-rate schedules at their key steps (0, inside the warmup, its end, the middle and end of
// the decay, past the end) against their formulas written out here; an optimizer driven by one;
// and every argument check.
#include <cmath>
#include <numbers>

#include "tests/support/optimizers.h"

using namespace axiom;
using namespace axiom::test;
using optim::Schedule;
using optim::Warmup;
using test::check_error;

namespace {

constexpr double kTol = 1e-15;

void check_lr(const Schedule& s, int64_t step, double expected,
              std::source_location where = std::source_location::current()) {
  const double got = s.lr(step);
  if (!(std::abs(got - expected) <= kTol * std::max(1.0, std::abs(expected)))) {
    ADD_FAIL_CHECK_AT(
        where.file_name(), static_cast<int>(where.line()),
        ("lr(" + std::to_string(step) + ") = " + std::to_string(got) + ", expected " + std::to_string(expected)));
  }
}

}  // namespace

TEST_CASE("linear warmup from 0 or from a start factor, then constant") {
  const Schedule s = Schedule::constant(0.5, {.steps = 10});
  check_lr(s, 0, 0.0);
  check_lr(s, 1, 0.05);
  check_lr(s, 5, 0.25);
  check_lr(s, 9, 0.45);
  check_lr(s, 10, 0.5);
  check_lr(s, 1000, 0.5);
  // From 0.2 * base_lr: lr(s) = base (0.2 + 0.8 s / W)
  const Schedule f = Schedule::constant(0.5, {.steps = 4, .start_factor = 0.2});
  check_lr(f, 0, 0.1);
  check_lr(f, 2, 0.5 * (0.2 + 0.8 * 2 / 4));
  check_lr(f, 4, 0.5);
  // No warmup: base_lr from step 0.
  check_lr(Schedule::constant(0.3), 0, 0.3);
  check_lr(Schedule::constant(0.3, {.steps = 1}), 0, 0.0);
  check_lr(Schedule::constant(0.3, {.steps = 1}), 1, 0.3);
}

TEST_CASE("cosine: from base_lr to min_lr over decay_steps after the warmup, then min_lr") {
  const double base = 1e-3, low = 1e-4;
  const Schedule s = Schedule::cosine(base, {.steps = 100}, 1000, low);
  auto cosine = [&](double t) { return low + (base - low) * 0.5 * (1 + std::cos(std::numbers::pi * t / 1000)); };
  check_lr(s, 0, 0.0);
  check_lr(s, 50, base / 2);
  check_lr(s, 100, base);              // warmup end = cosine start
  check_lr(s, 350, cosine(250));       // a quarter of the way
  check_lr(s, 600, (base + low) / 2);  // the middle
  check_lr(s, 1099, cosine(999));
  check_lr(s, 1100, low);  // the end
  check_lr(s, 5000, low);  // after it
  // Without a warmup and down to 0.
  const Schedule z = Schedule::cosine(2.0, {}, 10);
  check_lr(z, 0, 2.0);
  check_lr(z, 5, 1.0);
  check_lr(z, 10, 0.0);
}

TEST_CASE("linear: a straight line from base_lr to min_lr over decay_steps after the warmup, then min_lr") {
  const double base = 3e-3, low = 3e-4;
  const Schedule s = Schedule::linear(base, {.steps = 20}, 200, low);
  check_lr(s, 0, 0.0);
  check_lr(s, 10, base / 2);
  check_lr(s, 20, base);                        // warmup end = decay start
  check_lr(s, 70, base - (base - low) * 0.25);  // a quarter of the way
  check_lr(s, 120, (base + low) / 2);           // the middle
  check_lr(s, 219, low + (base - low) / 200);   // one step before the end
  check_lr(s, 220, low);                        // the end
  check_lr(s, 9000, low);                       // after it
  // Without a warmup and down to 0: the rate of the last of 10 steps is a tenth of base_lr.
  const Schedule z = Schedule::linear(2.0, {}, 10);
  check_lr(z, 0, 2.0);
  check_lr(z, 9, 0.2);
  check_lr(z, 10, 0.0);
}

TEST_CASE("exponential: base_lr gamma^(s - W) after the warmup") {
  const Schedule s = Schedule::exponential(0.1, {.steps = 5, .start_factor = 0.5}, 0.9);
  check_lr(s, 0, 0.05);
  check_lr(s, 5, 0.1);
  check_lr(s, 6, 0.1 * 0.9);
  check_lr(s, 15, 0.1 * std::pow(0.9, 10));
  check_lr(s, 105, 0.1 * std::pow(0.9, 100));
  check_lr(Schedule::exponential(0.1, {}, 1.0), 1000, 0.1);
}

TEST_CASE("inverse square root: base_lr sqrt(W) / sqrt(s) after the warmup, as in the Transformer") {
  const double base = 7e-4;
  const Schedule s = Schedule::inverse_sqrt(base, {.steps = 4000});
  check_lr(s, 0, 0.0);
  check_lr(s, 2000, base / 2);
  check_lr(s, 4000, base);
  check_lr(s, 16000, base / 2);
  check_lr(s, 100000, base * std::sqrt(4000.0 / 100000.0));
  // It is Vaswani et al.'s d^-0.5 min(s^-0.5, s W^-1.5) scaled so that its peak (s = W) is base_lr.
  const double d = 512, W = 4000;
  for (int64_t step : {1, 100, 3999, 4000, 4001, 20000}) {
    const auto x = static_cast<double>(step);
    const double vaswani = std::pow(d, -0.5) * std::min(std::pow(x, -0.5), x * std::pow(W, -1.5));
    const double peak = std::pow(d, -0.5) * std::pow(W, -0.5);
    CAPTURE(step);
    CHECK(s.lr(step) == doctest::Approx(base * vaswani / peak).epsilon(1e-12));
  }
}

TEST_CASE("a schedule sets the optimizer's lr: apply(opt, step)") {
  optim::NamedParameters params = make_parameters(Dtype::float64);
  optim::SGD opt(params, {.lr = 123});
  const Schedule s = Schedule::cosine(0.1, {.steps = 2}, 4);
  ReferenceSGD ref;
  Values expected = kStart;
  for (int64_t step = 0; step < 8; ++step) {
    s.apply(opt, step);
    CHECK(opt.lr() == s.lr(step));
    ref.lr = s.lr(step);
    train_step(opt);
    ref.step(expected, gradients_of(expected));
  }
  check_values(params, expected, kRtol64, kAtol64, "after 8 scheduled steps");
}

TEST_CASE("schedule arguments are checked") {
  check_error([] { Schedule::constant(-1); }, {"[Schedule]", "base_lr", "-1"});
  check_error([] { Schedule::constant(std::nan("")); }, {"[Schedule]", "base_lr", "nan"});
  check_error([] { Schedule::constant(0.1, {.steps = -3}); }, {"[Schedule]", "warmup steps", "-3"});
  check_error([] { Schedule::constant(0.1, {.steps = 3, .start_factor = 1.5}); },
              {"[Schedule]", "start_factor", "1.5"});
  check_error([] { Schedule::constant(0.1, {.steps = 3, .start_factor = -0.5}); },
              {"[Schedule]", "start_factor", "-0.5"});
  check_error([] { Schedule::cosine(0.1, {}, 0); }, {"[Schedule]", "decay_steps", "0"});
  check_error([] { Schedule::cosine(0.1, {}, 10, 0.2); }, {"[Schedule]", "min_lr", "0.2"});
  check_error([] { Schedule::cosine(0.1, {}, 10, -0.1); }, {"[Schedule]", "min_lr", "-0.1"});
  check_error([] { Schedule::linear(0.1, {}, -5); }, {"[Schedule]", "linear", "decay_steps", "-5"});
  check_error([] { Schedule::linear(0.1, {}, 10, 0.3); }, {"[Schedule]", "linear", "min_lr", "0.3"});
  check_error([] { Schedule::exponential(0.1, {}, 0); }, {"[Schedule]", "gamma", "0"});
  check_error([] { Schedule::exponential(0.1, {}, 1.1); }, {"[Schedule]", "gamma", "1.1"});
  check_error([] { Schedule::inverse_sqrt(0.1, {}); }, {"[Schedule]", "inverse_sqrt", "warmup", "0"});
  check_error([] { (void)Schedule::constant(0.1).lr(-1); }, {"[Schedule]", "step", "-1"});
}
