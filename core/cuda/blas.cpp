#include "core/cuda/blas.h"

#include <algorithm>
#include <type_traits>

#include "core/cuda/allocator.h"
#include "core/cuda/runtime.h"
#include "core/error.h"

namespace axiom::core::cuda {

namespace {

// A host array of pointers, copied into device memory for one batched call (cuBLAS reads the
// pointers on the GPU). The block goes back to the cache when the call has been queued: any
// later use of it is queued after the call, on the same stream.
class DevicePointers {
 public:
  template <typename P>
  DevicePointers(const P* host, size_t count) : nbytes_(count * sizeof(P)) {
    data_ = device_allocator().allocate(nbytes_);
    check(cudaMemcpy(data_, host, nbytes_, cudaMemcpyHostToDevice), "matmul");
  }
  ~DevicePointers() { device_allocator().deallocate(data_, nbytes_); }
  DevicePointers(const DevicePointers&) = delete;
  DevicePointers& operator=(const DevicePointers&) = delete;
  template <typename P>
  P* as() const {
    return static_cast<P*>(data_);
  }

 private:
  size_t nbytes_;
  void* data_;
};

int as_int(int64_t value, const char* what) {
  if (value > INT32_MAX) throw Error("matmul", what, " = ", value, " is beyond what cuBLAS takes (2^31 - 1)");
  return static_cast<int>(value);
}

}  // namespace

template <typename T>
void gemm_batched(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const std::vector<const T*>& a,
                  int64_t lda, const std::vector<const T*>& b, int64_t ldb, T beta, const std::vector<T*>& c, int64_t ldc) {
  constexpr size_t kMostPerCall = 65535;
  const cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int M = as_int(m, "m"), N = as_int(n, "n"), K = as_int(k, "k");
  const int LDA = as_int(lda, "lda"), LDB = as_int(ldb, "ldb"), LDC = as_int(ldc, "ldc");
  for (size_t first = 0; first < c.size(); first += kMostPerCall) {
    const size_t count = std::min(kMostPerCall, c.size() - first);
    const DevicePointers pa(a.data() + first, count), pb(b.data() + first, count), pc(c.data() + first, count);
    // column-major C^T [n, m] = op(B)^T [n, k] op(A)^T [k, m]  (see blas.h)
    if constexpr (std::is_same_v<T, float>) {
      check(cublasSgemmBatched(cublas(), op_b, op_a, N, M, K, &alpha, pb.as<const float*>(), LDB, pa.as<const float*>(), LDA,
                               &beta, pc.as<float*>(), LDC, static_cast<int>(count)),
            "matmul");
    } else {
      check(cublasDgemmBatched(cublas(), op_b, op_a, N, M, K, &alpha, pb.as<const double*>(), LDB, pa.as<const double*>(), LDA,
                               &beta, pc.as<double*>(), LDC, static_cast<int>(count)),
            "matmul");
    }
  }
}

template void gemm_batched<float>(bool, bool, int64_t, int64_t, int64_t, float, const std::vector<const float*>&, int64_t,
                                  const std::vector<const float*>&, int64_t, float, const std::vector<float*>&, int64_t);
template void gemm_batched<double>(bool, bool, int64_t, int64_t, int64_t, double, const std::vector<const double*>&, int64_t,
                                   const std::vector<const double*>&, int64_t, double, const std::vector<double*>&, int64_t);

}  // namespace axiom::core::cuda
