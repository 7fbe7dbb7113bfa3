// Timing a work's GEMMs in both libraries (see products.h).
#include "apps/bench/products.h"

#include <algorithm>

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

// Seconds per run of `plan` with `library` forced: out = a @ b through the CPU backend, into
// preallocated memory (as a step's product writes into memory its allocator keeps).
double seconds_in(GemmLibrary library, const core::ProductPlan& plan) {
  const core::GemmShape& g = plan.gemm;
  Generator gen(7);
  const core::Tensor a = operand(plan.count, g.m, g.k, g.a_transposed, gen);
  const core::Tensor b = operand(plan.count, g.k, g.n, g.b_transposed, gen);
  const core::Tensor out = plan.count == 1 ? core::empty({g.m, g.n}) : core::empty({plan.count, g.m, g.n});
  core::Backend& cpu = core::backend(Device::cpu());
  const core::cpu::ForcedGemmLibrary forced(library);
  return seconds_per_call([&] { cpu.matmul(a, b, out, /*accumulate=*/false); }, 5, 0.05);
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

PlanTiming time_plan(const core::ProductPlan& plan, int64_t times) {
  PlanTiming t{.plan = plan, .times = times};
  t.openblas_seconds = seconds_in(GemmLibrary::openblas, plan);
  if (core::cpu::onednn_built()) t.onednn_seconds = seconds_in(GemmLibrary::onednn, plan);
  // attention's own GEMMs are OpenBLAS's (core/cpu/attention.cpp); the others go where matmul sends them
  t.chosen = plan.in_attention ? GemmLibrary::openblas : core::cpu::gemm_library_choice(plan.gemm, plan.count);
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
  }
  return limit;
}

}  // namespace axiom::bench
