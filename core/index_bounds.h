// What the values of an int64 index tensor must be, and the Error for one that is not. Used by the
// ops that take indices (core/launch_index.cpp, the cross-entropy's targets) and by the backends that
// check them (Backend::check_indices).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "error.h"
#include "shape.h"

namespace axiom::core {

// Every value of an index tensor in [0, limit). A value out of range is reported either as an
// index into `axis` of the indexed tensor, or (class_targets) as a target that is not a class:
//   "[gather] index 7 at [1, 2] is out of range for axis 1 of size 5"
//   "[cross_entropy] target 7 (element 3 of the targets) is not a class in [0, 5)"
struct IndexBounds {
  std::string op;
  int64_t limit = 0;
  int axis = 0;
  bool class_targets = false;

  // The Error for `value`, found at row-major position `flat` of an index of shape `shape`.
  Error out_of_range(int64_t value, int64_t flat, const Shape& shape) const;
  // Throws out_of_range for the first of `values` (an index of shape `shape`) out of range.
  void check(const std::vector<int64_t>& values, const Shape& shape) const;
};

}  // namespace axiom::core
