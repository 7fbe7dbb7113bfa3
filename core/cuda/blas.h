// Matrix products through cuBLAS, in the row-major terms the rest of axiom uses.
//
// cuBLAS is column-major. A row-major [rows, cols] matrix with row stride ld is, to cuBLAS, the
// column-major [cols, rows] matrix with leading dimension ld: its transpose. So for row-major
// C = op(A) op(B), gemm_batched asks cuBLAS for C^T = op(B)^T op(A)^T, which is the same memory:
// B goes first, and m and n swap places. Transposes are passed as flags, never copied.
#pragma once

#include <cstdint>
#include <vector>

#include "core/cuda/build.h"

namespace AXIOM_CUDA_NAMESPACE {

// One row-major matrix operand: where it starts, its leading dimension, whether it is read
// transposed (then a [m, k] operand is stored [k, m]), and for a batch the distance from one
// matrix to the next (0: one matrix shared by the batch).
template <typename T>
struct GemmOperand {
  T* data;
  int64_t ld;
  bool transposed = false;
  int64_t stride = 0;
};

// c [m, n] = alpha * op(a) op(b) + beta * c: one cuBLAS gemm (cublasSgemm, cublasDgemm), which
// picks its own kernel for the shape, split-K for a long k among them.
template <typename T>
void gemm(int64_t m, int64_t n, int64_t k, T alpha, GemmOperand<const T> a, GemmOperand<const T> b, T beta,
          GemmOperand<T> c);

// For every i < count: matrix i of c = alpha * op(matrix i of a) op(matrix i of b) + beta * c,
// each operand's matrices `stride` elements apart: cublas[SD]gemmStridedBatched, which uploads
// nothing, one call per 65,535 products.
template <typename T>
void gemm_strided_batched(int64_t m, int64_t n, int64_t k, T alpha, GemmOperand<const T> a, GemmOperand<const T> b,
                          T beta, GemmOperand<T> c, int64_t count);

// For every i: c[i] [m, n] = alpha * op(a[i]) op(b[i]) + beta * c[i], where op transposes when
// asked (a[i] is then stored [k, m], b[i] [n, k]). All pointers are device memory; the pointer
// arrays are uploaded to the device first; one cuBLAS call per 65,535 products. float uses
// cublasSgemmBatched, double cublasDgemmBatched. For batches that are not evenly spaced.
template <typename T>
void gemm_batched(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const std::vector<const T*>& a,
                  int64_t lda, const std::vector<const T*>& b, int64_t ldb, T beta, const std::vector<T*>& c,
                  int64_t ldc);

}  // namespace AXIOM_CUDA_NAMESPACE
