// `axiom bench layers`: axial attention on [16, 28, 28, 128] (4 heads) along each axis, forward and
// forward + backward, next to the Dense layers of the same block (its q/k/v and output
// projections) and to the better of OpenBLAS and oneDNN on the projection's GEMM. If the strided path copied, the
// column axis (1) would be much slower than the row axis (2).
//
// FLOPs counted: projections 2 N D (3D + D), attention scores and mixing 2 * 2 N L D, with N the
// number of positions (16 * 28 * 28) and L the attended axis' length (28); backward counts twice
// the forward.
//
// Then the attention kernel alone on qkv [16, 28, 28, 384], in float32 and in bfloat16 (as
// layer_norm_attention keeps it under --precision bfloat16), forward and backward.
//
// Then relative position logits (nn/relative.h) for lines of growing length L, computed directly
// (an [L, L, Dh] gather) and by skewing ([2L - 1, Dh]): forward + backward time and the peak of
// the memory they allocate.

#include <string>
#include <utility>

#include "apps/bench/bench.h"
#include "apps/bench/products.h"
#include "autograd/factory.h"
#include "core/core.h"
#include "core/launch.h"
#include "nn/nn.h"

namespace axiom::bench {

namespace {
constexpr int64_t kBatch = 16, kSide = 28, kFeatures = 128, kHeads = 4;

void report(const Reporter& reporter, const std::string& name, double seconds, double flops, double sgemm_gflops) {
  reporter.report({.bench = "layers",
                   .name = name + "_ms",
                   .unit = "ms",
                   .value = seconds * 1e3,
                   .baseline = {},
                   .baseline_name = {}});
  reporter.report({.bench = "layers",
                   .name = name + "_gflops",
                   .unit = "GFLOP/s",
                   .value = flops / seconds / 1e9,
                   .baseline = sgemm_gflops,
                   .baseline_name = "best GEMM"});
}
// Relative logits of q [4 lines, 4 heads, L, 32] against a table clipped at distance 64, forward and
// backward, for both ways of computing them: time, and the peak bytes allocated above what lived before.
void bench_relative(const Reporter& reporter, Generator& gen) {
  using RelativeLogits = Tensor (*)(const Tensor&, const Tensor&);
  const std::pair<const char*, RelativeLogits> ways[] = {{"direct", nn::relative_logits_direct},
                                                         {"skewed", nn::relative_logits_skewed}};
  for (int64_t length : {64, 256, 1024}) {
    const Tensor q(core::randn({4, 4, length, 32}, gen), true), table(core::randn({129, 32}, gen), true);
    const Tensor seed = ones({4, 4, length, length});
    for (const auto& [way, logits] : ways) {
      auto forward_backward = [&] {
        q.zero_grad();
        table.zero_grad();
        logits(q, table).backward(seed);
      };
      const double seconds = seconds_per_call(forward_backward, 3, 0.2);
      core::reset_allocation_peak();
      const int64_t before = core::allocation_stats().live_bytes;
      forward_backward();
      const double peak_mib = static_cast<double>(core::allocation_stats().peak_bytes - before) / (1 << 20);
      const std::string name = std::string("relative_") + way + "_L" + std::to_string(length);
      reporter.report({.bench = "layers",
                       .name = name + "_ms",
                       .unit = "ms",
                       .value = seconds * 1e3,
                       .baseline = {},
                       .baseline_name = {}});
      reporter.report({.bench = "layers",
                       .name = name + "_peak",
                       .unit = "MiB",
                       .value = peak_mib,
                       .baseline = {},
                       .baseline_name = {}});
    }
  }
}

// The attention kernel alone (core::attention and its backward), causal along each axis of qkv
// [16, 28, 28, 384], 4 heads: on a float32 qkv, and on the same values in bfloat16 (as
// layer_norm_attention keeps qkv under --precision bfloat16: widened as each line is copied; its
// backward also rounds qkv's gradient as it writes it, and sums it for the bias). FLOPs: 4 N L D
// forward, twice that backward.
void bench_attention_kernel(const Reporter& reporter, Generator& gen, double sgemm_gflops) {
  const core::Tensor qkv32 = core::randn({kBatch, kSide, kSide, 3 * kFeatures}, gen);
  const core::AttentionMask causal = core::AttentionMask::causal();
  const double flops = 4.0 * kBatch * kSide * kSide * kSide * kFeatures;
  for (int64_t axis : {1, 2}) {
    for (const Dtype dtype : {Dtype::float32, Dtype::bfloat16}) {
      const core::Tensor qkv = qkv32.to(dtype);
      const core::AttentionResult r = core::attention(qkv, axis, kHeads, causal);
      const core::Tensor grad = core::randn(r.output.shape(), gen);
      const double forward = seconds_per_call([&] { core::attention(qkv, axis, kHeads, causal); }, 5, 0.2);
      const double backward = seconds_per_call(
          [&] {
            if (dtype == Dtype::bfloat16) {
              core::attention_backward_to_bfloat16(qkv, r.probs, grad, axis, kHeads, causal);
            } else {
              core::attention_backward(qkv, r.probs, grad, axis, kHeads, causal);
            }
          },
          5, 0.2);
      const std::string name = "kernel_attention_axis" + std::to_string(axis) + "_" + std::string(dtype_name(dtype));
      report(reporter, name + "_forward", forward, flops, sgemm_gflops);
      report(reporter, name + "_backward", backward, 2 * flops, sgemm_gflops);
    }
  }
}
}  // namespace

void bench_layers(const Reporter& reporter) {
  reporter.note("axiom bench layers: " + std::to_string(core::num_threads()) +
                " threads; AxialAttention on [16, 28, 28, 128], 4 heads");
  Generator gen(8);
  const double n = kBatch * kSide * kSide;
  const double projection_flops = 2 * n * kFeatures * 4 * kFeatures;
  const double attention_flops = projection_flops + 4 * n * kSide * kFeatures;

  // the better library's rate on the q/k/v projection's shape: [N, D] @ [D, 3D] (products.h)
  const PlanTiming projection = time_plan({.gemm = {static_cast<int64_t>(n), 3 * kFeatures, kFeatures}});
  const double sgemm_gflops = projection.flops() / projection.best_seconds() / 1e9;
  reporter.report({.bench = "layers",
                   .name = "best_gemm_12544x384x128",
                   .unit = "GFLOP/s",
                   .value = sgemm_gflops,
                   .baseline = {},
                   .baseline_name = {}});

  const Tensor x(core::randn({kBatch, kSide, kSide, kFeatures}, gen), true);
  const Tensor seed = ones(x.shape());
  for (int64_t axis : {1, 2}) {
    nn::AxialAttention attention(kFeatures, kHeads, axis, gen);
    const std::string name = "attention_axis" + std::to_string(axis);
    const double forward = seconds_per_call(
        [&] {
          NoGrad no_grad;
          attention(x);
        },
        5, 0.2);
    const double both = seconds_per_call(
        [&] {
          attention.zero_grad();
          x.zero_grad();
          attention(x).backward(seed);
        },
        5, 0.2);
    report(reporter, name + "_forward", forward, attention_flops, sgemm_gflops);
    report(reporter, name + "_forward_backward", both, 3 * attention_flops, sgemm_gflops);
  }
  nn::AxialAttention attention(kFeatures, kHeads, 1, gen);
  const double dense = seconds_per_call(
      [&] {
        NoGrad no_grad;
        attention.out->forward(attention.qkv->forward(x).narrow(-1, 0, kFeatures));
      },
      5, 0.2);
  report(reporter, "dense_qkv_and_out_forward", dense, projection_flops, sgemm_gflops);
  bench_attention_kernel(reporter, gen, sgemm_gflops);
  bench_relative(reporter, gen);
}

}  // namespace axiom::bench
