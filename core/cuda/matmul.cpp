// Matrix products on the GPU: out[b] = a[b] @ b[b] for every batch index b, as few cuBLAS calls as
// the layout allows (core/cuda/blas.h), none of which uploads anything when the batch is regular:
//   - one product, or a batch of rows times one shared matrix ([B, M, K] @ [K, N], as every
//     linear layer is): one gemm of [B*M, K] @ [K, N];
//   - matrices evenly spaced in memory (a contiguous batch, a broadcast one): one strided-batched call;
//   - any other batch: one pointer per matrix, uploaded for a batched call.
// Views are read in place where cuBLAS can (core/matrix_layout.h).
#include "core/cuda/blas.h"
#include "core/cuda/cuda_backend.h"
#include "core/cuda/runtime.h"
#include "core/matrix_layout.h"
#include "core/tensor.h"

namespace AXIOM_CUDA_NAMESPACE {

namespace {

template <typename T>
void matmul_typed(Tensor a, Tensor b, const Tensor& out, bool accumulate) {
  const int64_t m = a.size(-2), k = a.size(-1), n = b.size(-1);
  if (m == 0 || n == 0 || out.numel() == 0) return;
  if (k == 0) {  // an empty sum: zeros (or nothing to add)
    if (!accumulate) backend(out.device()).fill(out, 0);
    return;
  }
  auto a_layout = matrix_layout(m, k, a.stride(-2), a.stride(-1));
  if (!a_layout) a = compact_matrices(a), a_layout = matrix_layout(m, k, a.stride(-2), a.stride(-1));
  auto b_layout = matrix_layout(k, n, b.stride(-2), b.stride(-1));
  if (!b_layout) b = compact_matrices(b), b_layout = matrix_layout(k, n, b.stride(-2), b.stride(-1));
  const T beta = accumulate ? T(1) : T(0);
  const int64_t batches = out.numel() / (m * n);  // out: contiguous [..., m, n]
  GemmOperand<const T> a_op{static_cast<const T*>(a.raw_data()), a_layout->ld, a_layout->transposed};
  GemmOperand<const T> b_op{static_cast<const T*>(b.raw_data()), b_layout->ld, b_layout->transposed};
  GemmOperand<T> c_op{static_cast<T*>(out.raw_data()), n, false, m * n};

  if (batches == 1) return gemm<T>(m, n, k, T(1), a_op, b_op, beta, c_op);
  if (m > 1 && is_shared_across_batch(b) && !a_layout->transposed && rows_fold_into_one_matrix(a)) {
    return gemm<T>(batches * m, n, k, T(1), a_op, b_op, beta, c_op);  // [B*M, K] @ [K, N]
  }
  const std::vector<int64_t> a_offsets = batch_offsets(a), b_offsets = batch_offsets(b);
  const std::optional<int64_t> a_stride = even_spacing(a_offsets), b_stride = even_spacing(b_offsets);
  if (a_stride && b_stride) {
    a_op.stride = *a_stride, b_op.stride = *b_stride;
    return gemm_strided_batched<T>(m, n, k, T(1), a_op, b_op, beta, c_op, batches);
  }
  std::vector<const T*> a_at, b_at;
  std::vector<T*> c_at;
  for (int64_t i = 0; i < batches; ++i) {
    a_at.push_back(a_op.data + a_offsets[i]);
    b_at.push_back(b_op.data + b_offsets[i]);
    c_at.push_back(c_op.data + i * m * n);
  }
  gemm_batched<T>(a_op.transposed, b_op.transposed, m, n, k, T(1), a_at, a_op.ld, b_at, b_op.ld, beta, c_at, n);
}

}  // namespace

void CudaBackend::matmul(const Tensor& a, const Tensor& b, const Tensor& out, bool accumulate) {
  require_device("matmul");
  dispatch_floating("matmul", a.dtype(), [&]<typename T>() { matmul_typed<T>(a, b, out, accumulate); });
}

}  // namespace AXIOM_CUDA_NAMESPACE
