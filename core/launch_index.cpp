// Op functions for indexing: index_select / index_add, embedding, gather / scatter_add.
// Indices are int64 and checked against the axis they index (checks::indices_in_range).
#include "core/backend.h"
#include "core/checks.h"
#include "core/error.h"
#include "core/factory.h"
#include "core/launch.h"

namespace axiom::core {

namespace {

Shape with_size(Shape shape, int axis, int64_t size) {
  shape[axis] = size;
  return shape;
}

// Both tensors defined, on one device, and the index int64; returns `axis` normalised for x.
int checked_operands(const char* op, const Tensor& x, int64_t axis, const Tensor& index) {
  checks::defined(op, x);
  checks::computable(op, x);
  checks::defined(op, index, "index");
  checks::same_device(op, x, index);
  checks::dtype_is(op, index, Dtype::int64, "the index");
  return normalize_axis(op, axis, x.dim());
}

// index_select and index_add: a 1-D int64 index into `axis` of x.
int checked_axis_index(const char* op, const Tensor& x, int64_t axis, const Tensor& index) {
  const int a = checked_operands(op, x, axis, index);
  if (index.dim() != 1) throw Error(op, "the index must be 1-D, got shape ", index.shape());
  checks::indices_in_range({op, x.size(a), a}, index);
  return a;
}

// gather and scatter_add: an int64 index with x's shape except along `axis`.
int checked_element_index(const char* op, const Tensor& x, int64_t axis, const Tensor& index) {
  const int a = checked_operands(op, x, axis, index);
  if (index.dim() != x.dim() || with_size(index.shape(), a, 0) != with_size(x.shape(), a, 0)) {
    throw Error(op, "index of shape ", index.shape(), " must match the input's shape ", x.shape(),
                " on every axis but ", a);
  }
  checks::indices_in_range({op, x.size(a), a}, index);
  return a;
}

void check_source(const char* op, const Tensor& x, const Tensor& src, const Shape& expected) {
  checks::defined(op, src, "source");
  checks::same_device(op, x, src);
  checks::same_dtype(op, x, src);
  if (src.shape() != expected) throw Error(op, "source has shape ", src.shape(), "; expected ", expected);
}

}  // namespace

Tensor index_select(const Tensor& x, int64_t axis, const Tensor& index) {
  const int a = checked_axis_index("index_select", x, axis, index);
  Tensor out = empty(with_size(x.shape(), a, index.numel()), x.dtype(), x.device());
  backend(x.device()).index_select(x.contiguous(), a, index.contiguous(), out);
  return out;
}

Tensor index_add(const Tensor& x, int64_t axis, const Tensor& index, const Tensor& src) {
  const int a = checked_axis_index("index_add", x, axis, index);
  check_source("index_add", x, src, with_size(x.shape(), a, index.numel()));
  Tensor out = x.clone();
  backend(x.device()).index_add(out, a, index.contiguous(), src.contiguous());
  return out;
}

Tensor embedding(const Tensor& weight, const Tensor& indices) {
  checks::defined("embedding", weight, "weight");
  checks::computable("embedding", weight);
  checks::defined("embedding", indices, "indices");
  if (weight.dim() != 2) throw Error("embedding", "weight must be 2-D [rows, features], got shape ", weight.shape());
  checks::dtype_is("embedding", indices, Dtype::int64, "indices");
  checks::same_device("embedding", weight, indices);
  checks::indices_in_range({"embedding", weight.size(0), 0}, indices);
  Tensor rows = empty({indices.numel(), weight.size(1)}, weight.dtype(), weight.device());
  backend(weight.device()).index_select(weight.contiguous(), 0, indices.contiguous().reshape({-1}), rows);
  Shape shape = indices.shape();
  shape.push_back(weight.size(1));
  return rows.view(shape);
}

Tensor gather(const Tensor& x, int64_t axis, const Tensor& index) {
  const int a = checked_element_index("gather", x, axis, index);
  Tensor out = empty(index.shape(), x.dtype(), x.device());
  backend(x.device()).gather(x.contiguous(), a, index.contiguous(), out);
  return out;
}

Tensor scatter_add(const Tensor& x, int64_t axis, const Tensor& index, const Tensor& src) {
  const int a = checked_element_index("scatter_add", x, axis, index);
  check_source("scatter_add", x, src, index.shape());
  Tensor out = x.clone();
  backend(x.device()).scatter_add(out, a, index.contiguous(), src.contiguous());
  return out;
}

}  // namespace axiom::core
