#include "core/tensor.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "core/backend.h"
#include "core/checks.h"
#include "core/error.h"
#include "core/factory.h"
#include "core/launch.h"

namespace axiom::core {

Tensor::Tensor(std::shared_ptr<Storage> storage, Shape shape, Strides strides, int64_t offset, Dtype dtype)
    : storage_(std::move(storage)),
      shape_(std::move(shape)),
      strides_(std::move(strides)),
      offset_(offset),
      dtype_(dtype) {}

int64_t Tensor::size(int64_t axis) const { return shape_[normalize_axis("size", axis, dim())]; }
int64_t Tensor::stride(int64_t axis) const { return strides_[normalize_axis("stride", axis, dim())]; }

Device Tensor::device() const {
  if (!storage_) throw Error("device", "the tensor is undefined");
  return storage_->device();
}

bool Tensor::is_contiguous() const {
  int64_t expected = 1;
  for (size_t i = shape_.size(); i-- > 0;) {
    if (shape_[i] == 0) return true;
    if (shape_[i] == 1) continue;  // the stride of a size-1 axis never matters
    if (strides_[i] != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

void* Tensor::raw_data() const {
  if (!storage_) throw Error("data", "the tensor is undefined");
  return static_cast<char*>(storage_->data()) + offset_ * static_cast<int64_t>(dtype_size(dtype_));
}

void Tensor::check_data_access(Dtype requested) const {
  if (!storage_) throw Error("data", "the tensor is undefined");
  if (requested != dtype_) throw Error("data", "asked for ", requested, " elements of a ", dtype_, " tensor");
  if (device().type != DeviceType::cpu) {
    throw Error("data", "the tensor is on ", device(), "; move it to the cpu with .to(Device::cpu()) first");
  }
}

// --- elements -----------------------------------------------------------------------------------------

int64_t Tensor::element_offset(const std::vector<int64_t>& index, const char* op) const {
  if (static_cast<int64_t>(index.size()) != dim()) {
    throw Error(op, "index ", index, " has ", index.size(), " entries for a tensor of shape ", shape_);
  }
  int64_t offset = offset_;
  for (size_t i = 0; i < index.size(); ++i) {
    if (index[i] < 0 || index[i] >= shape_[i]) throw Error(op, "index ", index, " is out of range for shape ", shape_);
    offset += index[i] * strides_[i];
  }
  return offset;
}

double Tensor::at(const std::vector<int64_t>& index) const {
  Tensor element(storage_, {}, {}, element_offset(index, "at"), dtype_);
  if (device().type != DeviceType::cpu) element = element.to(Device::cpu());
  if (dtype_ == Dtype::bfloat16) element = element.to(Dtype::float32);  // exactly: float32 holds every bfloat16
  return dispatch(element.dtype(), [&]<typename T>() { return static_cast<double>(*element.data<T>()); });
}

void Tensor::set(const std::vector<int64_t>& index, double value) const {
  Tensor element(storage_, {}, {}, element_offset(index, "set"), dtype_);
  const Dtype source = dtype_ == Dtype::bfloat16 ? Dtype::float32 : Dtype::float64;  // (bfloat16 converts from float32)
  copy_into(scalar(value, source, element.device()), element);                       // marks the storage written
}

double Tensor::item() const {
  if (numel() != 1) throw Error("item", "a tensor of shape ", shape_, " has ", numel(), " elements, not 1");
  return reshape({}).at({});
}

template <typename T>
std::vector<T> Tensor::to_vector() const {
  const Tensor widened = dtype_ == Dtype::bfloat16 ? to(Dtype::float32) : *this;  // (bfloat16 converts to float32)
  const Tensor host = widened.to(Device::cpu()).to(dtype_of<T>).contiguous();
  std::vector<T> values(static_cast<size_t>(host.numel()));
  if (!values.empty()) std::memcpy(values.data(), host.raw_data(), values.size() * sizeof(T));
  return values;
}
template std::vector<float> Tensor::to_vector<float>() const;
template std::vector<double> Tensor::to_vector<double>() const;
template std::vector<int64_t> Tensor::to_vector<int64_t>() const;
template std::vector<uint8_t> Tensor::to_vector<uint8_t>() const;

// --- views --------------------------------------------------------------------------------------------

namespace {

// Replaces a -1 in `shape` by the size that makes the element count `count`.
Shape infer_size(const char* op, const Shape& from, Shape shape) {
  int inferred = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (inferred >= 0) throw Error(op, "only one size may be -1, got ", shape);
      inferred = static_cast<int>(i);
    } else if (shape[i] < 0) {
      throw Error(op, "invalid size ", shape[i], " in ", shape);
    }
  }
  Shape without_inferred = shape;
  if (inferred >= 0) without_inferred[static_cast<size_t>(inferred)] = 1;
  check_countable(op, without_inferred);
  const int64_t known = numel(without_inferred);
  const int64_t count = numel(from);
  if (inferred >= 0 && known != 0 && count % known == 0) shape[inferred] = count / known;
  if (numel(shape) != count || (inferred >= 0 && known == 0)) {
    throw Error(op, "cannot reshape ", from, " (", count, " elements) into ", shape);
  }
  return shape;
}

// The strides that let `new_shape` view the same elements, if any exist. Old axes are grouped into
// runs that are contiguous among themselves; each run must be covered exactly by new axes.
std::optional<Strides> view_strides(const Shape& old_shape, const Strides& old_strides, const Shape& new_shape) {
  if (old_shape.empty() || numel(old_shape) == 0) return contiguous_strides(new_shape);
  Strides new_strides(new_shape.size());
  int64_t view_axis = static_cast<int64_t>(new_shape.size()) - 1;
  int64_t run_stride = old_strides.back();  // stride of the innermost axis of the current run
  int64_t run_numel = 1, view_numel = 1;
  for (int64_t axis = static_cast<int64_t>(old_shape.size()) - 1; axis >= 0; --axis) {
    run_numel *= old_shape[axis];
    const bool run_ends = axis == 0 || (old_shape[axis - 1] != 1 && old_strides[axis - 1] != run_numel * run_stride);
    if (!run_ends) continue;
    while (view_axis >= 0 && (view_numel < run_numel || new_shape[view_axis] == 1)) {
      new_strides[view_axis] = view_numel * run_stride;
      view_numel *= new_shape[view_axis];
      --view_axis;
    }
    if (view_numel != run_numel) return std::nullopt;
    if (axis > 0) {
      run_stride = old_strides[axis - 1];
      run_numel = view_numel = 1;
    }
  }
  if (view_axis != -1) return std::nullopt;
  return new_strides;
}

}  // namespace

Tensor Tensor::view(Shape shape) const {
  shape = infer_size("view", shape_, std::move(shape));
  auto strides = view_strides(shape_, strides_, shape);
  if (!strides) {
    throw Error("view", "a tensor of shape ", shape_, " and strides ", strides_, " cannot be viewed as ", shape,
                " without a copy; use reshape()");
  }
  return Tensor(storage_, std::move(shape), std::move(*strides), offset_, dtype_);
}

Tensor Tensor::reshape(Shape shape) const {
  shape = infer_size("reshape", shape_, std::move(shape));
  if (auto strides = view_strides(shape_, strides_, shape)) {
    return Tensor(storage_, std::move(shape), std::move(*strides), offset_, dtype_);
  }
  return clone().view(std::move(shape));
}

Tensor Tensor::permute(const std::vector<int64_t>& order) const {
  if (static_cast<int64_t>(order.size()) != dim()) {
    throw Error("permute", "order ", order, " has ", order.size(), " axes for a tensor of shape ", shape_);
  }
  Shape shape(order.size());
  Strides strides(order.size());
  std::vector<bool> used(order.size(), false);
  for (size_t i = 0; i < order.size(); ++i) {
    const int axis = normalize_axis("permute", order[i], dim());
    if (used[axis]) throw Error("permute", "order ", order, " names axis ", axis, " twice");
    used[axis] = true;
    shape[i] = shape_[axis];
    strides[i] = strides_[axis];
  }
  return Tensor(storage_, std::move(shape), std::move(strides), offset_, dtype_);
}

Tensor Tensor::transpose(int64_t axis0, int64_t axis1) const {
  std::vector<int64_t> order(shape_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
  std::swap(order[normalize_axis("transpose", axis0, dim())], order[normalize_axis("transpose", axis1, dim())]);
  return permute(order);
}

Tensor Tensor::movedim(int64_t from, int64_t to) const {
  const int source = normalize_axis("movedim", from, dim());
  const int target = normalize_axis("movedim", to, dim());
  std::vector<int64_t> order;
  for (int64_t i = 0; i < dim(); ++i) {
    if (i != source) order.push_back(i);
  }
  order.insert(order.begin() + target, source);
  return permute(order);
}

Tensor Tensor::slice(int64_t axis, int64_t start, int64_t stop, int64_t step) const {
  const int a = normalize_axis("slice", axis, dim());
  if (step <= 0) throw Error("slice", "step must be positive, got ", step);
  const int64_t size = shape_[a];
  auto clamp_index = [size](int64_t i) { return std::clamp(i < 0 ? i + size : i, int64_t{0}, size); };
  start = clamp_index(start);
  stop = std::max(clamp_index(stop), start);
  Shape shape = shape_;
  Strides strides = strides_;
  shape[a] = (stop - start + step - 1) / step;
  strides[a] = strides_[a] * step;
  return Tensor(storage_, std::move(shape), std::move(strides), offset_ + start * strides_[a], dtype_);
}

Tensor Tensor::narrow(int64_t axis, int64_t start, int64_t length) const {
  const int a = normalize_axis("narrow", axis, dim());
  if (start < 0 || length < 0 || start + length > shape_[a]) {
    throw Error("narrow", "elements [", start, ", ", start + length, ") are out of range for axis ", a, " of size ",
                shape_[a]);
  }
  return slice(a, start, start + length);
}

Tensor Tensor::select(int64_t axis, int64_t index) const {
  const int a = normalize_axis("select", axis, dim());
  if (index < -shape_[a] || index >= shape_[a]) {
    throw Error("select", "index ", index, " is out of range for axis ", a, " of size ", shape_[a]);
  }
  return narrow(a, index < 0 ? index + shape_[a] : index, 1).squeeze(a);
}

Tensor Tensor::expand(const Shape& shape) const {
  if (shape.size() < shape_.size()) {
    throw Error("expand", "cannot expand ", shape_, " to ", shape, ": the target has fewer axes");
  }
  const size_t lead = shape.size() - shape_.size();  // new leading axes
  Shape out_shape(shape.size());
  Strides out_strides(shape.size(), 0);
  for (size_t i = 0; i < shape.size(); ++i) {
    const int64_t old = i < lead ? 1 : shape_[i - lead];
    const int64_t target = shape[i] == -1 && i >= lead ? old : shape[i];
    if (target < 0 || (old != target && old != 1)) {
      throw Error("expand", "cannot expand ", shape_, " to ", shape, " (size ", old, " vs ", shape[i], " at axis ", i,
                  ")");
    }
    out_shape[i] = target;
    out_strides[i] = (i < lead || old != target) ? 0 : strides_[i - lead];
  }
  check_countable("expand", out_shape);
  return Tensor(storage_, std::move(out_shape), std::move(out_strides), offset_, dtype_);
}

Tensor Tensor::squeeze() const {
  Shape shape;
  Strides strides;
  for (size_t i = 0; i < shape_.size(); ++i) {
    if (shape_[i] != 1) shape.push_back(shape_[i]), strides.push_back(strides_[i]);
  }
  return Tensor(storage_, std::move(shape), std::move(strides), offset_, dtype_);
}

Tensor Tensor::squeeze(int64_t axis) const {
  const int a = normalize_axis("squeeze", axis, dim());
  if (shape_[a] != 1) throw Error("squeeze", "axis ", a, " of shape ", shape_, " has size ", shape_[a], ", not 1");
  Shape shape = shape_;
  Strides strides = strides_;
  shape.erase(shape.begin() + a);
  strides.erase(strides.begin() + a);
  return Tensor(storage_, std::move(shape), std::move(strides), offset_, dtype_);
}

Tensor Tensor::unsqueeze(int64_t axis) const {
  const int a = normalize_axis("unsqueeze", axis, dim() + 1);
  Shape shape = shape_;
  Strides strides = strides_;
  const int64_t stride = a < dim() ? shape_[a] * strides_[a] : 1;
  shape.insert(shape.begin() + a, 1);
  strides.insert(strides.begin() + a, stride);
  return Tensor(storage_, std::move(shape), std::move(strides), offset_, dtype_);
}

// --- copies -------------------------------------------------------------------------------------------

Tensor Tensor::contiguous() const { return is_contiguous() ? *this : clone(); }

Tensor Tensor::clone() const {
  Tensor out = empty(shape_, dtype_, device());
  copy_into(*this, out);
  return out;
}

Tensor Tensor::to(Dtype dtype) const {
  if (dtype == dtype_) return *this;
  checks::convertible("to", dtype_, dtype, device());
  Tensor out = empty(shape_, dtype, device());
  copy_into(*this, out);
  return out;
}

Tensor Tensor::to(Device target) const {
  const Device source = device();
  if (target == source) return *this;
  if (dtype_ == Dtype::bfloat16) checks::convertible("to", dtype_, dtype_, target);  // the CPU only
  const Tensor src = contiguous();
  Tensor out = empty(shape_, dtype_, target);
  const size_t nbytes = static_cast<size_t>(numel()) * dtype_size(dtype_);
  if (source.type == DeviceType::cpu) {
    backend(target).copy_from_host(out.raw_data(), src.raw_data(), nbytes);
  } else if (target.type == DeviceType::cpu) {
    backend(source).copy_to_host(out.raw_data(), src.raw_data(), nbytes);
  } else {  // between two accelerators: through the host
    return src.to(Device::cpu()).to(target);
  }
  return out;
}

std::ostream& operator<<(std::ostream& out, const Tensor& tensor) { return out << tensor.to_string(); }

}  // namespace axiom::core
