// `axiom bench autograd`: what recording a graph and walking it back costs.
//   - a chain of small elementwise ops: microseconds per op to run it without recording (NoGrad),
//     with recording, and backward; the graph overhead is recorded minus unrecorded
//   - a 512 x 512 matmul: backward time (forward + backward, less forward) over forward time
//     (two GEMMs against one: ideally 2)
#include <string>

#include "apps/bench/bench.h"
#include "autograd/autograd.h"
#include "core/core.h"
#include "core/launch.h"

namespace axiom::bench {

namespace {

void bench_chain(const Reporter& reporter) {
  const int ops = 1000;
  Generator gen(5);
  const Tensor x(core::randn({16}, gen), true);
  auto chain = [&] {
    Tensor y = x;
    for (int i = 0; i < ops; ++i) y = (i % 2 == 0) ? add(y, 0.5) : mul(y, 0.999);
    return y;
  };
  const double unrecorded = seconds_per_call([&] {
    NoGrad no_grad;
    chain();
  });
  const double recorded = seconds_per_call([&] { chain(); });
  const double with_backward = seconds_per_call([&] { sum(chain()).backward(); });
  const double us = 1e6 / ops;
  auto figure = [&](const std::string& name, double value) {
    reporter.report(
        {.bench = "autograd", .name = name, .unit = "us/op", .value = value, .baseline = {}, .baseline_name = {}});
  };
  figure("chain_forward_no_grad", unrecorded * us);
  figure("chain_forward_recorded", recorded * us);
  figure("chain_backward", (with_backward - recorded) * us);
  figure("graph_overhead", (recorded - unrecorded) * us);
}

void bench_matmul_backward(const Reporter& reporter) {
  const int64_t n = 512;
  Generator gen(6);
  const Tensor a(core::randn({n, n}, gen), true), b(core::randn({n, n}, gen), true);
  const Tensor seed = ones({n, n});
  const double forward = seconds_per_call([&] { matmul(a, b); }, 9, 0.1);
  const double both = seconds_per_call(
      [&] {
        a.zero_grad(), b.zero_grad();  // as in training: each step's gradient starts from nothing
        matmul(a, b).backward(seed);
      },
      9, 0.1);
  const double backward = both - forward;
  reporter.report({.bench = "autograd",
                   .name = "matmul_512_forward",
                   .unit = "ms",
                   .value = forward * 1e3,
                   .baseline = {},
                   .baseline_name = {}});
  reporter.report({.bench = "autograd",
                   .name = "matmul_512_backward",
                   .unit = "ms",
                   .value = backward * 1e3,
                   .baseline = forward * 1e3,
                   .baseline_name = "forward"});
}

}  // namespace

void bench_autograd(const Reporter& reporter) {
  reporter.note("axiom bench autograd: " + std::to_string(core::num_threads()) + " threads");
  reporter.note("a chain of 1000 elementwise ops on 16 floats (microseconds per op)");
  bench_chain(reporter);
  reporter.note("512 x 512 matmul, float32 (ratio: backward / forward)");
  bench_matmul_backward(reporter);
}

}  // namespace axiom::bench
