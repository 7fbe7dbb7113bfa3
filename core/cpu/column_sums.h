// Column sums of a [rows, cols] matrix, in blocks of whole rows: out[j] = sum_i row_i[j], with the
// sums in double (integers in int64). The matrix need not exist: row_at(i, begin, width, scratch)
// gives row i's columns [begin, begin + width), from memory or computed into `scratch` (room for
// `width` values, the task's own). core::sum over leading axes (reduce.cpp) and layer norm's
// parameter gradients (normalize.cpp) share it, so they have the same bits.
//
// The work is cut into tasks of whole rows (up to 4096 columns; wider ones in blocks of 256) and
// about 256K elements, so that every thread has work even for a bias of 128 summed over 25088 rows,
// and each task reads contiguous memory (blocks of 256 columns of rows of 512 read half of every
// row, at a third of the speed). Each task adds its rows into its own partial sums; the partial
// sums of a column are then added up in row order, so the result does not depend on the thread count.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "core/cpu/loops.h"
#include "core/cpu/vector_math.h"
#include "core/parallel.h"

namespace axiom::core::cpu {

template <typename T>
using Accumulator = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;

template <typename T, typename RowAt>
std::vector<Accumulator<T>> column_totals(int64_t rows, int64_t cols, RowAt row_at) {
  constexpr int64_t kTaskElements = 256 * 1024, kWidestRow = 4096;
  const int64_t columns_per_task = cols <= kWidestRow ? std::max<int64_t>(cols, 1) : 256;
  const int64_t rows_per_task = std::max<int64_t>(1, kTaskElements / columns_per_task);
  const int64_t column_blocks = (cols + columns_per_task - 1) / columns_per_task;
  const int64_t row_blocks = std::max<int64_t>(1, (rows + rows_per_task - 1) / rows_per_task);
  std::vector<Accumulator<T>> partial(static_cast<size_t>(row_blocks * cols), Accumulator<T>(0));  // [row_blocks, cols]
  const int64_t grain =
      std::max<int64_t>(1, kGrain / std::max<int64_t>(std::min(rows, rows_per_task) * columns_per_task, 1));
  parallel_for(row_blocks * column_blocks, grain, [&](int64_t first, int64_t last) {
    std::vector<T> scratch(static_cast<size_t>(columns_per_task));
    for (int64_t task = first; task < last; ++task) {
      const int64_t row_block = task / column_blocks, begin = (task % column_blocks) * columns_per_task;
      const int64_t width = std::min(columns_per_task, cols - begin);
      Accumulator<T>* totals = partial.data() + row_block * cols + begin;
      for (int64_t i = row_block * rows_per_task; i < std::min(rows, (row_block + 1) * rows_per_task); ++i) {
        const T* row = row_at(i, begin, width, scratch.data());
        if constexpr (std::is_same_v<T, float>) {
          vec::add_row_to_totals(row, totals, width);  // SIMD (vector_math.h), sums in double
        } else {
          for (int64_t j = 0; j < width; ++j) totals[j] += row[j];
        }
      }
    }
  });
  std::vector<Accumulator<T>> totals(partial.begin(), partial.begin() + cols);  // row block 0, then the others in order
  for (int64_t row_block = 1; row_block < row_blocks; ++row_block) {
    for (int64_t j = 0; j < cols; ++j) totals[j] += partial[row_block * cols + j];
  }
  return totals;
}

}  // namespace axiom::core::cpu
