// apps/bench/bench.h's timing: two ways of doing the same work are timed in turns, so that a slow
// moment of a shared machine falls on both (what `axiom bench products` compares OpenBLAS and oneDNN
// with). The order of the calls is tested, never their times.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "apps/bench/bench.h"

using axiom::bench::seconds_per_call;
using axiom::bench::seconds_per_call_in_turns;

TEST_CASE("seconds_per_call_in_turns warms each function up, then times one trial of each per round") {
  std::string calls;
  const std::vector<double> seconds = seconds_per_call_in_turns(
      {[&] { calls += 'a'; }, [&] { calls += 'b'; }, [&] { calls += 'c'; }}, /*trials=*/3, /*min_seconds=*/0);
  CHECK(calls ==
        "abc"
        "abc"
        "abc"
        "abc");  // warm-ups, then 3 rounds of one call each
  REQUIRE(seconds.size() == 3);
  for (const double s : seconds) CHECK(s >= 0);
}

TEST_CASE("seconds_per_call repeats its function in each trial to last min_seconds") {
  int runs = 0;
  const double seconds = seconds_per_call([&] { ++runs; }, /*trials=*/5, /*min_seconds=*/0.01);
  CHECK(runs > 1 + 5);  // the warm-up, and more than one call in each trial
  CHECK(seconds >= 0);
}
