// Which library multiplies a float32 GEMM on this CPU: OpenBLAS or oneDNN, by measurement.
//
// Neither library is faster at every shape, and which one wins depends on the CPU: `axiom bench
// products` times both on every size of `axiom bench ops` and every product shape of the `tiny`,
// `small` and `medium` training steps, and `--write-table` writes the winners of the CPU at hand
// into gemm_choice_table.inc, one block of rows per SIMD target and CPU vendor ("AVX3 AMD", "AVX3
// Intel", "AVX2 AMD"...: gemm_table_key). The vendor is part of the key because the two vendors'
// cores rank the libraries differently at some shapes: under the rows an AMD Zen 4 wrote, 3 of
// the 53 shapes of `axiom bench products` ran at 0.76-0.85 of the better library on an Intel Xeon
// with the same SIMD target. A product takes the library of the table's nearest row of its key (the
// same transposes and size class; distance in log2 of m, n, k and the count, at most 4); a shape
// far from every row, or a key the table lacks, keeps the rule the table replaced: oneDNN above
// 64^3 multiply-adds, OpenBLAS below. float64 products always go to OpenBLAS.
//
//   GemmLibrary library = gemm_library_for({.m = 25088, .n = 512, .k = 128}, 1);
//   { ForcedGemmLibrary openblas(GemmLibrary::openblas); core::matmul(a, b); }  // a benchmark's or test's choice
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "core/matrix_layout.h"

namespace axiom::core::cpu {

enum class GemmLibrary { openblas, onednn };
std::string_view to_string(GemmLibrary library);

// This CPU's rows of the table: its SIMD target (core/cpu/vector_math.h: vec::target()) and its
// vendor, "AMD", "Intel" or "other CPU": "AVX3 Intel".
std::string gemm_table_key();

// One row of the table: on the CPUs of `key` (gemm_table_key()), `count` GEMMs of shape `gemm` ran
// fastest in `library`.
struct GemmChoice {
  std::string_view key;
  GemmShape gemm;
  int64_t count;
  GemmLibrary library;
};

// The rows of gemm_choice_table.inc, every target's.
std::span<const GemmChoice> gemm_choice_table();

// The library of the row of `table` of `key` nearest to (`gemm`, `count`), among those with
// the same transposes, on the same side of 64^3 multiply-adds (a small product is never judged by
// a large one's row, nor the reverse) and near enough (a distance of at most 4 in log2 units); the
// old size rule where there is none. Only a build with oneDNN may choose it.
GemmLibrary choose_gemm_library(std::span<const GemmChoice> table, std::string_view key, const GemmShape& gemm,
                                int64_t count);

// What a float32 product of this process takes: a forced library if one is; oneDNN for a large one
// while products multiply in bfloat16 (core/matmul_precision.h: only oneDNN's do); else the table's
// choice for this CPU's key. gemm_library_for also counts it in gemm_library_calls() (the
// products' own call); gemm_library_choice only says (a benchmark's question).
GemmLibrary gemm_library_for(const GemmShape& gemm, int64_t count);
GemmLibrary gemm_library_choice(const GemmShape& gemm, int64_t count);

// The float32 products run by each library since the process started (one per matmul call).
struct GemmLibraryCalls {
  int64_t openblas = 0, onednn = 0;
};
GemmLibraryCalls gemm_library_calls();

// While one lives, every float32 product of the process runs in `library` (benchmarks, tests).
// Refuses oneDNN in a build without it. Nest them (the last made is the first to end): each
// restores the choice that was in force when it was made.
class ForcedGemmLibrary {
 public:
  explicit ForcedGemmLibrary(GemmLibrary library);
  ~ForcedGemmLibrary();
  ForcedGemmLibrary(const ForcedGemmLibrary&) = delete;
  ForcedGemmLibrary& operator=(const ForcedGemmLibrary&) = delete;

 private:
  std::optional<GemmLibrary> previous_;
};

}  // namespace axiom::core::cpu
