// A product's output split into bands, one per thread: each thread multiplies its band of c alone,
// the library on one thread (core/cpu/matmul.cpp, onednn_gemm.cpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace axiom::core::cpu {

// A part of c [m, n]: rows [row, row + rows) by columns [column, column + columns).
struct Band {
  int64_t row, rows, column, columns;
};

// c [m, n] split into `count` bands along its longer side (as the libraries split it over their own
// threads; here each band runs on one of axiom's threads, so no second thread pool waits).
inline std::vector<Band> bands_of(int64_t m, int64_t n, int64_t count) {
  const bool by_rows = m >= n;
  const int64_t length = by_rows ? m : n, bands = std::max<int64_t>(1, std::min(count, length));
  std::vector<Band> parts;
  for (int64_t i = 0; i < bands; ++i) {
    const int64_t begin = length * i / bands, end = length * (i + 1) / bands;
    parts.push_back(by_rows ? Band{begin, end - begin, 0, n} : Band{0, m, begin, end - begin});
  }
  return parts;
}

}  // namespace axiom::core::cpu
