// NumPy and axiom.Tensor, sharing memory where they can.
//
//   axiom.from_numpy(a)   a Tensor over a's own memory when a is float32, float64, int64 or uint8,
//                         in the machine's byte order, aligned, writeable, with strides that are
//                         whole elements and not negative; else a copy (converted: bool -> uint8,
//                         other integers -> int64, float16 -> float32).
//   np.asarray(t)         an array over t's memory, strides included (the buffer protocol, in
//                         tensor.cpp): a CPU tensor that does not require a gradient.
//
// A Tensor over an array keeps the array alive (its storage holds a reference), and the array a
// Tensor made keeps the tensor alive: either may be dropped first. Writes through either are seen
// by the other; autograd does not see writes made through NumPy (as in PyTorch).
#include <pybind11/numpy.h>

#include "apps/python/bindings/bindings.h"
#include "autograd/internal.h"

namespace axiom::python {

namespace {

// The array's dtype when axiom can use its memory as it is; nullopt when it must be converted.
std::optional<Dtype> shared_dtype(const py::array& array) {
  // By kind and size, not by identity: NumPy has two int64 types ('l' and 'q', the buffer
  // protocol's), and a dtype that says '=' or '<' is the same type as the native one.
  const py::dtype type = array.dtype();
  if (type.byteorder() == '>') return std::nullopt;  // big-endian ('=' '<' '|' are native here)
  const char kind = type.kind();
  const py::ssize_t size = type.itemsize();
  if (kind == 'f' && size == 4) return Dtype::float32;
  if (kind == 'f' && size == 8) return Dtype::float64;
  if (kind == 'i' && size == 8) return Dtype::int64;
  if (kind == 'u' && size == 1) return Dtype::uint8;
  return std::nullopt;
}

bool memory_can_be_shared(const py::array& array) {
  const int flags = py::detail::array_proxy(array.ptr())->flags;
  if (!(flags & py::detail::npy_api::NPY_ARRAY_ALIGNED_) || !(flags & py::detail::npy_api::NPY_ARRAY_WRITEABLE_))
    return false;
  for (py::ssize_t axis = 0; axis < array.ndim(); ++axis) {
    if (array.strides(axis) < 0 || array.strides(axis) % array.itemsize() != 0) return false;
  }
  return true;
}

// The dtype a copy of an array of `type` gets: the nearest of axiom's four.
Dtype converted_dtype(const py::dtype& type, const char* op) {
  switch (type.kind()) {
    case 'b': return Dtype::uint8;  // bool
    case 'u': return type.itemsize() == 1 ? Dtype::uint8 : Dtype::int64;
    case 'i': return Dtype::int64;
    case 'f': return type.itemsize() >= 8 ? Dtype::float64 : Dtype::float32;  // long double: float64
    default:
      throw Error(op, "dtype ", std::string(py::str(py::handle(type))),
                  " has no axiom dtype (float32, float64, int64, uint8)");
  }
}

py::dtype numpy_dtype(Dtype dtype) {
  switch (dtype) {
    case Dtype::float32: return py::dtype::of<float>();
    case Dtype::float64: return py::dtype::of<double>();
    case Dtype::int64: return py::dtype::of<int64_t>();
    case Dtype::uint8: return py::dtype::of<uint8_t>();
    case Dtype::bfloat16: break;
  }
  throw Error("numpy", "NumPy has no dtype ", dtype);
}

// A Tensor over the array's memory (which memory_can_be_shared said it may use).
core::Tensor tensor_over(const py::array& array, Dtype dtype) {
  Shape shape;
  core::Strides strides;
  int64_t last_element = 0;  // the farthest element from the first, in elements
  for (py::ssize_t axis = 0; axis < array.ndim(); ++axis) {
    shape.push_back(array.shape(axis));
    strides.push_back(array.strides(axis) / array.itemsize());
    if (array.shape(axis) == 0) last_element = -1;
    if (last_element >= 0) last_element += (array.shape(axis) - 1) * strides.back();
  }
  const size_t nbytes = static_cast<size_t>(last_element + 1) * dtype_size(dtype);
  // The storage keeps a reference to the array; it is dropped with the GIL held, from any thread.
  PyObject* owner = array.inc_ref().ptr();
  std::shared_ptr<void> keep_alive(owner, [](void* object) {
    if (!Py_IsInitialized()) return;  // the interpreter has gone: nothing left to release
    py::gil_scoped_acquire gil;
    Py_DECREF(static_cast<PyObject*>(object));
  });
  auto storage = std::make_shared<core::Storage>(const_cast<void*>(array.data()), nbytes, std::move(keep_alive));
  return core::Tensor(std::move(storage), std::move(shape), std::move(strides), 0, dtype);
}

Tensor from_numpy(const py::array& array, bool requires_grad) {
  const std::optional<Dtype> dtype = shared_dtype(array);
  if (dtype && memory_can_be_shared(array)) return Tensor(tensor_over(array, *dtype), requires_grad);
  const Dtype target = dtype.value_or(converted_dtype(array.dtype(), "from_numpy"));
  if (array.dtype().kind() == 'u' && array.dtype().itemsize() == 8 && array.size() > 0 &&
      array.attr("max")().cast<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    throw py::value_error("[from_numpy] a uint64 value is over int64's largest, " + std::to_string(INT64_MAX));
  }
  // np.array(..., copy=True, order="C") in the target type: aligned, writeable, contiguous, ours.
  py::array copy = py::array::ensure(array.attr("astype")(numpy_dtype(target), "C", "unsafe", true, true),
                                     py::array::c_style | py::array::forcecast);
  return Tensor(tensor_over(copy, target), requires_grad);
}

}  // namespace

std::vector<int64_t> axes_of(const py::object& axis) {
  if (axis.is_none()) return {};
  if (py::isinstance<py::int_>(axis)) return {cast_or_type_error<int64_t>(axis, "an axis is an int")};
  return cast_or_type_error<std::vector<int64_t>>(axis, "axes are None, an int or a sequence of ints");
}

Shape shape_of(const py::handle& value, const char* op) {
  if (py::isinstance<py::int_>(value)) return Shape{value.cast<int64_t>()};
  if (!py::isinstance<py::sequence>(value) || py::isinstance<py::str>(value)) {
    throw py::type_error(std::string("[") + op + "] a shape is a tuple or list of ints, got " +
                         std::string(py::str(py::type::of(value).attr("__name__"))));
  }
  Shape shape;
  for (const py::handle item : value) {
    if (!py::isinstance<py::int_>(item) || py::isinstance<py::bool_>(item)) {
      throw py::type_error(std::string("[") + op + "] a shape holds ints, got " + std::string(py::repr(value)));
    }
    const auto size = cast_or_type_error<long long>(item, "a size is an int of 64 bits");
    if (size < 0)
      throw py::value_error(std::string("[") + op + "] sizes must be 0 or more, got " + std::string(py::repr(value)));
    shape.push_back(size);
  }
  return shape;
}

Tensor as_tensor(const py::handle& value, const Tensor* like) {
  if (py::isinstance<Tensor>(value)) return value.cast<Tensor>();
  if (value.is_none()) throw py::type_error("expected a Tensor or a number, got None");
  // numpy.asarray, not py::array::ensure, which would drop NumPy's own error (a ragged list)
  py::array array = py::module_::import("numpy").attr("asarray")(value);
  if (array.dtype().kind() == 'O' || array.dtype().kind() == 'U' || array.dtype().kind() == 'S') {
    throw py::type_error("expected a Tensor, a number or an array of numbers, got " + std::string(py::repr(value)));
  }
  Tensor copy = from_numpy(array.attr("copy")(), false);
  if (!like) return copy;
  if (!is_floating(like->dtype()) && is_floating(copy.dtype())) {  // 2.5 would be cut to 2
    throw py::type_error(
        "[" + std::string(dtype_name(like->dtype())) +
        "] a fractional number beside an integer tensor: convert the tensor first, .double() or .float()");
  }
  return Tensor(core_tensor(copy).to(like->dtype()).to(like->device()));
}

void bind_numpy(py::module_& m) {
  m.def("from_numpy", &from_numpy, py::arg("array"), py::arg("requires_grad") = false,
        "A Tensor over the NumPy array's own memory, when its dtype is float32, float64, int64 or uint8\n"
        "(native byte order, aligned, writeable, strides in whole elements, none negative): writes through\n"
        "either are seen by the other, and the Tensor keeps the array alive. Otherwise a converted copy:\n"
        "bool -> uint8, other integers -> int64, float16 -> float32, anything else a TypeError.");
  m.def(
      "tensor",
      [](const py::object& data, std::optional<Dtype> dtype, const Device& device, bool requires_grad) {
        Tensor value =
            py::isinstance<Tensor>(data) ? Tensor(core_tensor(data.cast<Tensor>()).clone()) : as_tensor(data);
        if (dtype) value = Tensor(core_tensor(value).to(*dtype));
        if (!(device == value.device())) value = Tensor(core_tensor(value).to(device));
        if (requires_grad) value.set_requires_grad(true);
        return value;
      },
      py::arg("data"), py::arg("dtype") = py::none(), py::arg("device") = Device::cpu(),
      py::arg("requires_grad") = false,
      "A new Tensor holding a copy of `data` (a number, nested lists, a NumPy array or a Tensor).\n"
      "Python floats become float64 and ints int64 unless `dtype` says otherwise.");
}

}  // namespace axiom::python
