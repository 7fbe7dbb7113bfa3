// `axiom bench ops`: the core kernels next to what the machine can do in the same run.
//   matmul through the tensor API  vs  raw cblas_sgemm on preallocated buffers
//   elementwise add and gelu       vs  memcpy of the same bytes
//   softmax over rows of 28, 64 and 1024
#include <cblas.h>

#include <cstring>
#include <string>
#include <vector>

#include "apps/bench/bench.h"
#include "core/core.h"
#include "core/cpu/blas.h"

namespace axiom::bench {

namespace {

using namespace axiom::core;

double gflops(double flops, double seconds) { return flops / seconds / 1e9; }
double gbytes(double bytes, double seconds) { return bytes / seconds / 1e9; }

void raw_sgemm(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), 1.0f, a, static_cast<int>(k), b, static_cast<int>(n), 0.0f, c, static_cast<int>(n));
}

void bench_square_matmul(const Reporter& reporter, int64_t n) {
  Generator gen(1);
  const Tensor a = randn({n, n}, gen), b = randn({n, n}, gen);
  Tensor c = empty({n, n});
  const double flops = 2.0 * n * n * n;
  const double raw = seconds_per_call([&] { raw_sgemm(n, n, n, a.data<float>(), b.data<float>(), c.data<float>()); });
  const double api = seconds_per_call([&] { c = matmul(a, b); });
  reporter.report({.bench = "ops", .name = "matmul_" + std::to_string(n), .unit = "GFLOP/s", .value = gflops(flops, api),
                   .baseline = gflops(flops, raw), .baseline_name = "cblas_sgemm"});
}

// [batch, 32, 32] @ [32, 32] (one weight for every matrix) and [batch, 32, 32] @ [batch, 32, 32],
// next to the plain loop of one cblas_sgemm per matrix.
void bench_batched_matmul(const Reporter& reporter) {
  const int64_t batch = 64, n = 32;
  Generator gen(2);
  const Tensor a = randn({batch, n, n}, gen), shared = randn({n, n}, gen), own = randn({batch, n, n}, gen);
  Tensor c = empty({batch, n, n});
  const double flops = 2.0 * batch * n * n * n;
  auto loop_of_sgemm = [&](const Tensor& b, int64_t b_step) {
    for (int64_t i = 0; i < batch; ++i) {
      raw_sgemm(n, n, n, a.data<float>() + i * n * n, b.data<float>() + i * b_step, c.data<float>() + i * n * n);
    }
  };
  const double raw_shared = seconds_per_call([&] { loop_of_sgemm(shared, 0); });
  const double api_shared = seconds_per_call([&] { c = matmul(a, shared); });
  reporter.report({.bench = "ops", .name = "matmul_64x32x32_by_32x32", .unit = "GFLOP/s",
                   .value = gflops(flops, api_shared), .baseline = gflops(flops, raw_shared), .baseline_name = "sgemm loop"});
  c = empty({batch, n, n});
  const double raw_own = seconds_per_call([&] { loop_of_sgemm(own, n * n); });
  const double api_own = seconds_per_call([&] { c = matmul(a, own); });
  reporter.report({.bench = "ops", .name = "matmul_64x32x32_by_64x32x32", .unit = "GFLOP/s",
                   .value = gflops(flops, api_own), .baseline = gflops(flops, raw_own), .baseline_name = "sgemm loop"});
}

// add reads two arrays and writes one; gelu reads one and writes one; memcpy reads and writes one.
void bench_elementwise(const Reporter& reporter) {
  const int64_t n = 16 << 20;
  const double bytes = 4.0 * n;
  Generator gen(3);
  const Tensor x = randn({n}, gen), y = randn({n}, gen);
  std::vector<float> copy(static_cast<size_t>(n));
  const double memcpy_s = seconds_per_call([&] { std::memcpy(copy.data(), x.data<float>(), 4 * n); }, 5, 0.2);
  const double memcpy_bw = gbytes(2 * bytes, memcpy_s);
  Tensor out;
  const double add_s = seconds_per_call([&] { out = add(x, y); }, 5, 0.2);
  reporter.report({.bench = "ops", .name = "add_16M", .unit = "GB/s", .value = gbytes(3 * bytes, add_s),
                   .baseline = memcpy_bw, .baseline_name = "memcpy"});
  const double gelu_s = seconds_per_call([&] { out = gelu(x); }, 5, 0.2);
  reporter.report({.bench = "ops", .name = "gelu_16M", .unit = "GB/s", .value = gbytes(2 * bytes, gelu_s),
                   .baseline = memcpy_bw, .baseline_name = "memcpy"});
}

// Softmax over rows of the given length, 4M elements in all; bytes = read once + written once.
void bench_softmax(const Reporter& reporter, int64_t row) {
  const int64_t rows = (4 << 20) / row;
  Generator gen(4);
  const Tensor x = randn({rows, row}, gen);
  Tensor out;
  const double s = seconds_per_call([&] { out = softmax(x, -1); });
  reporter.report({.bench = "ops", .name = "softmax_rows_of_" + std::to_string(row), .unit = "GB/s",
                   .value = gbytes(2 * 4.0 * x.numel(), s), .baseline = {}, .baseline_name = {}});
}

}  // namespace

void bench_ops(const Reporter& reporter) {
  reporter.note("axiom bench ops: " + std::to_string(num_threads()) + " threads; OpenBLAS kernels: " +
                core::cpu::blas_kernels_report());
  reporter.note("matrix products (float32)");
  for (int64_t n : {64, 256, 512, 1024}) bench_square_matmul(reporter, n);
  bench_batched_matmul(reporter);
  reporter.note("elementwise, 16M floats (bytes read + written per second)");
  bench_elementwise(reporter);
  reporter.note("softmax over the last axis, 4M floats");
  for (int64_t row : {28, 64, 1024}) bench_softmax(reporter, row);
}

}  // namespace axiom::bench
