// Tools for `axiom bench`: timing a piece of work, and reporting figures as text or JSON lines.
// Benchmarks are reports, never tests: they print what they measure and assert nothing.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/distributed/communicator.h"

namespace axiom::bench {

// Seconds per call of each of `fns`, timed in turns: a trial of each in order, then the next
// round, so that a slow moment of a shared machine falls on all of them alike. Each trial repeats
// its fn enough times to last at least `min_seconds` (after one warm-up call of each); each fn's
// figure is the median of its `trials` trials. Comparing two ways of doing the same work, this is
// fairer than timing one and then the other.
inline std::vector<double> seconds_per_call_in_turns(const std::vector<std::function<void()>>& fns, int trials = 5,
                                                     double min_seconds = 0.05) {
  using Clock = std::chrono::steady_clock;
  auto elapsed = [](Clock::time_point since) { return std::chrono::duration<double>(Clock::now() - since).count(); };
  std::vector<int> repeats;
  for (const auto& fn : fns) {
    const auto start = Clock::now();
    fn();  // warm-up: caches, page faults, lazy initialisation
    repeats.push_back(std::max(1, static_cast<int>(min_seconds / std::max(elapsed(start), 1e-9))));
  }
  std::vector<std::vector<double>> per_call(fns.size());
  for (int t = 0; t < trials; ++t) {
    for (size_t f = 0; f < fns.size(); ++f) {
      const auto start = Clock::now();
      for (int r = 0; r < repeats[f]; ++r) fns[f]();
      per_call[f].push_back(elapsed(start) / repeats[f]);
    }
  }
  std::vector<double> medians;
  for (std::vector<double>& times : per_call) {
    std::nth_element(times.begin(), times.begin() + trials / 2, times.end());
    medians.push_back(times[trials / 2]);
  }
  return medians;
}

// Seconds per call of fn: the median over `trials` timings, each repeating fn enough times to
// last at least `min_seconds` (after one warm-up call). fn is called where it is, never copied.
template <typename Fn>
double seconds_per_call(Fn&& fn, int trials = 5, double min_seconds = 0.05) {
  return seconds_per_call_in_turns({std::function<void()>(std::ref(fn))}, trials, min_seconds)[0];
}

// One figure: a value in a unit, and optionally the same-run baseline it should be read against.
struct Figure {
  std::string bench, name, unit;
  double value = 0;
  std::optional<double> baseline;
  std::string baseline_name;  // what the baseline is, for the text report
};

// Prints figures; a quiet one prints nothing (the ranks other than 0 of a data-parallel job).
class Reporter {
 public:
  explicit Reporter(bool json, bool quiet = false) : json_(json), quiet_(quiet) {}

  void note(const std::string& line) const {
    if (!json_ && !quiet_) std::printf("%s\n", line.c_str());
  }

  void report(const Figure& f) const {
    if (quiet_) return;
    if (json_) {
      nlohmann::ordered_json line = {{"bench", f.bench}, {"case", f.name}, {"value", f.value}, {"unit", f.unit}};
      if (f.baseline) line["baseline"] = *f.baseline, line["ratio"] = f.value / *f.baseline;
      std::printf("%s\n", line.dump().c_str());
    } else if (f.baseline) {
      std::printf("  %-40s %10.2f %-8s  %s %10.2f  ratio %.2f\n", f.name.c_str(), f.value, f.unit.c_str(),
                  f.baseline_name.c_str(), *f.baseline, f.value / *f.baseline);
    } else {
      std::printf("  %-40s %10.2f %-8s\n", f.name.c_str(), f.value, f.unit.c_str());
    }
    std::fflush(stdout);
  }

 private:
  bool json_, quiet_;
};

// The batch of `axiom bench train` for a config: the preset's (tiny 16, small 32, medium 16; a JSON file 16).
inline int64_t preset_batch(const std::string& config) {
  return config == "small" || config.starts_with("small-") ? 32 : 16;
}

// Each benchmark group: `axiom bench NAME`.
void bench_ops(const Reporter& reporter);
void bench_autograd(const Reporter& reporter);
void bench_layers(const Reporter& reporter);
// `axiom bench allreduce`, under mpirun: MPI allreduce time and bandwidth, 1 to 64 MiB.
void bench_allreduce(const Reporter& reporter, Communicator& comm);

// `axiom bench train --config NAME [--batch N] [--steps N] [--device cpu|cuda]`
struct TrainBenchOptions {
  std::string config = "small";   // a preset or a JSON file
  int64_t batch = 0;              // 0: the preset's (tiny 16, small 32, medium 16)
  int steps = 5;                  // timed steps (the median is reported)
  std::string device = "cpu";     // where the model trains; the clock is read after the device has finished
  int64_t checkpoint_blocks = 0;  // blocks recomputed in backward (ImageModel::set_checkpoint_blocks)
  std::string matmul =
      "float32";    // how float32 products multiply: float32 or bfloat16 (MatmulPrecision, core/launch.h)
  int profile = 0;  // then profile this many more steps (autograd/profiler.h) and print the table; 0 = none
};
// Under mpirun, `batch` is the global batch, split over the ranks; the step's communication is reported too.
void bench_train(const Reporter& reporter, const TrainBenchOptions& options, Communicator& comm);
// `axiom bench products [--config LIST] [--write-table FILE]` (bench_products.cpp)
struct ProductsBenchOptions {
  std::string configs = "tiny,small,medium";  // the training steps whose products are timed
  std::string write_table;                    // a table file to write this CPU's choices into, or none
};
void bench_products(const Reporter& reporter, const ProductsBenchOptions& options);
// `axiom bench sample --config NAME [--device cpu|cuda]`
struct SampleBenchOptions {
  std::string config = "tiny";
  std::string device = "cpu";
};
void bench_sample(const Reporter& reporter, const SampleBenchOptions& options);

}  // namespace axiom::bench
