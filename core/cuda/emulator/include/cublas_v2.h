// A stand-in for cuBLAS's <cublas_v2.h>, for compiling core/cuda with the host C++ compiler: the
// entries core/cuda calls, computed with OpenBLAS in cuBLAS's own column-major convention.
//
// Arguments are validated as cuBLAS documents them: m, n, k and the batch count not negative,
// lda >= max(1, rows of A as stored), ldb and ldc likewise, a transpose flag that is N, T or C:
// CUBLAS_STATUS_INVALID_VALUE otherwise. The pointer arrays and every matrix they point to
// (its whole extent, columns times leading dimension) must lie in device memory, and alpha and
// beta in host memory (the default pointer mode): CUBLAS_STATUS_EXECUTION_FAILED otherwise (a
// GPU would read out of bounds). cublasGetStatusString then says what was wrong.
#pragma once

#include "cuda_runtime.h"

namespace axiom::cuda_emulator {

enum cublasStatus_t {
  CUBLAS_STATUS_SUCCESS = 0,
  CUBLAS_STATUS_NOT_INITIALIZED = 1,
  CUBLAS_STATUS_INVALID_VALUE = 7,
  CUBLAS_STATUS_EXECUTION_FAILED = 13,
};
enum cublasOperation_t { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1, CUBLAS_OP_C = 2 };
enum cublasMath_t { CUBLAS_DEFAULT_MATH = 0, CUBLAS_TF32_TENSOR_OP_MATH = 3 };
using cublasHandle_t = struct EmulatedCublas*;

cublasStatus_t cublasCreate(cublasHandle_t* handle);
cublasStatus_t cublasDestroy(cublasHandle_t handle);
const char* cublasGetStatusString(cublasStatus_t status);
// With CUBLAS_TF32_TENSOR_OP_MATH, the float32 entries round every element of A and B to TF32
// (11 significant bits: the nearest, ties away from zero, as the GPU's conversion does) before
// the product; the sums stay float32. float64 entries are unaffected.
cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode);

// For every i < batch: C[i] = alpha * op(A[i]) op(B[i]) + beta * C[i], column-major, where op(A)
// is m x k, op(B) k x n and C[i] m x n.
cublasStatus_t cublasSgemmBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                                  int n, int k, const float* alpha, const float* const a[], int lda,
                                  const float* const b[], int ldb, const float* beta, float* const c[], int ldc,
                                  int batch);
cublasStatus_t cublasDgemmBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                                  int n, int k, const double* alpha, const double* const a[], int lda,
                                  const double* const b[], int ldb, const double* beta, double* const c[], int ldc,
                                  int batch);

// One product: C = alpha * op(A) op(B) + beta * C, column-major.
cublasStatus_t cublasSgemm(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                           int k, const float* alpha, const float* a, int lda, const float* b, int ldb,
                           const float* beta, float* c, int ldc);
cublasStatus_t cublasDgemm(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                           int k, const double* alpha, const double* a, int lda, const double* b, int ldb,
                           const double* beta, double* c, int ldc);

// For every i < batch: the product of the matrices at a + i * stride_a and b + i * stride_b into
// c + i * stride_c (a stride of 0 shares one matrix across the batch).
cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                         int m, int n, int k, const float* alpha, const float* a, int lda,
                                         long long stride_a, const float* b, int ldb, long long stride_b,
                                         const float* beta, float* c, int ldc, long long stride_c, int batch);
cublasStatus_t cublasDgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                         int m, int n, int k, const double* alpha, const double* a, int lda,
                                         long long stride_a, const double* b, int ldb, long long stride_b,
                                         const double* beta, double* c, int ldc, long long stride_c, int batch);

}  // namespace axiom::cuda_emulator

using enum axiom::cuda_emulator::cublasStatus_t;
using enum axiom::cuda_emulator::cublasOperation_t;
using enum axiom::cuda_emulator::cublasMath_t;
using axiom::cuda_emulator::cublasCreate;
using axiom::cuda_emulator::cublasDestroy;
using axiom::cuda_emulator::cublasDgemm;
using axiom::cuda_emulator::cublasDgemmBatched;
using axiom::cuda_emulator::cublasDgemmStridedBatched;
using axiom::cuda_emulator::cublasGetStatusString;
using axiom::cuda_emulator::cublasHandle_t;
using axiom::cuda_emulator::cublasMath_t;
using axiom::cuda_emulator::cublasOperation_t;
using axiom::cuda_emulator::cublasSetMathMode;
using axiom::cuda_emulator::cublasSgemm;
using axiom::cuda_emulator::cublasSgemmBatched;
using axiom::cuda_emulator::cublasSgemmStridedBatched;
using axiom::cuda_emulator::cublasStatus_t;
