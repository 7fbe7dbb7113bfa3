#include "core/shape.h"

#include <algorithm>

#include "core/error.h"

namespace axiom::core {

int64_t numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t size : shape) n *= size;
  return n;
}

void check_countable(std::string_view op, const Shape& shape, std::optional<Dtype> dtype) {
  int64_t extent = dtype ? static_cast<int64_t>(dtype_size(*dtype)) : 1;
  for (int64_t size : shape) {
    if (size < 0) throw Error(op, "negative size in shape ", shape);
    if (!__builtin_mul_overflow(extent, std::max<int64_t>(size, 1), &extent)) continue;
    if (dtype) throw Error(op, "shape ", shape, " of ", *dtype, " has more bytes than a 64-bit size can count");
    throw Error(op, "shape ", shape, " has more elements than a 64-bit size can count");
  }
}

std::string shape_str(const Shape& shape) {
  std::ostringstream out;
  detail::append(out, shape);
  return out.str();
}

std::string shape_str(const std::vector<int64_t>& sizes) { return shape_str(Shape(sizes.begin(), sizes.end())); }

Strides contiguous_strides(const Shape& shape) {
  Strides strides(shape.size());
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= std::max<int64_t>(shape[i], 1);
  }
  return strides;
}

int normalize_axis(std::string_view op, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) {
    throw Error(op, "axis ", axis, " is out of range for a tensor of rank ", rank, " (valid: ", -rank, " to ", rank - 1,
                ")");
  }
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

std::vector<int> normalize_axes(std::string_view op, const std::vector<int64_t>& axes, int64_t rank) {
  std::vector<int> result;
  if (axes.empty()) {
    for (int i = 0; i < rank; ++i) result.push_back(i);
    return result;
  }
  for (int64_t axis : axes) result.push_back(normalize_axis(op, axis, rank));
  std::sort(result.begin(), result.end());
  if (std::adjacent_find(result.begin(), result.end()) != result.end()) {
    throw Error(op, "axes ", axes, " name the same axis twice");
  }
  return result;
}

Shape broadcast_shapes(std::string_view op, const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape result(rank);
  for (size_t i = 0; i < rank; ++i) {
    // Align at the right: missing leading axes count as size 1.
    const int64_t size_a = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t size_b = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (size_a != size_b && size_a != 1 && size_b != 1) {
      throw Error(op, "shapes ", a, " and ", b, " cannot be broadcast (", size_a, " vs ", size_b, " at axis ",
                  static_cast<int64_t>(i) - static_cast<int64_t>(rank), ")");
    }
    result[i] = size_a == 1 ? size_b : size_a;
  }
  return result;
}

}  // namespace axiom::core
