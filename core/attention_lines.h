// Where the lines of an axial attention are in memory, shared by the CPU and CUDA kernels.
//
// qkv [..., L at `axis`, ..., 3D] and out [..., D] are contiguous. A line is the L positions
// along `axis` at one setting of every other axis. Counting the axes before `axis` as `outer`
// and those after it (less the last) as `inner`, line n starts at
//   (n / inner_count) * L * inner_count * width + (n % inner_count) * width
// and its positions are inner_count * width apart (width = 3D for qkv, D for out).
#pragma once

#include <cstdint>

#include "core/shape.h"

namespace axiom::core {

struct AttentionLines {
  AttentionLines(const Shape& shape, int axis) : length(shape[axis]) {
    for (int i = 0; i < axis; ++i) outer_count *= shape[i];
    for (size_t i = axis + 1; i + 1 < shape.size(); ++i) inner_count *= shape[i];
  }
  int64_t count() const { return outer_count * inner_count; }
  int64_t start(int64_t line, int64_t width) const {
    return (line / inner_count) * length * inner_count * width + (line % inner_count) * width;
  }
  int64_t step(int64_t width) const { return inner_count * width; }  // between positions of a line
  int64_t length, outer_count = 1, inner_count = 1;
};

}  // namespace axiom::core
