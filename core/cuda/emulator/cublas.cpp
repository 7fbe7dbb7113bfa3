// The cuBLAS stand-in (include/cublas_v2.h): validated like cuBLAS, computed by OpenBLAS.
#include <cblas.h>

#include <string>

#include "core/cuda/emulator/include/cublas_v2.h"
#include "core/cuda/emulator/memory.h"

namespace axiom::cuda_emulator {

struct EmulatedCublas {};

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
  return std::string("ld") + x.name + " = " + std::to_string(x.ld) + " < max(1, " + std::to_string(x.rows) + "), the rows of " + x.name +
         " as stored";
}

// Checks that matrix i of `pointers` (and the array itself) lies in device memory.
template <typename T>
std::string bad_pointers(const char* call, const Operand& x, const T* const* pointers, int batch) {
  if (batch == 0 || x.rows == 0 || x.cols == 0) return "";
  if (!is_device_range(pointers, sizeof(T*) * batch)) {
    return std::string(call) + ": the array of " + x.name + " pointers " + describe_range(pointers, sizeof(T*) * batch);
  }
  const size_t extent = (size_t(x.cols) - 1) * x.ld + x.rows;  // elements from the first to the last read
  for (int i = 0; i < batch; ++i) {
    if (!is_device_range(pointers[i], extent * sizeof(T))) {
      return std::string(call) + ": " + x.name + "[" + std::to_string(i) + "] " + describe_range(pointers[i], extent * sizeof(T));
    }
  }
  return "";
}

CBLAS_TRANSPOSE as_cblas(cublasOperation_t op) { return op == CUBLAS_OP_N ? CblasNoTrans : CblasTrans; }

template <typename T>
cublasStatus_t gemm_batched(const char* call, cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                            int n, int k, const T* alpha, const T* const a[], int lda, const T* const b[], int ldb, const T* beta,
                            T* const c[], int ldc, int batch) {
  if (!handle) return fail(CUBLAS_STATUS_NOT_INITIALIZED, std::string(call) + ": no handle (cublasCreate was not called)");
  const std::string call_name(call);
  for (cublasOperation_t op : {transa, transb}) {
    if (op != CUBLAS_OP_N && op != CUBLAS_OP_T && op != CUBLAS_OP_C) {
      return fail(CUBLAS_STATUS_INVALID_VALUE, call_name + ": transpose flag " + std::to_string(int(op)));
    }
  }
  if (m < 0 || n < 0 || k < 0 || batch < 0) {
    return fail(CUBLAS_STATUS_INVALID_VALUE, call_name + ": m = " + std::to_string(m) + ", n = " + std::to_string(n) +
                                                 ", k = " + std::to_string(k) + ", batch = " + std::to_string(batch));
  }
  // As stored, A is m x k (or k x m when transposed), B k x n (or n x k), C m x n.
  const Operand A{"a", transa == CUBLAS_OP_N ? m : k, transa == CUBLAS_OP_N ? k : m, lda};
  const Operand B{"b", transb == CUBLAS_OP_N ? k : n, transb == CUBLAS_OP_N ? n : k, ldb};
  const Operand C{"c", m, n, ldc};
  for (const Operand& x : {A, B, C}) {
    if (const std::string why = bad_leading_dimension(x); !why.empty()) return fail(CUBLAS_STATUS_INVALID_VALUE, call_name + ": " + why);
  }
  if (touches_device(alpha, sizeof(T)) || touches_device(beta, sizeof(T))) {
    return fail(CUBLAS_STATUS_EXECUTION_FAILED, call_name + ": alpha and beta must be host memory (CUBLAS_POINTER_MODE_HOST)");
  }
  if (m == 0 || n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;
  const bool reads_ab = k > 0;
  for (std::string why : {reads_ab ? bad_pointers(call, A, a, batch) : "", reads_ab ? bad_pointers(call, B, b, batch) : "",
                          bad_pointers<T>(call, C, c, batch)}) {
    if (!why.empty()) return fail(CUBLAS_STATUS_EXECUTION_FAILED, why);
  }
  for (int i = 0; i < batch; ++i) {
    if constexpr (std::is_same_v<T, float>) {
      cblas_sgemm(CblasColMajor, as_cblas(transa), as_cblas(transb), m, n, k, *alpha, a[i], lda, b[i], ldb, *beta, c[i], ldc);
    } else {
      cblas_dgemm(CblasColMajor, as_cblas(transa), as_cblas(transb), m, n, k, *alpha, a[i], lda, b[i], ldb, *beta, c[i], ldc);
    }
  }
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace

cublasStatus_t cublasCreate(cublasHandle_t* handle) {
  static EmulatedCublas the_handle;
  *handle = &the_handle;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy(cublasHandle_t) { return CUBLAS_STATUS_SUCCESS; }

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

cublasStatus_t cublasSgemmBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
                                  const float* alpha, const float* const a[], int lda, const float* const b[], int ldb,
                                  const float* beta, float* const c[], int ldc, int batch) {
  return gemm_batched("cublasSgemmBatched", handle, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, batch);
}

cublasStatus_t cublasDgemmBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
                                  const double* alpha, const double* const a[], int lda, const double* const b[], int ldb,
                                  const double* beta, double* const c[], int ldc, int batch) {
  return gemm_batched("cublasDgemmBatched", handle, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, batch);
}

}  // namespace axiom::cuda_emulator
