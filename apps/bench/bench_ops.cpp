// `axiom bench ops`: the core kernels next to what the machine can do in the same run.
//   matmul through the tensor API  vs  the better of OpenBLAS and oneDNN on the same GEMMs
//   memory-bound passes (elementwise maps, softmax, layer norm, cross-entropy, Adam over 16M
//   floats)                        vs  memcpy of the same bytes
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "apps/bench/bench.h"
#include "apps/bench/products.h"
#include "core/backend.h"
#include "core/core.h"
#include "core/launch.h"
#include "core/cpu/blas.h"
#include "core/cpu/vector_math.h"

namespace axiom::bench {

namespace {

using namespace axiom::core;

double gflops(double flops, double seconds) { return flops / seconds / 1e9; }
double gbytes(double bytes, double seconds) { return bytes / seconds / 1e9; }

std::string join(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

// matmul through the tensor API next to the better library on the same GEMMs (products.h), both
// into memory the allocator keeps, timed in the same turns as the libraries (time_plan's `beside`).
void report_matmul(const Reporter& reporter, const std::string& name, const Tensor& a, const Tensor& b,
                   const ProductPlan& plan) {
  Tensor c;
  const PlanTiming libraries = time_plan(plan, 1, [&] { c = matmul(a, b); });
  reporter.report({.bench = "ops",
                   .name = name,
                   .unit = "GFLOP/s",
                   .value = gflops(libraries.flops(), libraries.beside_seconds),
                   .baseline = gflops(libraries.flops(), libraries.best_seconds()),
                   .baseline_name = "better library"});
}

void bench_square_matmul(const Reporter& reporter, int64_t n) {
  Generator gen(1);
  report_matmul(reporter, "matmul_" + std::to_string(n), randn({n, n}, gen), randn({n, n}, gen), {.gemm = {n, n, n}});
}

// [batch, 32, 32] @ [32, 32] (one weight for every matrix) and [batch, 32, 32] @ [batch, 32, 32]:
// 64 small GEMMs spread over the threads.
void bench_batched_matmul(const Reporter& reporter) {
  const int64_t batch = kOpsBatch, n = kOpsBatchSide;
  Generator gen(2);
  const Tensor a = randn({batch, n, n}, gen), shared = randn({n, n}, gen), own = randn({batch, n, n}, gen);
  const ProductPlan plan{.gemm = {n, n, n}, .count = batch};
  report_matmul(reporter, "matmul_64x32x32_by_32x32", a, shared, plan);
  report_matmul(reporter, "matmul_64x32x32_by_64x32x32", a, own, plan);
}

// The memory-bound passes over 16M floats, each next to memcpy of the same run: bytes read and
// written per second (add reads two arrays and writes one; a row kernel reads its rows and writes
// its outputs; Adam reads four arrays and writes three). At 16M floats nothing fits in cache, so
// memcpy's rate is what the memory can do; a kernel at half of it is bound by memory, not by its math.
void bench_memory_bound(const Reporter& reporter) {
  const int64_t n = 16 << 20;
  const double floats = static_cast<double>(n) * 4.0;  // bytes of one array
  Generator gen(3);
  const Tensor x = randn({n}, gen), y = randn({n}, gen);
  std::vector<float> copy(static_cast<size_t>(n));
  const double memcpy_s = seconds_per_call([&] { std::memcpy(copy.data(), x.data<float>(), 4 * n); }, 5, 0.2);
  const double memcpy_bw = gbytes(2 * floats, memcpy_s);
  auto report = [&](const std::string& name, double arrays_moved, const std::function<void()>& pass) {
    const double s = seconds_per_call(pass, 5, 0.2);
    reporter.report({.bench = "ops",
                     .name = name,
                     .unit = "GB/s",
                     .value = gbytes(arrays_moved * floats, s),
                     .baseline = memcpy_bw,
                     .baseline_name = "memcpy"});
  };
  Tensor out;
  report("add_16M", 3, [&] { out = add(x, y); });
  report("exp_16M", 2, [&] { out = exp(x); });
  report("gelu_16M", 2, [&] { out = gelu(x); });
  report("gelu_derivative_16M", 2, [&] { out = gelu_derivative(x); });
  report("tanh_16M", 2, [&] { out = tanh(x); });
  for (int64_t row : {28, 64, 1024}) {
    const Tensor rows = x.narrow(0, 0, n / row * row).reshape({n / row, row});  // (16M is not a multiple of 28)
    const double share = static_cast<double>(rows.numel()) / static_cast<double>(n);
    report("softmax_rows_of_" + std::to_string(row), 2 * share, [&] { out = softmax(rows, -1); });
  }
  const Tensor rows_of_256 = x.reshape({n / 256, 256}), grad_rows = y.reshape({n / 256, 256});
  const Tensor weight = randn({256}, gen), bias = randn({256}, gen);
  LayerNormResult normed = layer_norm(rows_of_256, weight, bias);
  report("layer_norm_rows_of_256", 2, [&] { normed = layer_norm(rows_of_256, weight, bias); });
  report("layer_norm_backward_rows_of_256", 3,
         [&] { out = layer_norm_backward(rows_of_256, weight, normed.mean, normed.rstd, grad_rows); });
  const Tensor targets = zeros({n / 256}, Dtype::int64);
  CrossEntropyResult losses = cross_entropy(rows_of_256, targets);
  const Tensor grad_losses = full({n / 256}, 1.0);
  report("cross_entropy_rows_of_256", 1, [&] { losses = cross_entropy(rows_of_256, targets); });
  report("cross_entropy_backward_rows_of_256", 2,
         [&] { out = cross_entropy_backward(rows_of_256, targets, losses.lse, grad_losses); });
  // bias gradients: sums down the columns of [131072, 128] and [32768, 512] (reads one array)
  report("column_sums_of_128", 1, [&] { out = sum(x.reshape({n / 128, 128}), {0}); });
  report("column_sums_of_512", 1, [&] { out = sum(x.reshape({n / 512, 512}), {0}); });
  // activation_linear's backward: GELU and the gradient times its slope in one pass
  // (activation_backward), next to the three ops it replaces. Each pass starts from a fresh copy
  // of the gradient, and both count the fused pass's 6 arrays (the copy's 2, h and g read, a and g
  // written), so that the two figures compare as speeds.
  Tensor g = empty({n});
  const double fused_s =
      seconds_per_call([&] { copy_into(y, g), out = activation_backward(UnaryOp::gelu, x, g); }, 5, 0.2);
  const double three_ops_s =
      seconds_per_call([&] { copy_into(y, g), out = gelu(x), mul_in_place(g, gelu_derivative(x)); }, 5, 0.2);
  reporter.report({.bench = "ops",
                   .name = "gelu_backward_16M",
                   .unit = "GB/s",
                   .value = gbytes(6 * floats, fused_s),
                   .baseline = gbytes(6 * floats, three_ops_s),
                   .baseline_name = "gelu, gelu_derivative, mul_in_place"});
  // The same between two bfloat16 products (layer_norm_feedforward's backward, rows of 512): h read
  // in bfloat16, h's gradient rounded with its sums, GELU rounded, in one pass; next to what the two
  // fused ops around a float32 h do (activation_backward rounding GELU, then to_bfloat16_with_sums).
  // Both count the one pass's 10 bytes an element (h16 and g read, the gradient and GELU written in
  // bfloat16; the gradient's fresh copy is timed in both, not counted), so that the figures compare
  // as speeds.
  const Tensor h_rows = x.reshape({n / 512, 512}), h16_rows = h_rows.to(Dtype::bfloat16);
  const Tensor g_rows = g.reshape({n / 512, 512});
  const double rounded_s = seconds_per_call(
      [&] { copy_into(y, g), (void)activation_backward_to_bfloat16(UnaryOp::gelu, h16_rows, g_rows); }, 5, 0.2);
  const double two_passes_s = seconds_per_call(
      [&] {
        copy_into(y, g), out = activation_backward(UnaryOp::gelu, h_rows, g_rows, Dtype::bfloat16);
        (void)to_bfloat16_with_sums(g_rows);
      },
      5, 0.2);
  reporter.report({.bench = "ops",
                   .name = "gelu_backward_to_bfloat16_16M",
                   .unit = "GB/s",
                   .value = gbytes(2.5 * floats, rounded_s),
                   .baseline = gbytes(2.5 * floats, two_passes_s),
                   .baseline_name = "activation_backward, to_bfloat16_with_sums"});
  const Tensor param = x.clone(), exp_avg = zeros({n}), exp_avg_sq = zeros({n});
  report("adam_16M", 7, [&] { adam_update(param, y, exp_avg, exp_avg_sq, AdamStep{}); });
  // random draws (core/random.h): bound by the generator's arithmetic, not by memory
  report("uniform_16M", 1, [&] { out = uniform({n}, 0, 1, gen); });
}

}  // namespace

void bench_ops(const Reporter& reporter) {
  reporter.note("axiom bench ops: " + std::to_string(num_threads()) +
                " threads; OpenBLAS kernels: " + core::cpu::blas_kernels_report());
  reporter.note("matrix products (float32)");
  for (int64_t n : kOpsSquareSides) bench_square_matmul(reporter, n);
  bench_batched_matmul(reporter);
  reporter.note("memory-bound passes over 16M floats (bytes read + written per second), SIMD target " +
                core::cpu::vec::target() + " (AXIOM_SIMD_TARGET picks another of: " + join(core::cpu::vec::targets()) +
                ")");
  bench_memory_bound(reporter);
}

}  // namespace axiom::bench
