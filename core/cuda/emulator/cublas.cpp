// The cuBLAS stand-in (include/cublas_v2.h): validated like cuBLAS, computed by OpenBLAS.
#include <cblas.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/cuda/emulator/include/cublas_v2.h"
#include "core/cuda/emulator/memory.h"

namespace axiom::cuda_emulator {

struct EmulatedCublas {
  cublasMath_t math = CUBLAS_DEFAULT_MATH;
};

namespace {

cublasStatus_t fail(cublasStatus_t status, const std::string& detail) {
  set_failure_detail(detail);
  return status;
}

// One column-major operand as cuBLAS reads it: `rows` x `cols` (as stored), `ld` apart.
struct Operand {
  const char* name;
  int rows, cols, ld;
};

// "lda = 3 < max(1, 4), the rows of A as stored" when ld is too small, else "".
std::string bad_leading_dimension(const Operand& x) {
  if (x.ld >= std::max(1, x.rows)) return "";
  return std::string("ld") + x.name + " = " + std::to_string(x.ld) + " < max(1, " + std::to_string(x.rows) +
         "), the rows of " + x.name + " as stored";
}

// Checks that the array of a batch's pointers lies in device memory.
template <typename T>
std::string bad_pointer_array(const char* call, const Operand& x, const T* const* pointers, int batch) {
  if (batch == 0 || is_device_range(pointers, sizeof(T*) * batch)) return "";
  return std::string(call) + ": the array of " + x.name + " pointers " + describe_range(pointers, sizeof(T*) * batch);
}

// Checks that matrix i of the batch (at matrix_at(i)) lies in device memory, for every i.
template <typename MatrixAt>
std::string bad_matrices(const char* call, const Operand& x, MatrixAt matrix_at, int batch, size_t element_size) {
  if (batch == 0 || x.rows == 0 || x.cols == 0) return "";
  const size_t extent = (size_t(x.cols) - 1) * x.ld + x.rows;  // elements from the first to the last read
  for (int i = 0; i < batch; ++i) {
    if (!is_device_range(matrix_at(i), extent * element_size)) {
      return std::string(call) + ": " + x.name + "[" + std::to_string(i) + "] " +
             describe_range(matrix_at(i), extent * element_size);
    }
  }
  return "";
}

CBLAS_TRANSPOSE as_cblas(cublasOperation_t op) { return op == CUBLAS_OP_N ? CblasNoTrans : CblasTrans; }

// x rounded to TF32: 10 bits after the point (the nearest, ties away from zero); infinities and
// NaN kept. Adding half of the dropped part to the bits, then dropping it, rounds the magnitude.
float tf32(float x) {
  if (!std::isfinite(x)) return x;
  return std::bit_cast<float>((std::bit_cast<uint32_t>(x) + 0x1000u) & ~0x1FFFu);
}

// The whole extent of one operand ((cols - 1) * ld + rows elements from its first), rounded to TF32.
std::vector<float> rounded_to_tf32(const float* first, const Operand& x) {
  std::vector<float> rounded(x.rows == 0 || x.cols == 0 ? 0 : (size_t(x.cols) - 1) * x.ld + x.rows);
  for (size_t e = 0; e < rounded.size(); ++e) rounded[e] = tf32(first[e]);
  return rounded;
}

// A gemm call's operands as cuBLAS reads them: A m x k (k x m when transposed), B k x n (n x k),
// C m x n.
struct GemmShape {
  Operand a, b, c;
};

GemmShape gemm_shape(cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k, int lda, int ldb,
                     int ldc) {
  return {{"a", transa == CUBLAS_OP_N ? m : k, transa == CUBLAS_OP_N ? k : m, lda},
          {"b", transb == CUBLAS_OP_N ? k : n, transb == CUBLAS_OP_N ? n : k, ldb},
          {"c", m, n, ldc}};
}

// What is wrong with a gemm call's arguments, with the status cuBLAS would return, or "".
template <typename T>
std::string bad_arguments(const std::string& call, cublasHandle_t handle, cublasOperation_t transa,
                          cublasOperation_t transb, int m, int n, int k, const T* alpha, const T* beta, int batch,
                          const GemmShape& shape, cublasStatus_t& status) {
  status = CUBLAS_STATUS_INVALID_VALUE;
  if (!handle) {
    status = CUBLAS_STATUS_NOT_INITIALIZED;
    return call + ": no handle (cublasCreate was not called)";
  }
  for (cublasOperation_t op : {transa, transb}) {
    if (op != CUBLAS_OP_N && op != CUBLAS_OP_T && op != CUBLAS_OP_C)
      return call + ": transpose flag " + std::to_string(int(op));
  }
  if (m < 0 || n < 0 || k < 0 || batch < 0) {
    return call + ": m = " + std::to_string(m) + ", n = " + std::to_string(n) + ", k = " + std::to_string(k) +
           ", batch = " + std::to_string(batch);
  }
  for (const Operand& x : {shape.a, shape.b, shape.c}) {
    if (const std::string why = bad_leading_dimension(x); !why.empty()) return call + ": " + why;
  }
  status = CUBLAS_STATUS_EXECUTION_FAILED;
  if (touches_device(alpha, sizeof(T)) || touches_device(beta, sizeof(T))) {
    return call + ": alpha and beta must be host memory (CUBLAS_POINTER_MODE_HOST)";
  }
  return "";
}

// Every gemm entry: checks the arguments, then (arrays_check) the pointer arrays of the batched
// entry, then that every matrix of the batch (a_at(i), b_at(i), c_at(i): where matrix i starts)
// lies in device memory; then computes the products with OpenBLAS.
template <typename T, typename AAt, typename BAt, typename CAt, typename ArraysCheck>
cublasStatus_t gemm_many(const char* call, cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                         int m, int n, int k, const T* alpha, AAt a_at, int lda, BAt b_at, int ldb, const T* beta,
                         CAt c_at, int ldc, int batch, ArraysCheck arrays_check) {
  count_cublas_call(call);
  const GemmShape shape = gemm_shape(transa, transb, m, n, k, lda, ldb, ldc);
  cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
  if (const std::string why =
          bad_arguments<T>(call, handle, transa, transb, m, n, k, alpha, beta, batch, shape, status);
      !why.empty()) {
    return fail(status, why);
  }
  if (m == 0 || n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;
  const bool reads_ab = k > 0;
  for (std::string why :
       {arrays_check(shape), reads_ab ? bad_matrices(call, shape.a, a_at, batch, sizeof(T)) : std::string(),
        reads_ab ? bad_matrices(call, shape.b, b_at, batch, sizeof(T)) : std::string(),
        bad_matrices(call, shape.c, c_at, batch, sizeof(T))}) {
    if (!why.empty()) return fail(CUBLAS_STATUS_EXECUTION_FAILED, why);
  }
  for (int i = 0; i < batch; ++i) {
    if constexpr (std::is_same_v<T, float>) {
      if (handle->math == CUBLAS_TF32_TENSOR_OP_MATH && k > 0) {
        const std::vector<float> a_tf32 = rounded_to_tf32(a_at(i), shape.a), b_tf32 = rounded_to_tf32(b_at(i), shape.b);
        cblas_sgemm(CblasColMajor, as_cblas(transa), as_cblas(transb), m, n, k, *alpha, a_tf32.data(), lda,
                    b_tf32.data(), ldb, *beta, c_at(i), ldc);
        continue;
      }
      cblas_sgemm(CblasColMajor, as_cblas(transa), as_cblas(transb), m, n, k, *alpha, a_at(i), lda, b_at(i), ldb, *beta,
                  c_at(i), ldc);
    } else {
      cblas_dgemm(CblasColMajor, as_cblas(transa), as_cblas(transb), m, n, k, *alpha, a_at(i), lda, b_at(i), ldb, *beta,
                  c_at(i), ldc);
    }
  }
  return CUBLAS_STATUS_SUCCESS;
}

// The batched entries: one pointer per matrix, in arrays that must be device memory.
template <typename T>
cublasStatus_t gemm_batched(const char* call, cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                            int m, int n, int k, const T* alpha, const T* const a[], int lda, const T* const b[],
                            int ldb, const T* beta, T* const c[], int ldc, int batch) {
  auto arrays_check = [&](const GemmShape& shape) {
    for (std::string why : {k > 0 ? bad_pointer_array(call, shape.a, a, batch) : std::string(),
                            k > 0 ? bad_pointer_array(call, shape.b, b, batch) : std::string(),
                            bad_pointer_array<T>(call, shape.c, c, batch)}) {
      if (!why.empty()) return why;
    }
    return std::string();
  };
  return gemm_many(
      call, handle, transa, transb, m, n, k, alpha, [&](int i) { return a[i]; }, lda, [&](int i) { return b[i]; }, ldb,
      beta, [&](int i) { return c[i]; }, ldc, batch, arrays_check);
}

// The strided entries (and the single gemm: one matrix, strides unused): matrix i of each operand
// starts i strides after its first.
template <typename T>
cublasStatus_t gemm_strided(const char* call, cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                            int m, int n, int k, const T* alpha, const T* a, int lda, long long stride_a, const T* b,
                            int ldb, long long stride_b, const T* beta, T* c, int ldc, long long stride_c, int batch) {
  return gemm_many(
      call, handle, transa, transb, m, n, k, alpha, [&](int i) { return a + i * stride_a; }, lda,
      [&](int i) { return b + i * stride_b; }, ldb, beta, [&](int i) { return c + i * stride_c; }, ldc, batch,
      [](const GemmShape&) { return std::string(); });
}

}  // namespace

cublasStatus_t cublasCreate(cublasHandle_t* handle) {
  static EmulatedCublas the_handle;
  *handle = &the_handle;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy(cublasHandle_t) { return CUBLAS_STATUS_SUCCESS; }

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  if (!handle) return fail(CUBLAS_STATUS_NOT_INITIALIZED, "cublasSetMathMode: no handle (cublasCreate was not called)");
  if (mode != CUBLAS_DEFAULT_MATH && mode != CUBLAS_TF32_TENSOR_OP_MATH) {
    return fail(CUBLAS_STATUS_INVALID_VALUE,
                "cublasSetMathMode: mode " + std::to_string(int(mode)) + " is not emulated");
  }
  handle->math = mode;
  return CUBLAS_STATUS_SUCCESS;
}

const char* cublasGetStatusString(cublasStatus_t status) {
  static thread_local std::string text;
  switch (status) {
    case CUBLAS_STATUS_SUCCESS: text = "CUBLAS_STATUS_SUCCESS"; break;
    case CUBLAS_STATUS_NOT_INITIALIZED: text = "CUBLAS_STATUS_NOT_INITIALIZED"; break;
    case CUBLAS_STATUS_INVALID_VALUE: text = "CUBLAS_STATUS_INVALID_VALUE"; break;
    case CUBLAS_STATUS_EXECUTION_FAILED: text = "CUBLAS_STATUS_EXECUTION_FAILED"; break;
    default: text = "CUBLAS_STATUS_UNKNOWN"; break;
  }
  if (status != CUBLAS_STATUS_SUCCESS && !failure_detail().empty()) text += " (" + failure_detail() + ")";
  return text.c_str();
}

cublasStatus_t cublasSgemmBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                                  int n, int k, const float* alpha, const float* const a[], int lda,
                                  const float* const b[], int ldb, const float* beta, float* const c[], int ldc,
                                  int batch) {
  return gemm_batched("cublasSgemmBatched", handle, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc,
                      batch);
}

cublasStatus_t cublasDgemmBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                                  int n, int k, const double* alpha, const double* const a[], int lda,
                                  const double* const b[], int ldb, const double* beta, double* const c[], int ldc,
                                  int batch) {
  return gemm_batched("cublasDgemmBatched", handle, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc,
                      batch);
}

cublasStatus_t cublasSgemm(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                           int k, const float* alpha, const float* a, int lda, const float* b, int ldb,
                           const float* beta, float* c, int ldc) {
  return gemm_strided("cublasSgemm", handle, transa, transb, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, c, ldc, 0, 1);
}

cublasStatus_t cublasDgemm(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                           int k, const double* alpha, const double* a, int lda, const double* b, int ldb,
                           const double* beta, double* c, int ldc) {
  return gemm_strided("cublasDgemm", handle, transa, transb, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, c, ldc, 0, 1);
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                         int m, int n, int k, const float* alpha, const float* a, int lda,
                                         long long stride_a, const float* b, int ldb, long long stride_b,
                                         const float* beta, float* c, int ldc, long long stride_c, int batch) {
  return gemm_strided("cublasSgemmStridedBatched", handle, transa, transb, m, n, k, alpha, a, lda, stride_a, b, ldb,
                      stride_b, beta, c, ldc, stride_c, batch);
}

cublasStatus_t cublasDgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                         int m, int n, int k, const double* alpha, const double* a, int lda,
                                         long long stride_a, const double* b, int ldb, long long stride_b,
                                         const double* beta, double* c, int ldc, long long stride_c, int batch) {
  return gemm_strided("cublasDgemmStridedBatched", handle, transa, transb, m, n, k, alpha, a, lda, stride_a, b, ldb,
                      stride_b, beta, c, ldc, stride_c, batch);
}

}  // namespace axiom::cuda_emulator
