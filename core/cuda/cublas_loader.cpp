// cuBLAS, loaded when the CUDA backend first calls it, not when a program starts.
//
// Linked the usual way, cuBLAS (and cuBLASLt, which it needs: about 600 MB between them) is mapped
// and relocated at every start of every program built with CUDA: 0.4-0.5 s before main(), on a
// machine with a GPU or without one, for `axiom --help`, each MPI rank, each test and `import axiom`
// alike. So axiom does not link it. This file defines the nine cuBLAS functions that core/cuda
// calls, under cuBLAS's own names and with the signatures of <cublas_v2.h>; each one, on its first
// call, opens cuBLAS with dlopen and finds the real function with dlsym, and from then on forwards
// to it. The rest of core/cuda calls cuBLAS as if it were linked (and the emulator's stand-ins as
// before). A program that links axiom's static libraries and calls these functions itself reaches
// them through the forwarders too: the same library, opened once.
//
// Where cuBLAS is looked for: AXIOM_CUBLAS_LIBRARY (a file), if set; otherwise libcublas.so.MAJOR
// by dlopen's rules (the calling program's RUNPATH, LD_LIBRARY_PATH, the loader's cache), then in
// the toolkit's folder that CMake found (AXIOM_CUBLAS_DIR). It must be cuBLAS of the major version
// axiom was built with. A cuBLAS that cannot be loaded is an Error saying what was tried.
#include <cublas_v2.h>
#include <dlfcn.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "core/error.h"

namespace {

using axiom::Error;

// The files to try, in order.
std::vector<std::string> cublas_files() {
  if (const char* chosen = std::getenv("AXIOM_CUBLAS_LIBRARY"); chosen != nullptr && *chosen != '\0') return {chosen};
  const std::string soname = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
  return {soname, std::string(AXIOM_CUBLAS_DIR) + "/" + soname};
}

// What dlerror() says of the last failure (it can say nothing).
std::string dl_error() {
  const char* said = dlerror();
  return said != nullptr ? said : "(no reason given)";
}

// The cuBLAS in `library` is of the major version axiom was compiled against, or an Error.
void check_major_version(void* library, const std::string& file) {
  using GetProperty = decltype(&cublasGetProperty);
  const auto get_property = reinterpret_cast<GetProperty>(dlsym(library, "cublasGetProperty"));
  int major = -1;
  if (get_property == nullptr || get_property(MAJOR_VERSION, &major) != CUBLAS_STATUS_SUCCESS ||
      major != CUBLAS_VER_MAJOR) {
    dlclose(library);
    throw Error("cublas", file, " is not cuBLAS ", CUBLAS_VER_MAJOR,
                " (its major version: ", major < 0 ? std::string("unknown") : std::to_string(major), ")");
  }
}

// cuBLAS's handle from dlopen. A failure is not kept: the next call tries again.
void* cublas_library() {
  static void* const library = [] {
    std::string why;
    for (const std::string& file : cublas_files()) {
      if (void* opened = dlopen(file.c_str(), RTLD_LAZY | RTLD_LOCAL)) {
        check_major_version(opened, file);
        return opened;
      }
      why += (why.empty() ? "" : "; ") + dl_error();
    }
    throw Error("cublas", "cannot load cuBLAS: ", why, " (AXIOM_CUBLAS_LIBRARY=FILE names another)");
  }();
  return library;
}

// The real cuBLAS function `name`, of the type of our forwarder of that name.
template <typename Function>
Function* real(Function*, const char* name) {
  void* library = cublas_library();
  (void)dlerror();  // clear an older failure, so that the one read below is dlsym's
  void* address = dlsym(library, name);
  if (address == nullptr) throw Error("cublas", "the loaded cuBLAS has no function ", name, ": ", dl_error());
  return reinterpret_cast<Function*>(address);
}

// The real function of the forwarder named `function`, its name written once.
#define AXIOM_REAL(function) real(&function, #function)

}  // namespace

// The forwarders: hidden, so that they stand in for cuBLAS inside axiom alone (the Python module,
// a shared library, does not offer them to other libraries in the process, cuBLAS included).
#define AXIOM_CUBLAS_FORWARDER extern "C" __attribute__((visibility("hidden"))) cublasStatus_t CUBLASWINAPI

AXIOM_CUBLAS_FORWARDER cublasCreate_v2(cublasHandle_t* handle) {
  static const auto call = AXIOM_REAL(cublasCreate_v2);
  return call(handle);
}

AXIOM_CUBLAS_FORWARDER cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  static const auto call = AXIOM_REAL(cublasSetMathMode);
  return call(handle, mode);
}

extern "C" __attribute__((visibility("hidden"))) const char* CUBLASWINAPI cublasGetStatusString(cublasStatus_t status) {
  static const auto call = AXIOM_REAL(cublasGetStatusString);
  return call(status);
}

// C = alpha op(A) op(B) + beta C, column-major: one product
AXIOM_CUBLAS_FORWARDER cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                                      int n, int k, const float* alpha, const float* A, int lda, const float* B,
                                      int ldb, const float* beta, float* C, int ldc) {
  static const auto call = AXIOM_REAL(cublasSgemm_v2);
  return call(handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

AXIOM_CUBLAS_FORWARDER cublasDgemm_v2(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                                      int n, int k, const double* alpha, const double* A, int lda, const double* B,
                                      int ldb, const double* beta, double* C, int ldc) {
  static const auto call = AXIOM_REAL(cublasDgemm_v2);
  return call(handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

// batch products whose operands are evenly spaced (strides in elements)
AXIOM_CUBLAS_FORWARDER cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa,
                                                 cublasOperation_t transb, int m, int n, int k, const float* alpha,
                                                 const float* A, int lda, long long int strideA, const float* B,
                                                 int ldb, long long int strideB, const float* beta, float* C, int ldc,
                                                 long long int strideC, int batchCount) {
  static const auto call = AXIOM_REAL(cublasSgemmStridedBatched);
  return call(handle, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc, strideC,
              batchCount);
}

AXIOM_CUBLAS_FORWARDER cublasDgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa,
                                                 cublasOperation_t transb, int m, int n, int k, const double* alpha,
                                                 const double* A, int lda, long long int strideA, const double* B,
                                                 int ldb, long long int strideB, const double* beta, double* C, int ldc,
                                                 long long int strideC, int batchCount) {
  static const auto call = AXIOM_REAL(cublasDgemmStridedBatched);
  return call(handle, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc, strideC,
              batchCount);
}

// batch products at any addresses (arrays of device pointers)
AXIOM_CUBLAS_FORWARDER cublasSgemmBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                          int m, int n, int k, const float* alpha, const float* const Aarray[], int lda,
                                          const float* const Barray[], int ldb, const float* beta,
                                          float* const Carray[], int ldc, int batchCount) {
  static const auto call = AXIOM_REAL(cublasSgemmBatched);
  return call(handle, transa, transb, m, n, k, alpha, Aarray, lda, Barray, ldb, beta, Carray, ldc, batchCount);
}

AXIOM_CUBLAS_FORWARDER cublasDgemmBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                          int m, int n, int k, const double* alpha, const double* const Aarray[],
                                          int lda, const double* const Barray[], int ldb, const double* beta,
                                          double* const Carray[], int ldc, int batchCount) {
  static const auto call = AXIOM_REAL(cublasDgemmBatched);
  return call(handle, transa, transb, m, n, k, alpha, Aarray, lda, Barray, ldb, beta, Carray, ldc, batchCount);
}
