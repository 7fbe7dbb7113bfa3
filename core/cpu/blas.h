// OpenBLAS, set up once: the fastest kernels this CPU can run, and the thread count.
#pragma once

#include <cblas.h>

#include <cstdint>
#include <string>
#include <type_traits>

namespace axiom::core::cpu {

// Makes OpenBLAS use the best kernels this CPU supports (see blas.cpp), the first time it is
// called (the CPU backend's constructor calls it), and says which it uses and why:
// "SkylakeX (OpenBLAS chose Haswell for this CPU; axiom switched to the faster kernels)".
const std::string& blas_kernels_report();

void set_blas_threads(int count);

// c [m, n] (row stride ldc) = alpha * op(a) op(b) + beta * c, row-major; op transposes or not.
// cblas_sgemm for float, cblas_dgemm for double.
template <typename T>
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b,
          int64_t ldb, T beta, T* c, int64_t ldc) {
  const CBLAS_TRANSPOSE ta = trans_a ? CblasTrans : CblasNoTrans, tb = trans_b ? CblasTrans : CblasNoTrans;
  const auto M = static_cast<blasint>(m), N = static_cast<blasint>(n), K = static_cast<blasint>(k);
  const auto LDA = static_cast<blasint>(lda), LDB = static_cast<blasint>(ldb), LDC = static_cast<blasint>(ldc);
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(CblasRowMajor, ta, tb, M, N, K, alpha, a, LDA, b, LDB, beta, c, LDC);
  } else {
    cblas_dgemm(CblasRowMajor, ta, tb, M, N, K, alpha, a, LDA, b, LDB, beta, c, LDC);
  }
}

}  // namespace axiom::core::cpu
