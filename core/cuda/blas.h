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

// For every i: c[i] [m, n] = alpha * op(a[i]) op(b[i]) + beta * c[i], where op transposes when
// asked (a[i] is then stored [k, m], b[i] [n, k]). All pointers are device memory; one cuBLAS
// call per 65,535 products. float uses cublasSgemmBatched, double cublasDgemmBatched.
template <typename T>
void gemm_batched(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const std::vector<const T*>& a,
                  int64_t lda, const std::vector<const T*>& b, int64_t ldb, T beta, const std::vector<T*>& c, int64_t ldc);

}  // namespace AXIOM_CUDA_NAMESPACE
