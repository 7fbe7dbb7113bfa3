// The process's matrix-product precision (core/matmul_precision.h) set for one test, and whether
// bfloat16 products can run here, shared by the suites.
#pragma once

#include <doctest/doctest.h>

#include <string>

#include "core/matmul_precision.h"

namespace axiom::test {

// The process's precision for one test, float32 again after it.
struct PrecisionForTest {
  explicit PrecisionForTest(core::MatmulPrecision p) { core::set_matmul_precision(p); }
  ~PrecisionForTest() { core::set_matmul_precision(core::MatmulPrecision::float32); }
  PrecisionForTest(const PrecisionForTest&) = delete;
  PrecisionForTest& operator=(const PrecisionForTest&) = delete;
};

// True where this build and CPU run bfloat16 products; else says why the caller's checks are skipped.
inline bool bfloat16_products_here() {
  const std::string reason = core::matmul_precision_unavailable_reason(core::MatmulPrecision::bfloat16);
  if (!reason.empty()) MESSAGE("bfloat16 products not checked here: " << reason);
  return reason.empty();
}

}  // namespace axiom::test
