// Large float32 matrix products through oneDNN, in float32 or with bfloat16 operands
// (MatmulPrecision, core/launch.h). On this project's 2-core machine a training step with oneDNN's
// float32 kernels runs at 0.8-0.9 of OpenBLAS's best sgemm rate where OpenBLAS itself reached
// 0.5-0.7 (its threads wait between products), and bfloat16 operands make the products about twice
// as fast again on a CPU with AVX-512 BF16: each instruction multiplies twice as many pairs, at the cost of all but 8
// bits of each operand's mantissa (about 3 significant digits). The sums stay float32 either way.
#pragma once

#include <cstdint>
#include <string>

#include "core/cpu/bfloat16.h"
#include "core/gemm_shape.h"
#include "core/matmul_precision.h"
#include "core/matrix_layout.h"

namespace axiom::core::cpu {

// Whether a float32 product of m x n x k, in oneDNN, takes bfloat16 operands: under
// MatmulPrecision::bfloat16, one of more than 64^3 multiply-adds (core/matmul_precision.h).
inline bool takes_bfloat16_operands(int64_t m, int64_t n, int64_t k) {
  return matmul_precision() == MatmulPrecision::bfloat16 && m * n * k > kSmallGemm;
}

// True when this build has oneDNN (else every float32 product goes to OpenBLAS).
bool onednn_built();

// Empty when bfloat16 products can run here; else why not (no oneDNN in this build, or a CPU
// without AVX-512 BF16, where they would be slower than float32 ones).
std::string bfloat16_gemm_unavailable_reason();

// Where a product goes: c [m, n] with row stride ldc, replaced by the product or, when
// `accumulate`, added onto; and a bias [n] (or none) added to every row as the product is written.
// With c_bfloat16 set (and c null, no accumulating), the product is written there instead, each
// float32 sum (bias added) rounded to the nearest bfloat16: the next product's operand, made with
// no float32 copy (core::linear with a bfloat16 output).
struct GemmOutput {
  float* c;
  int64_t ldc;
  bool accumulate = false;
  const float* bias = nullptr;
  uint16_t* c_bfloat16 = nullptr;
};

// out = a @ b; a [m, k] and b [k, n] as BLAS reads them (core/matrix_layout.h). With `bfloat16`,
// a and b are first rounded to bfloat16 (round_to_bfloat16). c is split into `bands` bands of rows
// or columns, run in parallel (core/cpu/bands.h): num_threads() for a product alone, 1 for one of a
// batch spread over the threads.
void onednn_gemm(const MatrixLayout& a, const MatrixLayout& b, int64_t m, int64_t n, int64_t k, const float* pa,
                 const float* pb, const GemmOutput& out, bool bfloat16, int64_t bands);

// The same product of operands already in bfloat16 (round_to_bfloat16's bits), a [m, k] and b
// [k, n] as BLAS reads them: onednn_gemm with `bfloat16` runs this on its rounded copies. Alone,
// it times a bfloat16 product without its rounding pass (`axiom bench train --precision bfloat16`).
void onednn_gemm_bfloat16(const MatrixLayout& a, const MatrixLayout& b, int64_t m, int64_t n, int64_t k,
                          const uint16_t* pa, const uint16_t* pb, const GemmOutput& out, int64_t bands);

}  // namespace axiom::core::cpu
