// Matrix products on the GPU: out[b] = a[b] @ b[b] for every batch index b, in one batched cuBLAS
// call (core/cuda/blas.h). Views are read in place where cuBLAS can (core/matrix_layout.h); the
// batch may have any strides, because each matrix is passed by its own pointer.
#include "core/cuda/blas.h"
#include "core/cuda/cuda_backend.h"
#include "core/cuda/runtime.h"
#include "core/matrix_layout.h"
#include "core/tensor.h"

namespace AXIOM_CUDA_NAMESPACE {

namespace {

template <typename T>
std::vector<T*> matrix_pointers(const Tensor& x) {
  T* base = static_cast<T*>(x.raw_data());
  std::vector<T*> pointers;
  for (int64_t offset : batch_offsets(x)) pointers.push_back(base + offset);
  return pointers;
}

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
  const std::vector<T*> a_at = matrix_pointers<T>(a), b_at = matrix_pointers<T>(b);
  std::vector<T*> c_at;
  for (size_t i = 0; i < a_at.size(); ++i) c_at.push_back(static_cast<T*>(out.raw_data()) + static_cast<int64_t>(i) * m * n);
  gemm_batched<T>(a_layout->transposed, b_layout->transposed, m, n, k, T(1), {a_at.begin(), a_at.end()}, a_layout->ld,
                  {b_at.begin(), b_at.end()}, b_layout->ld, accumulate ? T(1) : T(0), c_at, n);
}

}  // namespace

void CudaBackend::matmul(const Tensor& a, const Tensor& b, const Tensor& out, bool accumulate) {
  require_device("matmul");
  dispatch_floating("matmul", a.dtype(), [&]<typename T>() { matmul_typed<T>(a, b, out, accumulate); });
}

}  // namespace AXIOM_CUDA_NAMESPACE
