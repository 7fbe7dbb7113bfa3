// Matrix products through OpenBLAS: out[b] = a[b] @ b[b] for every batch index b. Views are
// read in place where BLAS can (core/matrix_layout.h). Large float32 products go to oneDNN when
// this build has it (onednn_gemm.h), in float32 or bfloat16 (core/launch.h: MatmulPrecision).
//
// How the work is spread over the cores (see also core/parallel.h):
// - many small GEMMs (m*n*k <= 64^3, which OpenBLAS runs on the calling thread) are spread over
//   TBB threads, one GEMM per task;
// - large ones run one after another, each threaded by OpenBLAS; and x [B, T, D] @ w [D, E] with
//   large matrices becomes one GEMM of [B*T, D] @ [D, E] when x's rows are evenly spaced.
#include <cblas.h>

#include "core/cpu/onednn_gemm.h"
#include "core/cpu/blas.h"
#include "core/cpu/cpu_backend.h"
#include "core/cpu/loops.h"
#include "core/matrix_layout.h"
#include "core/launch.h"
#include "core/tensor.h"

namespace axiom::core::cpu {

namespace {

constexpr int64_t kSmallGemm = 64 * 64 * 64;  // m*n*k at or below which OpenBLAS uses one thread

// c = a @ b (beta 0), or c += a @ b (beta 1), with a and b as BLAS reads them. A large float32
// product goes to oneDNN when this build has it, in the process's precision (core/launch.h:
// MatmulPrecision); everything else to OpenBLAS.
template <typename T>
void gemm(const MatrixLayout& a, const MatrixLayout& b, int64_t m, int64_t n, int64_t k, const T* pa, const T* pb,
          T* pc, T beta) {
  if constexpr (std::is_same_v<T, float>) {
    if (m * n * k > kSmallGemm && onednn_built()) {
      const bool bfloat16 = matmul_precision() == MatmulPrecision::bfloat16;
      return onednn_gemm(a, b, m, n, k, pa, pb, pc, n, /*accumulate=*/beta != 0, bfloat16);
    }
  }
  cpu::gemm<T>(a.transposed, b.transposed, m, n, k, T(1), pa, a.ld, pb, b.ld, beta, pc, n);
}

template <typename T>
void matmul_typed(Tensor a, Tensor b, const Tensor& out, bool accumulate) {
  const int64_t m = a.size(-2), k = a.size(-1), n = b.size(-1);
  if (m == 0 || n == 0) return;
  if (k == 0) {  // an empty sum: zeros (or nothing to add)
    if (!accumulate) std::fill(out.data<T>(), out.data<T>() + out.numel(), T(0));
    return;
  }
  const T beta = accumulate ? T(1) : T(0);
  auto a_view = matrix_layout(m, k, a.stride(-2), a.stride(-1));
  if (!a_view) a = compact_matrices(a), a_view = matrix_layout(m, k, a.stride(-2), a.stride(-1));
  auto b_view = matrix_layout(k, n, b.stride(-2), b.stride(-1));
  if (!b_view) b = compact_matrices(b), b_view = matrix_layout(k, n, b.stride(-2), b.stride(-1));

  T* c = out.data<T>();
  if (a.dim() == 2) return gemm<T>(*a_view, *b_view, m, n, k, a.data<T>(), b.data<T>(), c, beta);
  const bool large = m * n * k > kSmallGemm;
  if (large && m > 1 && is_shared_across_batch(b) && !a_view->transposed && rows_fold_into_one_matrix(a)) {
    return gemm<T>(*a_view, *b_view, out.numel() / n, n, k, a.data<T>(), b.data<T>(), c, beta);
  }
  const std::vector<int64_t> a_at = batch_offsets(a), b_at = batch_offsets(b);
  const int64_t batches = static_cast<int64_t>(a_at.size());
  auto one_matrix = [&](int64_t i) {
    gemm<T>(*a_view, *b_view, m, n, k, a.data<T>() + a_at[i], b.data<T>() + b_at[i], c + i * m * n, beta);
  };
  if (!large && batches > 1) {
    parallel_for(batches, std::max<int64_t>(1, kSmallGemm / (m * n * k)), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) one_matrix(i);
    });
  } else {
    for (int64_t i = 0; i < batches; ++i) one_matrix(i);
  }
}

}  // namespace

void CpuBackend::matmul(const Tensor& a, const Tensor& b, const Tensor& out, bool accumulate) {
  dispatch_floating("matmul", a.dtype(), [&]<typename T>() { matmul_typed<T>(a, b, out, accumulate); });
}

}  // namespace axiom::core::cpu
