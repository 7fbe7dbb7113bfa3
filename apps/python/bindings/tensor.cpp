// axiom.Tensor: the value Python code holds, with PyTorch's habits.
//
//   x = axiom.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
//   y = (x * x).sum()          operators and methods record the graph, as in C++
//   y.backward()               x.grad is 2x
//   x[0, 1:], x[..., None]     indexing makes views (ints, slices with a positive step, None, ...)
//   np.asarray(x.detach())     the same memory, as a NumPy array (numpy.cpp's counterpart)
//
// A Tensor is a handle: `b = a` shares everything, as in C++ and PyTorch.
#include <pybind11/operators.h>

#include "apps/python/bindings/bindings.h"

namespace axiom::python {

namespace {

// --- shapes and axes ------------------------------------------------------------------------------

py::tuple as_tuple(const std::vector<int64_t>& values) {
  py::tuple out(values.size());
  for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];
  return out;
}

// reshape(2, 3) and reshape((2, 3)) both: PyTorch's *shape habit. Sizes may be -1 here.
Shape sizes_of(const py::args& args) {
  if (args.size() == 1 && !py::isinstance<py::int_>(args[0])) return args[0].cast<Shape>();
  return args.cast<Shape>();
}

// --- indexing ---------------------------------------------------------------------------------------

// How many axes of the tensor an index item consumes: ints, slices and index tensors one each.
int64_t consumed_axes(const py::tuple& items) {
  int64_t count = 0;
  for (const py::handle item : items) {
    if (!item.is_none() && !py::isinstance<py::ellipsis>(item)) ++count;
  }
  return count;
}

int64_t checked_position(const Tensor& x, int64_t axis, int64_t index) {
  const int64_t size = x.size(axis);
  if (index < -size || index >= size) {
    throw py::index_error("[index] index " + std::to_string(index) + " is out of range for axis " + std::to_string(axis) +
                          " of size " + std::to_string(size));
  }
  return index < 0 ? index + size : index;
}

Tensor slice_by(const Tensor& x, int64_t axis, const py::slice& range) {
  py::ssize_t start = 0, stop = 0, step = 0, length = 0;
  if (!range.compute(static_cast<py::ssize_t>(x.size(axis)), &start, &stop, &step, &length)) throw py::error_already_set();
  if (step <= 0) throw py::value_error("[index] slices take a positive step, got " + std::to_string(step));
  return x.slice(axis, start, start + length * step, step);
}

// x[key]: views for ints, slices, None and ...; an int64 tensor picks slices (a copy: index_select).
Tensor index(const Tensor& x, const py::object& key) {
  const py::tuple items = py::isinstance<py::tuple>(key) ? key.cast<py::tuple>() : py::make_tuple(key);
  const int64_t consumed = consumed_axes(items);
  if (consumed > x.dim()) {
    throw py::index_error("[index] too many indices: " + std::to_string(consumed) + " for a tensor of " +
                          std::to_string(x.dim()) + " axes");
  }
  Tensor result = x;
  int64_t axis = 0;  // the axis of `result` the next item applies to
  for (const py::handle item : items) {
    if (item.is_none()) {
      result = result.unsqueeze(axis++);
    } else if (py::isinstance<py::ellipsis>(item)) {
      axis += x.dim() - consumed;
    } else if (py::isinstance<py::slice>(item)) {
      result = slice_by(result, axis++, item.cast<py::slice>());
    } else if (py::isinstance<Tensor>(item)) {
      result = index_select(result, axis++, item.cast<Tensor>());
    } else if (py::isinstance<py::int_>(item) && !py::isinstance<py::bool_>(item)) {
      result = result.select(axis, checked_position(result, axis, item.cast<int64_t>()));
    } else {
      throw py::type_error("[index] an index is an int, a slice, None, ..., or an int64 Tensor, got " +
                           std::string(py::repr(item)));
    }
  }
  return result;
}

// x[key] = value: writes into the view x[key] (value broadcast and converted), outside autograd.
void assign(const Tensor& x, const py::object& key, const py::object& value) {
  const py::tuple items = py::isinstance<py::tuple>(key) ? key.cast<py::tuple>() : py::make_tuple(key);
  for (const py::handle item : items) {
    if (py::isinstance<Tensor>(item)) throw py::type_error("[index] assigning through an index tensor is not supported (it picks a copy)");
  }
  const Tensor view = index(x, key);
  copy_into(as_tensor(value, &view), view);
}

// --- printing ---------------------------------------------------------------------------------------

constexpr int64_t kPrintedElements = 1000;  // larger tensors print their description only

std::string repr(const Tensor& x) {
  if (!x.defined()) return "tensor(undefined)";
  std::string text = "tensor(...";
  if (x.device().type != DeviceType::meta && x.numel() <= kPrintedElements) {
    text = x.to_string();
    text.erase(text.rfind(", dtype="));  // the description below says it all
  }
  std::ostringstream out;
  out << text << ", shape=" << std::string(py::str(as_tuple(x.shape()))) << ", dtype=" << x.dtype() << ", device=" << x.device();
  if (x.grad_fn()) out << ", grad_fn=" << x.grad_fn()->name;
  else if (x.requires_grad()) out << ", requires_grad=True";
  out << ')';
  return out.str();
}

// --- NumPy's view of a tensor (the buffer protocol) ----------------------------------------------

// Why NumPy may not share x's memory, or "" when it may.
std::string why_not_shared(const Tensor& x) {
  if (!x.defined()) return "the tensor is undefined";
  if (x.device().type != DeviceType::cpu) return "the tensor is on " + x.device().str() + ": call .to(\"cpu\") first";
  if (x.requires_grad()) return "the tensor requires a gradient: call .detach() first (writes through NumPy would bypass autograd)";
  return "";
}

const char* format_of(Dtype dtype) {
  switch (dtype) {
    case Dtype::float32: return "f";
    case Dtype::float64: return "d";
    case Dtype::int64: return "q";
    case Dtype::uint8: return "B";
  }
  return "B";
}

// What a Py_buffer points into while it lives: the shape and strides in bytes.
struct BufferLayout {
  std::vector<Py_ssize_t> shape, strides;
};

// The buffer protocol written out (pybind11's own would end the process on a C++ exception):
// a refusal is a BufferError with the reason, and NumPy then asks __array__, which raises it.
extern "C" int tensor_getbuffer(PyObject* object, Py_buffer* view, int flags) {
  try {
    const Tensor x = py::handle(object).cast<Tensor>();
    if (const std::string why = why_not_shared(x); !why.empty()) throw py::buffer_error(why);
    auto* layout = new BufferLayout;
    const auto itemsize = static_cast<Py_ssize_t>(dtype_size(x.dtype()));
    for (int64_t axis = 0; axis < x.dim(); ++axis) {
      layout->shape.push_back(x.size(axis));
      layout->strides.push_back(x.data().stride(axis) * itemsize);
    }
    *view = Py_buffer{};
    view->obj = py::handle(object).inc_ref().ptr();
    view->buf = x.data().raw_data();
    view->itemsize = itemsize;
    view->len = static_cast<Py_ssize_t>(x.numel()) * itemsize;
    view->readonly = 0;
    view->ndim = static_cast<int>(x.dim());
    view->format = (flags & PyBUF_FORMAT) ? const_cast<char*>(format_of(x.dtype())) : nullptr;
    view->shape = layout->shape.data();
    view->strides = layout->strides.data();
    view->internal = layout;
    return 0;
  } catch (py::error_already_set& error) {
    error.restore();
  } catch (const py::builtin_exception& error) {
    error.set_error();
  } catch (const std::exception& error) {
    PyErr_SetString(PyExc_BufferError, error.what());
  }
  view->obj = nullptr;
  return -1;
}

extern "C" void tensor_releasebuffer(PyObject*, Py_buffer* view) { delete static_cast<BufferLayout*>(view->internal); }

void install_buffer_protocol(py::class_<Tensor>& tensor_class) {
  auto* type = reinterpret_cast<PyTypeObject*>(tensor_class.ptr());
  type->tp_as_buffer->bf_getbuffer = tensor_getbuffer;
  type->tp_as_buffer->bf_releasebuffer = tensor_releasebuffer;
}

// np.asarray(x) asks the buffer protocol first; where that refuses, it asks this, which says why.
py::object as_numpy(const py::object& self) {
  const Tensor x = self.cast<Tensor>();
  if (const std::string why = why_not_shared(x); !why.empty()) throw py::type_error("[numpy] " + why);
  return py::module_::import("numpy").attr("asarray")(py::memoryview(self));
}

// --- operators ----------------------------------------------------------------------------------------

// The other operand of an arithmetic operator, in x's dtype and on x's device when it is a number.
Tensor operand(const Tensor& x, const py::object& other) { return as_tensor(other, &x); }

void bind_operators(py::class_<Tensor>& c) {
  c.def("__add__", [](const Tensor& x, const py::object& y) { return add(x, operand(x, y)); }, py::is_operator())
      .def("__radd__", [](const Tensor& x, const py::object& y) { return add(operand(x, y), x); }, py::is_operator())
      .def("__sub__", [](const Tensor& x, const py::object& y) { return sub(x, operand(x, y)); }, py::is_operator())
      .def("__rsub__", [](const Tensor& x, const py::object& y) { return sub(operand(x, y), x); }, py::is_operator())
      .def("__mul__", [](const Tensor& x, const py::object& y) { return mul(x, operand(x, y)); }, py::is_operator())
      .def("__rmul__", [](const Tensor& x, const py::object& y) { return mul(operand(x, y), x); }, py::is_operator())
      .def("__truediv__", [](const Tensor& x, const py::object& y) { return div(x, operand(x, y)); }, py::is_operator())
      .def("__rtruediv__", [](const Tensor& x, const py::object& y) { return div(operand(x, y), x); }, py::is_operator())
      .def("__pow__", [](const Tensor& x, const py::object& y) { return pow(x, operand(x, y)); }, py::is_operator())
      .def("__rpow__", [](const Tensor& x, const py::object& y) { return pow(operand(x, y), x); }, py::is_operator())
      .def("__matmul__", [](const Tensor& x, const Tensor& y) { return matmul(x, y); }, py::is_operator(), release_gil())
      .def("__rmatmul__", [](const Tensor& x, const Tensor& y) { return matmul(y, x); }, py::is_operator(), release_gil())
      .def("__neg__", [](const Tensor& x) { return neg(x); })
      .def("__abs__", [](const Tensor& x) { return abs(x); })
      .def("__eq__", [](const Tensor& x, const py::object& y) { return eq(x, operand(x, y)); }, py::is_operator())
      .def("__lt__", [](const Tensor& x, const py::object& y) { return lt(x, operand(x, y)); }, py::is_operator())
      .def("__gt__", [](const Tensor& x, const py::object& y) { return gt(x, operand(x, y)); }, py::is_operator())
      .def("__hash__", [](const Tensor& x) { return std::hash<const void*>()(x.impl().get()); })
      .def("__bool__", [](const Tensor& x) { return x.item() != 0; })
      .def("__float__", [](const Tensor& x) { return x.item(); })
      .def("__int__", [](const Tensor& x) { return static_cast<int64_t>(x.item()); })
      .def("__len__", [](const Tensor& x) {
        if (x.dim() == 0) throw py::type_error("[len] a tensor of 0 axes has no length");
        return x.size(0);
      });
}

// --- methods that PyTorch users reach for on the tensor itself ----------------------------------

void bind_math_methods(py::class_<Tensor>& c) {
  c.def("sum", [](const Tensor& x, const py::object& axis, bool keepdim) { return sum(x, axes_of(axis), keepdim); },
        py::arg("axis") = py::none(), py::arg("keepdim") = false)
      .def("mean", [](const Tensor& x, const py::object& axis, bool keepdim) { return mean(x, axes_of(axis), keepdim); },
           py::arg("axis") = py::none(), py::arg("keepdim") = false)
      .def("var", [](const Tensor& x, const py::object& axis, bool keepdim, int64_t correction) {
             return var(x, axes_of(axis), keepdim, correction);
           },
           py::arg("axis") = py::none(), py::arg("keepdim") = false, py::arg("correction") = 1)
      .def("max", [](const Tensor& x, const py::object& axis, bool keepdim) { return max(x, axes_of(axis), keepdim); },
           py::arg("axis") = py::none(), py::arg("keepdim") = false)
      .def("min", [](const Tensor& x, const py::object& axis, bool keepdim) { return min(x, axes_of(axis), keepdim); },
           py::arg("axis") = py::none(), py::arg("keepdim") = false)
      .def("argmax", [](const Tensor& x, int64_t axis, bool keepdim) { return argmax(x, axis, keepdim); }, py::arg("axis"),
           py::arg("keepdim") = false)
      .def("exp", [](const Tensor& x) { return exp(x); })
      .def("log", [](const Tensor& x) { return log(x); })
      .def("sqrt", [](const Tensor& x) { return sqrt(x); })
      .def("tanh", [](const Tensor& x) { return tanh(x); })
      .def("sigmoid", [](const Tensor& x) { return sigmoid(x); })
      .def("relu", [](const Tensor& x) { return relu(x); })
      .def("abs", [](const Tensor& x) { return abs(x); })
      .def("softmax", [](const Tensor& x, int64_t axis) { return softmax(x, axis); }, py::arg("axis") = -1)
      .def("log_softmax", [](const Tensor& x, int64_t axis) { return log_softmax(x, axis); }, py::arg("axis") = -1)
      .def("matmul", [](const Tensor& x, const Tensor& y) { return matmul(x, y); }, release_gil());
}

void bind_views(py::class_<Tensor>& c) {
  c.def("reshape", [](const Tensor& x, const py::args& shape) { return x.reshape(sizes_of(shape)); },
        "reshape(2, 3) or reshape((2, 3)): a view when the strides allow it, else a copy; one size may be -1")
      .def("permute", [](const Tensor& x, const py::args& order) { return x.permute(sizes_of(order)); })
      .def("transpose", &Tensor::transpose, py::arg("axis0"), py::arg("axis1"))
      .def("movedim", &Tensor::movedim, py::arg("source"), py::arg("destination"))
      .def("slice", &Tensor::slice, py::arg("axis"), py::arg("start"), py::arg("stop"), py::arg("step") = 1)
      .def("narrow", &Tensor::narrow, py::arg("axis"), py::arg("start"), py::arg("length"))
      .def("select", &Tensor::select, py::arg("axis"), py::arg("index"))
      .def("expand", [](const Tensor& x, const py::args& shape) { return x.expand(sizes_of(shape)); })
      .def("squeeze", &Tensor::squeeze, py::arg("axis"))
      .def("unsqueeze", &Tensor::unsqueeze, py::arg("axis"))
      .def("flatten", &Tensor::flatten)
      .def("contiguous", &Tensor::contiguous)
      .def("to", py::overload_cast<Dtype>(&Tensor::to, py::const_), py::arg("dtype"), release_gil())
      .def("to", py::overload_cast<Device>(&Tensor::to, py::const_), py::arg("device"), release_gil(),
           "to(axiom.float64) or to(\"cuda\"): a copy in that dtype or on that device (the tensor itself when it already is)")
      .def("float", [](const Tensor& x) { return x.to(Dtype::float32); })
      .def("double", [](const Tensor& x) { return x.to(Dtype::float64); })
      .def("long", [](const Tensor& x) { return x.to(Dtype::int64); })
      .def("cpu", [](const Tensor& x) { return x.to(Device::cpu()); })
      .def("clone", [](const Tensor& x) { return add(x, zeros_like(x)); }, "a copy with its own memory (differentiable)")
      .def("__getitem__", &index)
      .def("__setitem__", &assign);
}

void bind_gradients(py::class_<Tensor>& c) {
  c.def_property(
       "requires_grad", &Tensor::requires_grad,
       [](Tensor& x, bool wanted) { x.set_requires_grad(wanted); }, "whether backward() computes this tensor's gradient (leaves only)")
      .def("requires_grad_", [](Tensor& x, bool wanted) { return x.set_requires_grad(wanted); }, py::arg("requires_grad") = true)
      .def_property_readonly("grad", [](const Tensor& x) -> std::optional<Tensor> {
        const Tensor g = x.grad();
        return g.defined() ? std::optional<Tensor>(g) : std::nullopt;
      }, "the gradient summed over every backward() so far, or None")
      .def_property_readonly("is_leaf", &Tensor::is_leaf)
      .def_property_readonly("grad_fn", [](const Tensor& x) -> std::optional<std::string> {
        return x.grad_fn() ? std::optional<std::string>(x.grad_fn()->name) : std::nullopt;
      }, "the name of the op that made this tensor, or None for a leaf")
      .def("zero_grad", &Tensor::zero_grad)
      .def("detach", &Tensor::detach)
      .def("backward",
           [](const Tensor& x, const std::optional<Tensor>& gradient, bool retain_graph, bool create_graph) {
             x.backward(gradient.value_or(Tensor()), {.retain_graph = retain_graph, .create_graph = create_graph});
           },
           py::arg("gradient") = py::none(), py::arg("retain_graph") = false, py::arg("create_graph") = false, release_gil(),
           "Adds d(this)/d(leaf) to every leaf's .grad. With no gradient the tensor must hold one element.");
}

}  // namespace

void bind_tensor(py::module_& m) {
  py::enum_<Dtype>(m, "dtype", "The element types: float32, float64, int64, uint8.")
      .value("float32", Dtype::float32)
      .value("float64", Dtype::float64)
      .value("int64", Dtype::int64)
      .value("uint8", Dtype::uint8)
      .export_values();
  py::class_<Device>(m, "device", "Where a tensor lives: \"cpu\", \"cuda\", \"cuda:N\" or \"meta\".")
      .def(py::init(&Device::parse), py::arg("name"))
      .def("__str__", &Device::str)
      .def("__repr__", [](const Device& d) { return "device('" + d.str() + "')"; })
      .def("__eq__", [](const Device& a, const Device& b) { return a == b; })
      .def("__hash__", [](const Device& d) { return std::hash<std::string>()(d.str()); })
      .def_property_readonly("type", [](const Device& d) { return d.str().substr(0, d.str().find(':')); });
  py::implicitly_convertible<py::str, Device>();

  py::class_<Tensor> c(m, "Tensor", py::buffer_protocol(), "axiom's one value type: numbers, a dtype, a device, and a gradient when asked");
  install_buffer_protocol(c);
  c.def_property_readonly("shape", [](const Tensor& x) { return as_tuple(x.shape()); })
      .def_property_readonly("dtype", &Tensor::dtype)
      .def_property_readonly("device", &Tensor::device)
      .def_property_readonly("ndim", &Tensor::dim)
      .def("dim", &Tensor::dim)
      .def("numel", &Tensor::numel)
      .def("size", [](const Tensor& x, std::optional<int64_t> axis) -> py::object {
        return axis ? py::object(py::int_(x.size(*axis))) : py::object(as_tuple(x.shape()));
      }, py::arg("axis") = py::none())
      .def("stride", [](const Tensor& x) { return as_tuple(x.data().strides()); }, "the strides, in elements")
      .def("is_contiguous", [](const Tensor& x) { return x.data().is_contiguous(); })
      .def("item", &Tensor::item)
      .def("tolist", [](const py::object& self) { return as_numpy(self.attr("detach")().attr("cpu")()).attr("tolist")(); })
      .def("numpy", &as_numpy, "A NumPy array over this tensor's memory (CPU tensors that do not require a gradient)")
      .def("__array__", [](const py::object& self, const py::object& dtype) {
        py::object array = as_numpy(self);
        return dtype.is_none() ? array : array.attr("astype")(dtype);
      }, py::arg("dtype") = py::none())
      .def("__repr__", &repr);
  bind_operators(c);
  bind_math_methods(c);
  bind_views(c);
  bind_gradients(c);
}

}  // namespace axiom::python
