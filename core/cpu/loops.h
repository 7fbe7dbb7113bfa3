// Walking strided tensors: the one loop every CPU kernel is built on.
//
// A kernel sees N operands of one shape, each with its own strides (a transposed view, a slice
// with a step, a broadcast operand with stride 0). StridedLoop first merges axes (merge_axes, core/shape.h) that are
// contiguous for every operand — a contiguous tensor becomes one long run — and then hands the
// kernel "runs": stretches of elements along the innermost axis, given as a start offset and a
// step per operand. The kernel's inner loop over a run is plain and vectorisable, with a fast
// branch for the common steps 1 (contiguous) and 0 (broadcast).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "core/parallel.h"
#include "core/merged_axes.h"

namespace axiom::core::cpu {

// Elements per parallel chunk for cheap elementwise work: small enough to split 16M elements
// across many threads, large enough that scheduling costs nothing next to the work.
constexpr int64_t kGrain = 32768;

template <size_t N>
class StridedLoop {
 public:
  using Offsets = std::array<int64_t, N>;

  StridedLoop(const Shape& shape, const std::array<const Strides*, N>& strides) : numel_(core::numel(shape)) {
    MergedAxes<N> merged = merge_axes(shape, strides);
    shape_ = std::move(merged.shape);
    strides_ = std::move(merged.strides);
  }

  int64_t numel() const { return numel_; }

  // Calls fn(offsets, length, steps) for each run of consecutive innermost-axis elements in the
  // row-major element range [begin, end): operand k's elements are offsets[k] + i * steps[k].
  template <typename Fn>
  void for_each_run(int64_t begin, int64_t end, Fn&& fn) const {
    if (begin >= end) return;
    const size_t rank = shape_.size();
    LoopAxes index(rank);
    Offsets offsets{};
    Offsets steps{};
    int64_t rest = begin;
    for (size_t a = rank; a-- > 0;) {
      index[a] = rest % shape_[a];
      rest /= shape_[a];
      for (size_t k = 0; k < N; ++k) offsets[k] += index[a] * strides_[k][a];
    }
    for (size_t k = 0; k < N; ++k) steps[k] = strides_[k][rank - 1];
    const int64_t inner = shape_[rank - 1];
    for (int64_t position = begin;;) {
      const int64_t length = std::min(inner - index[rank - 1], end - position);
      fn(offsets, length, steps);
      position += length;
      if (position >= end) return;
      // Back to the start of this row, then one step along the outer axes (an odometer).
      for (size_t k = 0; k < N; ++k) offsets[k] -= index[rank - 1] * steps[k];
      index[rank - 1] = 0;
      for (size_t a = rank - 1; a-- > 0;) {
        ++index[a];
        for (size_t k = 0; k < N; ++k) offsets[k] += strides_[k][a];
        if (index[a] < shape_[a]) break;
        for (size_t k = 0; k < N; ++k) offsets[k] -= shape_[a] * strides_[k][a];
        index[a] = 0;
      }
    }
  }

 private:
  LoopAxes shape_;
  std::array<LoopAxes, N> strides_;
  int64_t numel_;
};

// Runs fn over every run of `loop`, in parallel chunks of about `grain` elements.
template <size_t N, typename Fn>
void parallel_runs(const StridedLoop<N>& loop, int64_t grain, Fn&& fn) {
  parallel_for(loop.numel(), grain, [&](int64_t begin, int64_t end) { loop.for_each_run(begin, end, fn); });
}

}  // namespace axiom::core::cpu
