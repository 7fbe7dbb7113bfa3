// Timing a work's GEMMs in both libraries (see products.h).
#include "apps/bench/products.h"

#include <algorithm>
#include <functional>
#include <vector>

#include "apps/bench/bench.h"
#include "core/backend.h"
#include "core/core.h"
#include "core/cpu/onednn_gemm.h"
#include "core/cpu/vector_math.h"

namespace axiom::bench {

namespace {

using core::cpu::GemmLibrary;

// [count, rows, cols] random floats as the GEMM reads them: row-major, or a transposed view of
// [count, cols, rows]. One matrix is [rows, cols].
core::Tensor operand(int64_t count, int64_t rows, int64_t cols, bool transposed, Generator& gen) {
  const core::Shape shape = transposed ? core::Shape{count, cols, rows} : core::Shape{count, rows, cols};
  core::Tensor x = core::randn(shape, gen);
  if (transposed) x = x.transpose(1, 2);
  return count == 1 ? x.squeeze(0) : x;
}

// Seconds per run of `plan` in each of `libraries`, timed in turns (seconds_per_call_in_turns):
// out = a @ b through the CPU backend with the library forced, into preallocated memory (as a
// step's product writes into memory its allocator keeps); then `beside`'s, where given, timed in
// the same turns.
std::vector<double> seconds_in(const std::vector<GemmLibrary>& libraries, const core::ProductPlan& plan,
                               const std::function<void()>& beside) {
  const core::GemmShape& g = plan.gemm;
  Generator gen(7);
  const core::Tensor a = operand(plan.count, g.m, g.k, g.a_transposed, gen);
  const core::Tensor b = operand(plan.count, g.k, g.n, g.b_transposed, gen);
  const core::Tensor out = plan.count == 1 ? core::empty({g.m, g.n}) : core::empty({plan.count, g.m, g.n});
  core::Backend& cpu = core::backend(Device::cpu());
  std::vector<std::function<void()>> runs;
  for (const GemmLibrary library : libraries) {
    runs.emplace_back([&, library] {
      const core::cpu::ForcedGemmLibrary forced(library);
      cpu.matmul(a, b, out, /*accumulate=*/false);
    });
  }
  if (beside) runs.push_back(beside);
  return seconds_per_call_in_turns(runs, 5, 0.05);
}

// Seconds per run of `plan` as bfloat16 products whose operands are already in bfloat16 (compact,
// in the plan's orientations, a matrix each): oneDNN alone, without the rounding pass that a
// product of float32 operands starts with (core/cpu/onednn_gemm.h). The matrices of a batch run one
// after the other, on every thread, as core/cpu/matmul.cpp runs a batch of large products.
double seconds_with_bfloat16_operands(const core::ProductPlan& plan) {
  const core::GemmShape& g = plan.gemm;
  Generator gen(7);
  auto rounded = [&](int64_t elements) {
    const core::Tensor x = core::randn({elements}, gen);
    std::vector<uint16_t> bits(static_cast<size_t>(elements));
    core::cpu::vec::round_to_bfloat16(x.data<float>(), bits.data(), elements);
    return bits;
  };
  const int64_t a_size = g.m * g.k, b_size = g.k * g.n;
  const std::vector<uint16_t> a = rounded(plan.count * a_size), b = rounded(plan.count * b_size);
  // a [m, k] is stored as [k, m] when transposed, b [k, n] as [n, k]
  const core::MatrixLayout a_layout{.transposed = g.a_transposed, .ld = g.a_transposed ? g.m : g.k};
  const core::MatrixLayout b_layout{.transposed = g.b_transposed, .ld = g.b_transposed ? g.k : g.n};
  const core::Tensor out = core::empty({plan.count, g.m, g.n});
  return seconds_per_call(
      [&] {
        for (int64_t i = 0; i < plan.count; ++i) {
          const core::cpu::GemmOutput to{.c = out.data<float>() + i * g.m * g.n, .ldc = g.n};
          core::cpu::onednn_gemm_bfloat16(a_layout, b_layout, g.m, g.n, g.k, a.data() + i * a_size,
                                          b.data() + i * b_size, to, core::num_threads());
        }
      },
      5, 0.05);
}

// Whether matmul gives `plan` bfloat16 operands (core/cpu/matmul.cpp): a product in oneDNN (never
// one of attention's own) that core::cpu::takes_bfloat16_operands.
bool takes_bfloat16_operands(const core::ProductPlan& plan, GemmLibrary chosen) {
  const core::GemmShape& g = plan.gemm;
  return chosen == GemmLibrary::onednn && !plan.in_attention && core::cpu::takes_bfloat16_operands(g.m, g.n, g.k);
}

}  // namespace

double PlanTiming::flops() const {
  const core::GemmShape& g = plan.gemm;
  return 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k) *
         static_cast<double>(plan.count);
}

core::cpu::GemmLibrary PlanTiming::faster() const {
  return onednn_seconds > 0 && onednn_seconds < openblas_seconds ? GemmLibrary::onednn : GemmLibrary::openblas;
}

double PlanTiming::best_seconds() const { return faster() == GemmLibrary::onednn ? onednn_seconds : openblas_seconds; }

double PlanTiming::chosen_seconds() const { return chosen == GemmLibrary::onednn ? onednn_seconds : openblas_seconds; }

std::string PlanTiming::name() const {
  const core::GemmShape& g = plan.gemm;
  return std::to_string(g.m) + "x" + std::to_string(g.n) + "x" + std::to_string(g.k) + "_" +
         (g.a_transposed ? "T" : "N") + (g.b_transposed ? "T" : "N") + "_x" + std::to_string(plan.count);
}

PlanTiming time_plan(const core::ProductPlan& plan, int64_t times, const std::function<void()>& beside) {
  PlanTiming t{.plan = plan, .times = times};
  // the libraries (and `beside`) in turns: a slow moment of the machine falls on each of them
  std::vector<GemmLibrary> libraries{GemmLibrary::openblas};
  if (core::cpu::onednn_built()) libraries.push_back(GemmLibrary::onednn);
  const std::vector<double> seconds = seconds_in(libraries, plan, beside);
  t.openblas_seconds = seconds[0];
  if (libraries.size() == 2) t.onednn_seconds = seconds[1];
  if (beside) t.beside_seconds = seconds.back();
  // attention's own GEMMs are OpenBLAS's (core/cpu/attention.cpp); the others go where matmul sends them
  t.chosen = plan.in_attention ? GemmLibrary::openblas : core::cpu::gemm_library_choice(plan.gemm, plan.count);
  if (takes_bfloat16_operands(plan, t.chosen)) t.bfloat16_operands_seconds = seconds_with_bfloat16_operands(plan);
  return t;
}

std::vector<PlanTiming> time_products(const std::vector<core::MetaProduct>& products) {
  std::vector<PlanTiming> timings;
  for (const core::MetaProduct& product : products) timings.push_back(time_plan(product.plan, product.times));
  return timings;
}

ProductsLimit limit_of(const std::vector<PlanTiming>& timings) {
  ProductsLimit limit;
  for (const PlanTiming& t : timings) {
    const double times = static_cast<double>(t.times);
    limit.best_seconds += times * t.best_seconds();
    limit.chosen_seconds += times * t.chosen_seconds();
    limit.flops += times * t.flops();
    limit.bfloat16_operands_seconds +=
        times * (t.bfloat16_operands_seconds > 0 ? t.bfloat16_operands_seconds : t.chosen_seconds());
  }
  return limit;
}

}  // namespace axiom::bench
