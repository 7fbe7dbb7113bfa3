// A contiguous tensor seen as [outer, size, inner] around one axis: `outer` counts the positions
// before the axis, `inner` the elements after it. The indexing kernels (core/cpu/index.cpp,
// core/cuda/index.cu) address their operands this way.
#pragma once

#include <cstdint>

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

}  // namespace axiom::core
