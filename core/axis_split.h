// Two ways the kernels of both backends split a tensor's axes.
//
// AxisSplit: a contiguous tensor seen as [outer, size, inner] around one axis: `outer` counts the
// positions before the axis, `inner` the elements after it. The indexing kernels (core/cpu/index.cpp,
// core/cuda/index.cu) address their operands this way.
//
// ReducedAxes: a reduction's axes parted into the kept ones and the reduced ones, each part with
// x's sizes and strides. Output element o (row-major over the kept axes) reduces a "block": the
// reduced axes at that position of the kept ones. The reductions (core/cpu/reduce.cpp,
// core/cuda/reduce.cu) walk x this way.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/shape.h"

namespace axiom::core {

struct AxisSplit {
  int64_t outer = 1, size = 1, inner = 1;
};

inline AxisSplit split_at(const Shape& shape, int axis) {
  AxisSplit split;
  for (int i = 0; i < axis; ++i) split.outer *= shape[i];
  split.size = shape[axis];
  for (size_t i = axis + 1; i < shape.size(); ++i) split.inner *= shape[i];
  return split;
}

struct ReducedAxes {
  Shape kept_shape, block_shape;
  Strides kept_strides, block_strides;
};

// `axes`: the reduced axes of a tensor of this shape and these strides (sorted, distinct).
inline ReducedAxes split_reduced_axes(const Shape& shape, const Strides& strides, const std::vector<int>& axes) {
  ReducedAxes split;
  for (int axis = 0; axis < static_cast<int>(shape.size()); ++axis) {
    const bool reduced = std::find(axes.begin(), axes.end(), axis) != axes.end();
    (reduced ? split.block_shape : split.kept_shape).push_back(shape[axis]);
    (reduced ? split.block_strides : split.kept_strides).push_back(strides[axis]);
  }
  return split;
}

}  // namespace axiom::core
