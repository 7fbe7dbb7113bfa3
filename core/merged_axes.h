// merge_axes: several operands of one shape, each with its own strides, described with as few
// axes as possible. Every kernel loop (core/cpu/loops.h, core/cuda/kernels.cuh) starts from this.
//
// Size-1 axes are dropped, and an axis is merged into the one inside it when, for every operand,
// stepping it once equals stepping the inner one fully. A contiguous tensor becomes one axis; a
// scalar becomes one axis of size 1. The element walk is unchanged (row-major order).
//   shape [2, 3, 4], strides [12, 4, 1] and [0, 4, 1]  ->  shape [2, 12], strides [12, 1] and [0, 1]
//
// The result lives inside the object for up to kInlineAxes axes (more spill to the heap): a kernel
// on a small tensor costs about a microsecond, and the heap allocations of plain vectors here
// were a third of that (an add of two [16, 64] tensors, measured with perf).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

// GCC 12 reports a false -Wstringop-overflow inside Boost's growth path when it inlines a push_back
// past the inline capacity (a known GCC 12 false positive); the code there is Boost's, and correct.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif
#include <boost/container/small_vector.hpp>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#include "core/shape.h"

namespace axiom::core {

constexpr size_t kInlineAxes = 6;
using LoopAxes = boost::container::small_vector<int64_t, kInlineAxes>;  // sizes or strides, outermost first

template <size_t N>
struct MergedAxes {
  LoopAxes shape;
  std::array<LoopAxes, N> strides;  // one per operand, each shape.size() long
};

template <size_t N>
MergedAxes<N> merge_axes(const Shape& shape, const std::array<const Strides*, N>& strides) {
  MergedAxes<N> merged;
  // Walk from the innermost axis outwards, collecting the axes innermost first.
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] == 1) continue;
    bool merges = !merged.shape.empty();
    for (size_t k = 0; k < N && merges; ++k)
      merges = (*strides[k])[i] == merged.strides[k].back() * merged.shape.back();
    if (merges) {
      merged.shape.back() *= shape[i];  // the merged axis keeps the inner axis's stride
    } else {
      merged.shape.push_back(shape[i]);
      for (size_t k = 0; k < N; ++k) merged.strides[k].push_back((*strides[k])[i]);
    }
  }
  if (merged.shape.empty()) {  // a scalar, or only size-1 axes: one element
    merged.shape.push_back(1);
    for (auto& s : merged.strides) s.push_back(0);
  }
  // Back to row-major order.
  std::reverse(merged.shape.begin(), merged.shape.end());
  for (auto& s : merged.strides) std::reverse(s.begin(), s.end());
  return merged;
}

}  // namespace axiom::core
