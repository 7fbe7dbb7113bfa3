// Tensor::to_string: a readable picture of a tensor, in the style of PyTorch and NumPy.
//   tensor([[1, 2, 3],
//           [4, 5, 6]], dtype=int64)
// Long axes show their first and last three entries around "...".
#include <iomanip>
#include <sstream>

#include "core/tensor.h"

namespace axiom::core {

namespace {

constexpr int64_t kSummarizeAbove = 1000;  // elements
constexpr int64_t kEdgeItems = 3;

struct Printer {
  const std::vector<std::string>& cells;  // every element, formatted, row-major
  const Shape& shape;
  const Strides strides;  // contiguous strides of `shape`
  bool summarize;
  size_t width;
  std::ostringstream out;

  void print(size_t axis, int64_t offset, int indent) {
    if (axis == shape.size()) {
      out << std::setw(static_cast<int>(width)) << cells[static_cast<size_t>(offset)];
      return;
    }
    out << '[';
    const int64_t size = shape[axis];
    for (int64_t i = 0; i < size; ++i) {
      if (summarize && size > 2 * kEdgeItems && i == kEdgeItems) {
        out << "...";
        i = size - kEdgeItems;
        separator(axis, indent);
      }
      print(axis + 1, offset + i * strides[axis], indent + 1);
      if (i + 1 < size) separator(axis, indent);
    }
    out << ']';
  }

  void separator(size_t axis, int indent) {
    if (axis + 1 == shape.size()) {
      out << ", ";
      return;
    }
    out << ',' << std::string(shape.size() - axis - 1, '\n') << std::string(static_cast<size_t>(indent) + 8, ' ');
  }
};

std::string format_value(double value, bool floating) {
  std::ostringstream cell;
  if (floating) {
    cell << std::setprecision(6) << value;
  } else {
    cell << static_cast<int64_t>(value);
  }
  return cell.str();
}

}  // namespace

std::string Tensor::to_string() const {
  if (!defined()) return "tensor(undefined)";
  const std::vector<double> values = to_vector<double>();
  std::vector<std::string> cells;
  cells.reserve(values.size());
  size_t width = 0;
  for (double v : values) {
    cells.push_back(format_value(v, is_floating(dtype_) || dtype_ == Dtype::bfloat16));
    width = std::max(width, cells.back().size());
  }
  Printer printer{cells, shape_, contiguous_strides(shape_), numel() > kSummarizeAbove, width, {}};
  printer.out << "tensor(";
  printer.print(0, 0, 0);
  printer.out << ", dtype=" << dtype_;
  if (device().type != DeviceType::cpu) printer.out << ", device=" << device();
  if (numel() == 0) printer.out << ", shape=" << shape_str(shape_);
  printer.out << ')';
  return printer.out.str();
}

}  // namespace axiom::core
