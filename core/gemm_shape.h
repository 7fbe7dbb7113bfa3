// The shape of a GEMM and how a product of batches of matrices becomes GEMMs (core/matrix_layout.h:
// plan_product): what the CPU backend dispatches on (core/cpu/gemm_choice.h) and what the
// shape-only device records (core/meta/meta.h: meta_products).
#pragma once

#include <compare>
#include <cstdint>

namespace axiom::core {

// One GEMM as a library runs it: c [m, n] = a [m, k] @ b [k, n], each operand read in place
// (row-major) or transposed (MatrixLayout::transposed; a copied operand is row-major).
struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
  bool a_transposed = false, b_transposed = false;
  auto operator<=>(const GemmShape&) const = default;
};

// How the CPU runs out [..., M, N] = a [..., M, K] @ b [..., K, N] (core/cpu/matmul.cpp): `count`
// GEMMs of one shape. `folded`: a batch that shares b and whose rows of a are evenly spaced is one
// tall GEMM [batch * M, K] @ [K, N] (count 1). The shape-only device records the same plans
// (core/meta/meta.h: meta_products), so a benchmark can time a step's products alone.
struct ProductPlan {
  GemmShape gemm;
  int64_t count = 1;
  bool folded = false;
  bool in_attention = false;  // a fused attention kernel's own GEMMs, which OpenBLAS always runs
};

// Multiply-adds above which one GEMM is "large". A batch of such small GEMMs is spread over the threads, one GEMM per
// task, and a large one is split into bands of rows or columns, one per thread.
constexpr int64_t kSmallGemm = 64 * 64 * 64;
inline bool is_large(const GemmShape& g) { return g.m * g.n * g.k > kSmallGemm; }

}  // namespace axiom::core
