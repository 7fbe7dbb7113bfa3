// cuBLAS is opened when the CUDA backend first calls it (core/cuda/cublas_loader.cpp), never at a
// program's start: a CPU program does not pay the 0.4-0.5 s it takes to load.
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>

#include "core/core.h"

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
// Sets an environment variable for one scope, then puts back what was there.
struct ScopedEnvironment {
  std::string name;
  std::optional<std::string> before;
  ScopedEnvironment(std::string name_, const char* value) : name(std::move(name_)) {
    if (const char* old = std::getenv(name.c_str())) before = old;
    if (value) setenv(name.c_str(), value, 1); else unsetenv(name.c_str());
  }
  ~ScopedEnvironment() {
    if (before) setenv(name.c_str(), before->c_str(), 1); else unsetenv(name.c_str());
  }
};

TEST_CASE("cuBLAS is opened by its first call, and a file that cannot be opened is an Error naming it") {
  if (cublas_is_loaded()) {
    MESSAGE("cuBLAS was loaded by an earlier test in this process: only its calls are checked");
  } else {
    ScopedEnvironment missing("AXIOM_CUBLAS_LIBRARY", "/nonexistent/libcublas.so.0");
    CHECK_THROWS_WITH(cublasGetStatusString(CUBLAS_STATUS_SUCCESS),
                      doctest::Contains("[cublas] cannot load cuBLAS (AXIOM_CUBLAS_LIBRARY names its file): /nonexistent/libcublas.so.0"));
    CHECK_FALSE(cublas_is_loaded());
  }
  ScopedEnvironment usual("AXIOM_CUBLAS_LIBRARY", nullptr);
  // a call that needs no GPU, answered by cuBLAS itself ("the library was not initialized" in CUDA 13)
  const std::string said = cublasGetStatusString(CUBLAS_STATUS_NOT_INITIALIZED);
  CAPTURE(said);
  CHECK(said.find("not initialized") != std::string::npos);
  CHECK(cublas_is_loaded());
}
#endif
