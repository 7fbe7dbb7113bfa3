// Tensor: a view of a Storage — offset + shape + strides + dtype. The device is the storage's.
//
// Copying a Tensor copies the handle, not the data (like PyTorch): two handles, one buffer.
// View methods (reshape when possible, permute, transpose, slice, narrow, expand, squeeze,
// unsqueeze) return new tensors over the same storage; `clone()` always copies, and
// `contiguous()` and `to()` copy unless the tensor already is what was asked for (then they
// return it, sharing its storage, as PyTorch does). Element i of axis k lives at  offset + sum_k index[k] * strides[k]
// (in elements).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "device.h"
#include "dtype.h"
#include "shape.h"
#include "storage.h"

namespace axiom::core {

class Tensor {
 public:
  Tensor() = default;  // undefined: holds nothing (an absent optional argument, say)
  Tensor(std::shared_ptr<Storage> storage, Shape shape, Strides strides, int64_t offset, Dtype dtype);

  // --- what it is --------------------------------------------------------------------------------
  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  const Strides& strides() const { return strides_; }
  int64_t dim() const { return static_cast<int64_t>(shape_.size()); }
  int64_t size(int64_t axis) const;
  int64_t stride(int64_t axis) const;
  int64_t offset() const { return offset_; }
  int64_t numel() const { return core::numel(shape_); }
  Dtype dtype() const { return dtype_; }
  Device device() const;
  bool is_contiguous() const;
  const std::shared_ptr<Storage>& storage() const { return storage_; }

  // Pointer to element [0, ..., 0]. data<T>() checks that T is the dtype and the device is the CPU.
  void* raw_data() const;
  template <typename T>
  T* data() const {
    check_data_access(dtype_of<T>);
    return static_cast<T*>(raw_data());
  }

  // --- elements (copied to the CPU when on another device) -----------------------------------------
  double item() const;                                              // the one element of a 1-element tensor
  double at(const std::vector<int64_t>& index) const;               // one element, as double
  void set(const std::vector<int64_t>& index, double value) const;  // writes through every view
  template <typename T>
  std::vector<T> to_vector() const;  // all elements, row-major, converted to T
  std::string to_string() const;     // tensor([[1, 2], [3, 4]], dtype=...)

  // --- views: no copy ------------------------------------------------------------------------------
  Tensor reshape(Shape shape) const;  // a view when the strides allow it, else a copy; one size may be -1
  Tensor view(Shape shape) const;     // like reshape, but an Error instead of a copy
  Tensor permute(const std::vector<int64_t>& order) const;
  Tensor transpose(int64_t axis0, int64_t axis1) const;
  Tensor movedim(int64_t from, int64_t to) const;
  // Elements start, start+step, ... before stop (Python rules: negatives count from the end, clamped).
  Tensor slice(int64_t axis, int64_t start, int64_t stop, int64_t step = 1) const;
  Tensor narrow(int64_t axis, int64_t start, int64_t length) const;  // out-of-range is an Error
  Tensor select(int64_t axis, int64_t index) const;                  // drops the axis
  Tensor expand(const Shape& shape) const;  // broadcast: size-1 axes repeat with stride 0; -1 keeps a size
  Tensor squeeze() const;                   // drops every size-1 axis
  Tensor squeeze(int64_t axis) const;       // drops one size-1 axis
  Tensor unsqueeze(int64_t axis) const;     // inserts a size-1 axis
  Tensor flatten() const { return reshape({-1}); }

  // --- copies --------------------------------------------------------------------------------------
  Tensor contiguous() const;  // itself when already contiguous
  Tensor clone() const;       // always a fresh contiguous copy
  // Float to integer truncates toward zero and saturates at the type's limits; NaN becomes 0.
  Tensor to(Dtype dtype) const;
  Tensor to(Device device) const;

 private:
  void check_data_access(Dtype requested) const;
  int64_t element_offset(const std::vector<int64_t>& index, const char* op) const;

  std::shared_ptr<Storage> storage_;
  Shape shape_;
  Strides strides_;
  int64_t offset_ = 0;
  Dtype dtype_ = Dtype::float32;
};

std::ostream& operator<<(std::ostream& out, const Tensor& tensor);

}  // namespace axiom::core
