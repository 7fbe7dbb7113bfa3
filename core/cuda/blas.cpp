#include "core/cuda/blas.h"

#include <algorithm>
#include <type_traits>

#include "core/cuda/allocator.h"
#include "core/cuda/runtime.h"
#include "core/error.h"
#include "core/launch.h"

namespace AXIOM_CUDA_NAMESPACE {

namespace {

// The a, b and c pointer arrays of one batched call, copied into one block of device memory
// (cuBLAS reads the pointers on the GPU) with one asynchronous copy, queued on the same stream as
// the call. The block goes back to the cache when the call has been queued: any later use of it
// is queued after the call.
class DevicePointers {
 public:
  DevicePointers(const std::vector<const void*>& host) : nbytes_(host.size() * sizeof(void*)) {
    data_ = device_allocator().allocate(nbytes_);
    try {
      check(cudaMemcpyAsync(data_, host.data(), nbytes_, cudaMemcpyHostToDevice), "matmul");
    } catch (...) {
      device_allocator().deallocate(data_, nbytes_);
      throw;
    }
  }
  ~DevicePointers() { device_allocator().deallocate(data_, nbytes_); }
  DevicePointers(const DevicePointers&) = delete;
  DevicePointers& operator=(const DevicePointers&) = delete;
  // The array that starts `first` pointers into the block.
  template <typename P>
  P* at(size_t first) const {
    return static_cast<P*>(data_) + first;
  }

 private:
  size_t nbytes_;
  void* data_;
};

int as_int(int64_t value, const char* what) {
  if (value > INT32_MAX) throw Error("matmul", what, " = ", value, " is beyond what cuBLAS takes (2^31 - 1)");
  return static_cast<int>(value);
}

constexpr size_t kMostPerCall = 65535;

// Before every float32 call: TF32 tensor-core products when the process asked for them
// (core::set_matmul_precision), cuBLAS's float32 otherwise. float64 calls are never affected.
void use_math_mode_of_precision() {
  const bool tf32 = matmul_precision() == MatmulPrecision::tf32;
  check(cublasSetMathMode(cublas(), tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH), "matmul");
}

cublasOperation_t operation(bool transposed) { return transposed ? CUBLAS_OP_T : CUBLAS_OP_N; }

}  // namespace

// column-major C^T [n, m] = op(B)^T [n, k] op(A)^T [k, m]  (see blas.h): b goes first
template <typename T>
void gemm(int64_t m, int64_t n, int64_t k, T alpha, GemmOperand<const T> a, GemmOperand<const T> b, T beta,
          GemmOperand<T> c) {
  const int M = as_int(m, "m"), N = as_int(n, "n"), K = as_int(k, "k");
  const int LDA = as_int(a.ld, "lda"), LDB = as_int(b.ld, "ldb"), LDC = as_int(c.ld, "ldc");
  if constexpr (std::is_same_v<T, float>) {
    use_math_mode_of_precision();
    check(cublasSgemm(cublas(), operation(b.transposed), operation(a.transposed), N, M, K, &alpha, b.data, LDB, a.data,
                      LDA, &beta, c.data, LDC),
          "matmul");
  } else {
    check(cublasDgemm(cublas(), operation(b.transposed), operation(a.transposed), N, M, K, &alpha, b.data, LDB, a.data,
                      LDA, &beta, c.data, LDC),
          "matmul");
  }
}

template <typename T>
void gemm_strided_batched(int64_t m, int64_t n, int64_t k, T alpha, GemmOperand<const T> a, GemmOperand<const T> b,
                          T beta, GemmOperand<T> c, int64_t count) {
  const int M = as_int(m, "m"), N = as_int(n, "n"), K = as_int(k, "k");
  const int LDA = as_int(a.ld, "lda"), LDB = as_int(b.ld, "ldb"), LDC = as_int(c.ld, "ldc");
  for (int64_t first = 0; first < count; first += kMostPerCall) {
    const int batch = static_cast<int>(std::min<int64_t>(kMostPerCall, count - first));
    const T* a_first = a.data + first * a.stride;
    const T* b_first = b.data + first * b.stride;
    T* c_first = c.data + first * c.stride;
    if constexpr (std::is_same_v<T, float>) {
      use_math_mode_of_precision();
      check(cublasSgemmStridedBatched(cublas(), operation(b.transposed), operation(a.transposed), N, M, K, &alpha,
                                      b_first, LDB, b.stride, a_first, LDA, a.stride, &beta, c_first, LDC, c.stride,
                                      batch),
            "matmul");
    } else {
      check(cublasDgemmStridedBatched(cublas(), operation(b.transposed), operation(a.transposed), N, M, K, &alpha,
                                      b_first, LDB, b.stride, a_first, LDA, a.stride, &beta, c_first, LDC, c.stride,
                                      batch),
            "matmul");
    }
  }
}

template <typename T>
void gemm_batched(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const std::vector<const T*>& a,
                  int64_t lda, const std::vector<const T*>& b, int64_t ldb, T beta, const std::vector<T*>& c,
                  int64_t ldc) {
  const cublasOperation_t op_a = operation(trans_a), op_b = operation(trans_b);
  const int M = as_int(m, "m"), N = as_int(n, "n"), K = as_int(k, "k");
  const int LDA = as_int(lda, "lda"), LDB = as_int(ldb, "ldb"), LDC = as_int(ldc, "ldc");
  if (a.size() != c.size() || b.size() != c.size())
    throw Error("matmul", "gemm_batched: ", a.size(), ", ", b.size(), " and ", c.size(), " matrices");
  for (size_t first = 0; first < c.size(); first += kMostPerCall) {
    const size_t count = std::min(kMostPerCall, c.size() - first);
    std::vector<const void*> host(a.begin() + first, a.begin() + first + count);  // a, then b, then c
    host.insert(host.end(), b.begin() + first, b.begin() + first + count);
    host.insert(host.end(), c.begin() + first, c.begin() + first + count);
    const DevicePointers pointers(host);
    using P = T*;
    using CP = const T*;
    // column-major C^T [n, m] = op(B)^T [n, k] op(A)^T [k, m]  (see blas.h)
    if constexpr (std::is_same_v<T, float>) {
      use_math_mode_of_precision();
      check(cublasSgemmBatched(cublas(), op_b, op_a, N, M, K, &alpha, pointers.at<CP>(count), LDB, pointers.at<CP>(0),
                               LDA, &beta, pointers.at<P>(2 * count), LDC, static_cast<int>(count)),
            "matmul");
    } else {
      check(cublasDgemmBatched(cublas(), op_b, op_a, N, M, K, &alpha, pointers.at<CP>(count), LDB, pointers.at<CP>(0),
                               LDA, &beta, pointers.at<P>(2 * count), LDC, static_cast<int>(count)),
            "matmul");
    }
  }
}

template void gemm<float>(int64_t, int64_t, int64_t, float, GemmOperand<const float>, GemmOperand<const float>, float,
                          GemmOperand<float>);
template void gemm<double>(int64_t, int64_t, int64_t, double, GemmOperand<const double>, GemmOperand<const double>,
                           double, GemmOperand<double>);
template void gemm_strided_batched<float>(int64_t, int64_t, int64_t, float, GemmOperand<const float>,
                                          GemmOperand<const float>, float, GemmOperand<float>, int64_t);
template void gemm_strided_batched<double>(int64_t, int64_t, int64_t, double, GemmOperand<const double>,
                                           GemmOperand<const double>, double, GemmOperand<double>, int64_t);
template void gemm_batched<float>(bool, bool, int64_t, int64_t, int64_t, float, const std::vector<const float*>&,
                                  int64_t, const std::vector<const float*>&, int64_t, float, const std::vector<float*>&,
                                  int64_t);
template void gemm_batched<double>(bool, bool, int64_t, int64_t, int64_t, double, const std::vector<const double*>&,
                                   int64_t, const std::vector<const double*>&, int64_t, double,
                                   const std::vector<double*>&, int64_t);

}  // namespace AXIOM_CUDA_NAMESPACE
