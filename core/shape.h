// Shapes, strides and axes: the small arithmetic that every op needs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/container/small_vector.hpp>

#include "dtype.h"

namespace axiom::core {

// Boost's small_vector holds up to 6 axes inside itself, and goes to the heap only beyond: every op,
// views included, makes a shape and strides for its output, and as std::vectors those two heap
// allocations were most of a small op's cost.
using Shape = boost::container::small_vector<int64_t, 6>;    // sizes, outermost first
using Strides = boost::container::small_vector<int64_t, 6>;  // in elements (not bytes), one per axis

int64_t numel(const Shape& shape);
// An Error naming `op` unless every size is >= 0 and the sizes' product (zeros counted as ones: the
// strides of an empty tensor still multiply the other sizes) fits in int64, so that every element
// count and stride of the shape can be computed without overflow; with a dtype, the product times
// its size in bytes must fit too (every byte offset).
void check_countable(std::string_view op, const Shape& shape, std::optional<Dtype> dtype = {});
std::string shape_str(const Shape& shape);                 // "[2, 3]"
std::string shape_str(const std::vector<int64_t>& sizes);  // an index or a list of axes, alike

// Row-major strides: the last axis moves fastest.  [2, 3, 4] -> [12, 4, 1]
Strides contiguous_strides(const Shape& shape);

// An axis in [-rank, rank) made non-negative; anything else is an Error naming `op`.
int normalize_axis(std::string_view op, int64_t axis, int64_t rank);
// A set of axes, normalized and sorted; repeats are an Error. An empty list means "every axis".
std::vector<int> normalize_axes(std::string_view op, const std::vector<int64_t>& axes, int64_t rank);

// NumPy broadcasting: align at the right; sizes must match or be 1.
//   [4, 1, 3] and [5, 1] -> [4, 5, 3]
Shape broadcast_shapes(std::string_view op, const Shape& a, const Shape& b);

// merge_axes, which every kernel loop starts from, is in core/merged_axes.h.

}  // namespace axiom::core
