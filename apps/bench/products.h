// The machine's limit for a piece of work's matrix products: each GEMM shape it runs (as the
// shape-only device recorded it: core/meta/meta.h, meta_products) timed in OpenBLAS and in oneDNN,
// both on axiom's threads as core/cpu/matmul.cpp runs them, in the same run. The better of the two
// is the best rate this machine reaches on that shape; the work's products at those rates are the
// time no implementation on these libraries beats; the library core/cpu/gemm_choice.h chooses is
// what axiom runs (OpenBLAS for the fused attention kernel's own GEMMs).
//
//   const models::Cost step = models::measured_training_cost(config, batch);
//   const ProductsLimit limit = limit_of(time_products(step.products));
//   limit.best_seconds / step_seconds;  // the step's share of the limit: 1 is the machine's best
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/cpu/gemm_choice.h"
#include "core/gemm_shape.h"
#include "core/meta/meta.h"

namespace axiom::bench {

// One plan (`count` GEMMs of one shape, run `times` in the work), timed in both libraries.
struct PlanTiming {
  core::ProductPlan plan;
  int64_t times = 1;
  double openblas_seconds = 0;  // one run of the plan
  double onednn_seconds = 0;    // 0 in a build without oneDNN
  // Under MatmulPrecision::bfloat16, for a product that matmul gives bfloat16 operands: oneDNN on
  // operands already rounded, without the rounding pass (else 0).
  double bfloat16_operands_seconds = 0;
  double beside_seconds = 0;  // time_plan's `beside`, where given
  core::cpu::GemmLibrary chosen = core::cpu::GemmLibrary::openblas;

  double flops() const;  // of one run: 2 m n k count
  double best_seconds() const;
  double chosen_seconds() const;
  core::cpu::GemmLibrary faster() const;
  std::string name() const;  // "25088x512x128_NT_x1": m x n x k, a and b (N plain, T transposed), count
};

// Times one run of `plan` in each library, the two in turns (bench.h, seconds_per_call_in_turns):
// a float32 product of random operands with the plan's shape, transposes and count, through the
// CPU backend with the library forced (ForcedGemmLibrary); and then, on its own, under bfloat16
// products, oneDNN on operands already in bfloat16. `beside`, another way of running the same product (bench ops:
// matmul through the tensor API), is timed in the same turns, into beside_seconds.
PlanTiming time_plan(const core::ProductPlan& plan, int64_t times = 1, const std::function<void()>& beside = {});
std::vector<PlanTiming> time_products(const std::vector<core::MetaProduct>& products);

// A work's products summed: seconds at the better library's rate and at the chosen library's, and
// their FLOPs (each plan counted `times`).
struct ProductsLimit {
  double best_seconds = 0, chosen_seconds = 0, flops = 0;
  // The products in the chosen library, with the bfloat16 ones on operands already rounded
  // (bfloat16_operands_seconds): the step's products if its kernels wrote bfloat16 operands
  // themselves. chosen_seconds less this is what the rounding passes cost.
  double bfloat16_operands_seconds = 0;
};
ProductsLimit limit_of(const std::vector<PlanTiming>& timings);

// The products `axiom bench ops` times (bench_ops.cpp), which `axiom bench products` times too:
// squares of each side, and a batch of small squares.
inline constexpr int64_t kOpsSquareSides[] = {64, 256, 512, 1024};
inline constexpr int64_t kOpsBatch = 64, kOpsBatchSide = 32;

}  // namespace axiom::bench
