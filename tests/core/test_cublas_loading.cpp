// cuBLAS is opened when the CUDA backend first calls it (core/cuda/cublas_loader.cpp), never at a
// program's start: a CPU program does not pay the 0.4-0.5 s it takes to load.
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "core/core.h"
#include "core/launch.h"
#include "tests/support/scoped_environment.h"

#if AXIOM_WITH_CUDA
#include <cublas_v2.h>
#endif

namespace {

// Whether a file named like cuBLAS is mapped into this process (/proc/self/maps lists each).
bool cublas_is_loaded() {
  std::ifstream maps("/proc/self/maps");
  REQUIRE(maps.good());
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find("libcublas") != std::string::npos) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("a program that runs on the CPU never loads cuBLAS") {
  using namespace axiom::core;
  const Tensor a = ones({4, 3}), b = full({3, 2}, 2.0);  // a: 4 x 3, b: 3 x 2
  CHECK(matmul(a, b).to_vector<float>() == std::vector<float>(8, 6.0f));
  CHECK_FALSE(cublas_is_loaded());
}

#if AXIOM_WITH_CUDA
using axiom::test::ScopedEnvironment;

TEST_CASE(
    "cuBLAS is opened by its first call, and a file that cannot be opened or is not cuBLAS is an Error naming it") {
  if (cublas_is_loaded()) {
    MESSAGE("cuBLAS was loaded by an earlier test in this process: only its calls are checked");
  } else {
    ScopedEnvironment missing("AXIOM_CUBLAS_LIBRARY", "/nonexistent/libcublas.so.0");
    CHECK_THROWS_WITH(
        cublasGetStatusString(CUBLAS_STATUS_SUCCESS),
        doctest::Contains("[cublas] cannot load cuBLAS: /nonexistent/libcublas.so.0: cannot open shared object file"));
    CHECK_FALSE(cublas_is_loaded());
    ScopedEnvironment other("AXIOM_CUBLAS_LIBRARY", "libz.so.1");  // a library, but not cuBLAS
    CHECK_THROWS_WITH(
        cublasGetStatusString(CUBLAS_STATUS_SUCCESS),
        doctest::Contains(("[cublas] libz.so.1 is not cuBLAS " + std::to_string(CUBLAS_VER_MAJOR)).c_str()));
  }
  ScopedEnvironment usual("AXIOM_CUBLAS_LIBRARY", nullptr);
  // a call that needs no GPU, answered by cuBLAS itself ("the library was not initialized" in CUDA 13)
  const std::string said = cublasGetStatusString(CUBLAS_STATUS_NOT_INITIALIZED);
  CAPTURE(said);
  CHECK(said.find("not initialized") != std::string::npos);
  CHECK(cublas_is_loaded());
}

TEST_CASE("every cuBLAS function axiom calls reaches cuBLAS, which refuses a handle that was never made") {
  // Without a GPU nothing can be computed, but each forwarder must find its function in cuBLAS
  // (a misspelt name would be an Error here) and pass the call on: cuBLAS answers that the null
  // handle is not initialized. The arguments past the handle are never read.
  cublasHandle_t none = nullptr;
  const float one_f = 1;
  const double one_d = 1;
  const float* const no_floats[] = {nullptr};
  const double* const no_doubles[] = {nullptr};
  float* const no_float_outputs[] = {nullptr};
  double* const no_double_outputs[] = {nullptr};
  const cublasOperation_t n = CUBLAS_OP_N;
  const std::vector<std::pair<std::string, cublasStatus_t>> answers = {
      {"cublasSetMathMode", cublasSetMathMode(none, CUBLAS_DEFAULT_MATH)},
      {"cublasSgemm", cublasSgemm(none, n, n, 1, 1, 1, &one_f, nullptr, 1, nullptr, 1, &one_f, nullptr, 1)},
      {"cublasDgemm", cublasDgemm(none, n, n, 1, 1, 1, &one_d, nullptr, 1, nullptr, 1, &one_d, nullptr, 1)},
      {"cublasSgemmStridedBatched",
       cublasSgemmStridedBatched(none, n, n, 1, 1, 1, &one_f, nullptr, 1, 1, nullptr, 1, 1, &one_f, nullptr, 1, 1, 1)},
      {"cublasDgemmStridedBatched",
       cublasDgemmStridedBatched(none, n, n, 1, 1, 1, &one_d, nullptr, 1, 1, nullptr, 1, 1, &one_d, nullptr, 1, 1, 1)},
      {"cublasSgemmBatched",
       cublasSgemmBatched(none, n, n, 1, 1, 1, &one_f, no_floats, 1, no_floats, 1, &one_f, no_float_outputs, 1, 1)},
      {"cublasDgemmBatched",
       cublasDgemmBatched(none, n, n, 1, 1, 1, &one_d, no_doubles, 1, no_doubles, 1, &one_d, no_double_outputs, 1, 1)},
  };
  for (const auto& [function, status] : answers) {
    CAPTURE(function);
    CHECK(status == CUBLAS_STATUS_NOT_INITIALIZED);
  }
  // cublasCreate needs a GPU: without one cuBLAS says so, with one it makes a handle
  cublasHandle_t made = nullptr;
  const cublasStatus_t created = cublasCreate(&made);
  CHECK((created == CUBLAS_STATUS_SUCCESS) == (made != nullptr));
}
#endif
