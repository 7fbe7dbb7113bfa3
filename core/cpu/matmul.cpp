// Matrix products: out[b] = a[b] @ b[b] for every batch index b. Views are read in place where
// BLAS can (core/matrix_layout.h). A float32 GEMM goes to OpenBLAS or oneDNN, whichever this CPU
// runs its shape faster (core/cpu/gemm_choice.h), in float32 or bfloat16 (core/matmul_precision.h);
// float64 to OpenBLAS.
//
// How the work is spread over the cores (see also core/parallel.h): both libraries compute on
// axiom's threads alone (OpenBLAS is told one thread, oneDNN's OpenMP one), so no second thread
// pool spins while the next op runs.
// - many small GEMMs (m*n*k <= 64^3) are spread over the threads, one GEMM per task;
// - a large one is split into bands of rows or columns of c, one per thread (core/cpu/bands.h); and
//   x [B, T, D] @ w [D, E] with large matrices becomes one GEMM of [B*T, D] @ [D, E] when x's rows
//   are evenly spaced (core/matrix_layout.h: plan_product).
#include <cblas.h>

#include "core/cpu/bands.h"
#include "core/cpu/blas.h"
#include "core/cpu/gemm_choice.h"
#include "core/cpu/onednn_gemm.h"
#include "core/cpu/cpu_backend.h"
#include "core/cpu/loops.h"
#include "core/factory.h"
#include "core/matrix_layout.h"
#include "core/launch.h"
#include "core/tensor.h"

namespace axiom::core::cpu {

namespace {

// c = a @ b (beta 0), or c += a @ b (beta 1), on this thread, in OpenBLAS.
template <typename T>
void openblas_gemm(const MatrixLayout& a, const MatrixLayout& b, const Band& band, int64_t k, const T* pa, const T* pb,
                   T* pc, int64_t ldc, T beta) {
  const T* a_band = pa + (a.transposed ? band.row : band.row * a.ld);        // rows [row, row + rows) of a
  const T* b_band = pb + (b.transposed ? band.column * b.ld : band.column);  // columns of b
  cpu::gemm<T>(a.transposed, b.transposed, band.rows, band.columns, k, T(1), a_band, a.ld, b_band, b.ld, beta,
               pc + band.row * ldc + band.column, ldc);
}

// c [m, n] = a @ b (beta 0) or c += a @ b (beta 1), split into `bands` bands run in parallel, in
// the library chosen for this shape (float32) or OpenBLAS (float64); bfloat16 operands (their bits,
// uint16_t) into float32 in oneDNN. A bias [n] (oneDNN's alone) is added to every row as the
// product is written.
template <typename In, typename T>
void gemm(const MatrixLayout& a, const MatrixLayout& b, int64_t m, int64_t n, int64_t k, const In* pa, const In* pb,
          T* pc, T beta, GemmLibrary library, int64_t bands, const T* bias = nullptr) {
  if constexpr (std::is_same_v<In, uint16_t>) {
    return onednn_gemm_bfloat16(a, b, m, n, k, pa, pb, {.c = pc, .ldc = n, .accumulate = beta != 0, .bias = bias},
                                bands);
  } else {
    if constexpr (std::is_same_v<T, float>) {
      if (library == GemmLibrary::onednn) {
        const bool bfloat16 = takes_bfloat16_operands(m, n, k);  // large products only
        return onednn_gemm(a, b, m, n, k, pa, pb, {.c = pc, .ldc = n, .accumulate = beta != 0, .bias = bias}, bfloat16,
                           bands);
      }
    }
    const std::vector<Band> parts = bands_of(m, n, bands);
    parallel_for(static_cast<int64_t>(parts.size()), 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) openblas_gemm<T>(a, b, parts[i], k, pa, pb, pc, n, beta);
    });
  }
}

// The library of `plan`'s GEMMs: float32 by this CPU's table, float64 always OpenBLAS, bfloat16
// operands always oneDNN.
template <typename In>
GemmLibrary library_for(const ProductPlan& plan) {
  if constexpr (std::is_same_v<In, float>) return gemm_library_for(plan.gemm, plan.count);
  if constexpr (std::is_same_v<In, uint16_t>) return GemmLibrary::onednn;
  return GemmLibrary::openblas;
}

// Every row of out [..., N] (contiguous) set to bias [N].
template <typename T>
void fill_rows(const Tensor& out, const T* bias) {
  const int64_t n = out.size(-1), rows = out.numel() / n;
  T* rows_at = out.data<T>();
  parallel_for(rows, std::max<int64_t>(1, kGrain / n), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) std::copy(bias, bias + n, rows_at + i * n);
  });
}

// out = a @ b, out += a @ b (accumulate) or out = a @ b + bias (bias [N], or null); a and b of
// type In, out and bias of type T (bfloat16 operands, In = uint16_t, into float32; else In = T).
template <typename In, typename T = In>
void matmul_typed(Tensor a, Tensor b, const Tensor& out, bool accumulate, const T* bias = nullptr) {
  const int64_t m = a.size(-2), k = a.size(-1), n = b.size(-1);
  if (out.numel() == 0) return;
  if (k == 0) {  // an empty sum: zeros, the bias, or nothing to add
    if (bias) return fill_rows(out, bias);
    if (!accumulate) std::fill(out.data<T>(), out.data<T>() + out.numel(), T(0));
    return;
  }
  T beta = accumulate ? T(1) : T(0);
  auto a_view = matrix_layout(m, k, a.stride(-2), a.stride(-1));
  if (!a_view) a = compact_matrices(a), a_view = matrix_layout(m, k, a.stride(-2), a.stride(-1));
  auto b_view = matrix_layout(k, n, b.stride(-2), b.stride(-1));
  if (!b_view) b = compact_matrices(b), b_view = matrix_layout(k, n, b.stride(-2), b.stride(-1));

  const ProductPlan plan = plan_product(a, b);
  const GemmLibrary library = library_for<In>(plan);
  const bool large = is_large(plan.gemm);
  const int64_t bands = large ? num_threads() : 1;
  if (bias && !(library == GemmLibrary::onednn && plan.count == 1)) {  // the bias first, the product added onto it
    fill_rows(out, bias);
    bias = nullptr, beta = T(1);
  }
  T* c = out.data<T>();
  if (plan.count == 1) {
    return gemm(*a_view, *b_view, plan.gemm.m, n, k, a.data<In>(), b.data<In>(), c, beta, library, bands, bias);
  }
  const std::vector<int64_t> a_at = batch_offsets(a), b_at = batch_offsets(b);
  auto one_matrix = [&](int64_t i) {
    gemm(*a_view, *b_view, m, n, k, a.data<In>() + a_at[i], b.data<In>() + b_at[i], c + i * m * n, beta, library,
         bands);
  };
  if (!large) {
    parallel_for(plan.count, std::max<int64_t>(1, kSmallGemm / (m * n * k)), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) one_matrix(i);
    });
  } else {
    for (int64_t i = 0; i < plan.count; ++i) one_matrix(i);
  }
}

// out (bfloat16) = a @ b + bias, each float32 sum rounded as oneDNN writes it, for bfloat16 a and b
// that fold into one product (a [..., M, K] of contiguous rows @ b [K, N] does). False, and nothing
// written, for any other product.
bool linear_rounded_as_written(Tensor a, Tensor b, const Tensor& bias, const Tensor& out) {
  const int64_t m = a.size(-2), k = a.size(-1), n = b.size(-1);
  const auto a_view = matrix_layout(m, k, a.stride(-2), a.stride(-1)),
             b_view = matrix_layout(k, n, b.stride(-2), b.stride(-1));
  if (!a_view || !b_view || k == 0 || out.numel() == 0) return false;
  const ProductPlan plan = plan_product(a, b);
  if (plan.count != 1) return false;
  const int64_t bands = is_large(plan.gemm) ? num_threads() : 1;
  onednn_gemm_bfloat16(*a_view, *b_view, plan.gemm.m, n, k, a.data<uint16_t>(), b.data<uint16_t>(),
                       {.c = nullptr, .ldc = n, .bias = bias.data<float>(), .c_bfloat16 = out.data<uint16_t>()}, bands);
  return true;
}

}  // namespace

void CpuBackend::matmul(const Tensor& a, const Tensor& b, const Tensor& out, bool accumulate) {
  if (a.dtype() == Dtype::bfloat16) return matmul_typed<uint16_t, float>(a, b, out, accumulate);
  dispatch_floating("matmul", a.dtype(), [&]<typename T>() { matmul_typed<T>(a, b, out, accumulate); });
}

void CpuBackend::linear(const Tensor& a, const Tensor& b, const Tensor& bias, const Tensor& out) {
  if (out.dtype() == Dtype::bfloat16) {  // of bfloat16 a and b (core::linear with a bfloat16 output)
    if (linear_rounded_as_written(a, b, bias, out)) return;
    const Tensor sums = empty(out.shape(), Dtype::float32, out.device());
    matmul_typed<uint16_t, float>(a, b, sums, false, bias.data<float>());
    return copy(sums, out);  // rounded
  }
  if (a.dtype() == Dtype::bfloat16) return matmul_typed<uint16_t, float>(a, b, out, false, bias.data<float>());
  dispatch_floating("linear", a.dtype(), [&]<typename T>() { matmul_typed<T>(a, b, out, false, bias.data<T>()); });
}

}  // namespace axiom::core::cpu
