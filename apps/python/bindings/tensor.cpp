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
#include "autograd/internal.h"

namespace axiom::python {

namespace {

// --- shapes and axes ------------------------------------------------------------------------------

template <typename Sizes>  // a Shape, Strides or std::vector<int64_t>
py::tuple as_tuple(const Sizes& values) {
  py::tuple out(values.size());
  for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];
  return out;
}

// reshape(2, 3) and reshape((2, 3)) both: PyTorch's *shape habit. Sizes may be -1 here.
Shape sizes_of(const py::args& args) {
  const py::object sizes =
      args.size() == 1 && !py::isinstance<py::int_>(args[0]) ? py::object(args[0]) : py::object(args);
  return cast_or_type_error<Shape>(sizes, "sizes are ints, given one by one or as a tuple");
}

// --- indexing ---------------------------------------------------------------------------------------

// How many axes of the tensor an index item consumes: ints, slices and index tensors one each.
int64_t consumed_axes(const py::tuple& items) {
  int64_t count = 0, ellipses = 0;
  for (const py::handle item : items) {
    if (py::isinstance<py::ellipsis>(item))
      ++ellipses;
    else if (!item.is_none())
      ++count;
  }
  if (ellipses > 1) throw py::index_error("[index] an index can only have a single ellipsis ('...')");
  return count;
}

// An int index (a Python int, or anything with __index__: a NumPy integer), not a bool.
bool is_int_index(const py::handle item) { return !py::isinstance<py::bool_>(item) && PyIndex_Check(item.ptr()); }

// `index` along `axis` of x, counted from the end when negative; `named_axis` is the axis the
// user's index applies to in the tensor they indexed (for the message).
int64_t checked_position(const Tensor& x, int64_t axis, const py::handle item, int64_t named_axis) {
  const int64_t size = x.size(axis);
  const auto index = cast_or_type_error<long long>(py::reinterpret_steal<py::object>(PyNumber_Index(item.ptr())),
                                                   "an index is an int");
  if (index < -size || index >= size) {
    throw py::index_error("[index] index " + std::to_string(index) + " is out of range for axis " +
                          std::to_string(named_axis) + " of size " + std::to_string(size));
  }
  return index < 0 ? index + size : index;
}

Tensor slice_by(const Tensor& x, int64_t axis, const py::slice& range) {
  py::ssize_t start = 0, stop = 0, step = 0, length = 0;
  if (!range.compute(static_cast<py::ssize_t>(x.size(axis)), &start, &stop, &step, &length))
    throw py::error_already_set();
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
  int64_t axis = 0;    // the axis of `result` the next item applies to
  int64_t x_axis = 0;  // the axis of x it applies to
  for (const py::handle item : items) {
    if (item.is_none()) {
      result = result.unsqueeze(axis++);
    } else if (py::isinstance<py::ellipsis>(item)) {
      axis += x.dim() - consumed, x_axis += x.dim() - consumed;
    } else if (py::isinstance<py::slice>(item)) {
      result = slice_by(result, axis++, item.cast<py::slice>()), ++x_axis;
    } else if (py::isinstance<Tensor>(item)) {
      result = index_select(result, axis++, item.cast<Tensor>()), ++x_axis;
    } else if (is_int_index(item)) {
      result = result.select(axis, checked_position(result, axis, item, x_axis++));
    } else {
      throw py::type_error("[index] an index is an int, a slice, None, ..., or an int64 Tensor, got " +
                           std::string(py::repr(item)));
    }
  }
  return result;
}

// The bytes [first, last] a CPU tensor's elements lie in (an empty range for an empty tensor).
std::pair<const char*, const char*> byte_range(const core::Tensor& t) {
  const char* first = static_cast<const char*>(t.raw_data());
  if (t.numel() == 0 || !first) return {first, first - 1};
  int64_t last = 0;
  for (int64_t axis = 0; axis < t.dim(); ++axis) last += (t.size(axis) - 1) * t.stride(axis);
  return {first, first + last * static_cast<int64_t>(dtype_size(t.dtype())) + dtype_size(t.dtype()) - 1};
}

bool may_overlap(const Tensor& a, const Tensor& b) {
  if (a.device().type != DeviceType::cpu || b.device().type != DeviceType::cpu)
    return core_tensor(a).storage() == core_tensor(b).storage();
  const auto [a_first, a_last] = byte_range(core_tensor(a));
  const auto [b_first, b_last] = byte_range(core_tensor(b));
  return a_first <= b_last && b_first <= a_last;
}

}  // namespace

// dst[...] = src[...]; a source over the same memory as dst (x[1:] = x[:-1], also through two
// tensors over one NumPy array) is read whole before anything is written.
void copy_without_overlap(const Tensor& src, const Tensor& dst) {
  copy_into(may_overlap(src, dst) ? Tensor(core_tensor(src).clone()) : src, dst);
}

namespace {

// x[key] = value: writes into the view x[key] (value broadcast and converted), outside autograd.
void assign(const Tensor& x, const py::object& key, const py::object& value) {
  const py::tuple items = py::isinstance<py::tuple>(key) ? key.cast<py::tuple>() : py::make_tuple(key);
  for (const py::handle item : items) {
    if (py::isinstance<Tensor>(item))
      throw py::type_error("[index] assigning through an index tensor is not supported (it picks a copy)");
  }
  const Tensor view = index(x, key);
  copy_without_overlap(as_tensor(value, &view), view);
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
  out << text << ", shape=" << std::string(py::str(as_tuple(x.shape()))) << ", dtype=" << x.dtype()
      << ", device=" << x.device();
  if (x.grad_fn())
    out << ", grad_fn=" << x.grad_fn()->name;
  else if (x.requires_grad())
    out << ", requires_grad=True";
  out << ')';
  return out.str();
}

// --- NumPy's view of a tensor (the buffer protocol) ----------------------------------------------

// Why NumPy may not share x's memory, or "" when it may.
std::string why_not_shared(const Tensor& x) {
  if (!x.defined()) return "the tensor is undefined";
  if (x.device().type != DeviceType::cpu) return "the tensor is on " + x.device().str() + ": call .to(\"cpu\") first";
  if (x.dtype() == Dtype::bfloat16) return "NumPy has no bfloat16: call .float() first";
  if (x.requires_grad())
    return "the tensor requires a gradient: call .detach() first (writes through NumPy would bypass autograd)";
  return "";
}

const char* format_of(Dtype dtype) {
  switch (dtype) {
    case Dtype::float32: return "f";
    case Dtype::float64: return "d";
    case Dtype::int64: return "q";
    case Dtype::uint8: return "B";
    case Dtype::bfloat16: break;  // (why_not_shared refuses it first)
  }
  return "B";
}

// What a Py_buffer points into while it lives: the shape and strides in bytes, and the tensor
// itself, whose storage stays alive even if the Python object's tensor is given new numbers
// (Module.to replaces a parameter's data).
struct BufferLayout {
  core::Tensor tensor;
  std::vector<Py_ssize_t> shape, strides;
};

// Whether the consumer's flags accept x's layout: without PyBUF_STRIDES, or when it asks for a
// contiguous buffer, only a row-major contiguous tensor is one (hashlib reads numel bytes in a row).
// A column-major (Fortran) request is met only where row-major and column-major are the same
// layout: at most one axis longer than 1.
bool layout_accepted(const Tensor& x, int flags) {
  const bool wants_strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES;
  const bool wants_c = (flags & PyBUF_C_CONTIGUOUS) == PyBUF_C_CONTIGUOUS;
  const bool wants_f = (flags & PyBUF_F_CONTIGUOUS) == PyBUF_F_CONTIGUOUS && !wants_c;  // ANY sets both bits
  const bool wants_any = (flags & PyBUF_ANY_CONTIGUOUS) == PyBUF_ANY_CONTIGUOUS;
  if (wants_f && !wants_any) {
    int64_t long_axes = 0;
    for (int64_t axis = 0; axis < x.dim(); ++axis) long_axes += x.size(axis) > 1;
    return x.is_contiguous() && long_axes <= 1;
  }
  return x.is_contiguous() || (wants_strides && !wants_c && !wants_any);
}

// The buffer protocol written out (pybind11's own would end the process on a C++ exception):
// a refusal is a BufferError with the reason, and NumPy then asks __array__, which raises it.
extern "C" int tensor_getbuffer(PyObject* object, Py_buffer* view, int flags) {
  try {
    const Tensor x = py::handle(object).cast<Tensor>();
    if (const std::string why = why_not_shared(x); !why.empty()) throw py::buffer_error(why);
    if (!layout_accepted(x, flags))
      throw py::buffer_error("[buffer] the tensor is not contiguous: call .contiguous() first");
    auto* layout = new BufferLayout{core_tensor(x), {}, {}};
    const auto itemsize = static_cast<Py_ssize_t>(dtype_size(x.dtype()));
    for (int64_t axis = 0; axis < x.dim(); ++axis) {
      layout->shape.push_back(x.size(axis));
      layout->strides.push_back(core_tensor(x).stride(axis) * itemsize);
    }
    *view = Py_buffer{};
    view->obj = py::handle(object).inc_ref().ptr();
    view->buf = core_tensor(x).raw_data();
    view->itemsize = itemsize;
    view->len = static_cast<Py_ssize_t>(x.numel()) * itemsize;
    view->readonly = 0;
    view->format = (flags & PyBUF_FORMAT) ? const_cast<char*>(format_of(x.dtype())) : nullptr;
    const bool wants_shape = (flags & PyBUF_ND) == PyBUF_ND;  // else: plain bytes, one axis
    view->ndim = wants_shape ? static_cast<int>(x.dim()) : 1;
    view->shape = wants_shape ? layout->shape.data() : nullptr;
    view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? layout->strides.data() : nullptr;
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

// The one element as a Python number: an int for int64 and uint8 tensors, exactly (not through a
// double), and a float for float tensors.
py::object item_of(const Tensor& x) {
  if (x.numel() != 1) return py::float_(x.item());  // x.item()'s Error names the element count
  if (is_floating(x.dtype())) return py::float_(x.item());
  return py::int_(core_tensor(x).to(Dtype::int64).to_vector<int64_t>().front());
}

// --- operators ----------------------------------------------------------------------------------------

// The other operand of an arithmetic operator, in x's dtype and on x's device when it is a number.
Tensor operand(const Tensor& x, const py::object& other) { return as_tensor(other, &x); }

void bind_operators(py::class_<Tensor>& c) {
  c.def(
       "__add__", [](const Tensor& x, const py::object& y) { return add(x, operand(x, y)); }, py::is_operator())
      .def(
          "__radd__", [](const Tensor& x, const py::object& y) { return add(operand(x, y), x); }, py::is_operator())
      .def(
          "__sub__", [](const Tensor& x, const py::object& y) { return sub(x, operand(x, y)); }, py::is_operator())
      .def(
          "__rsub__", [](const Tensor& x, const py::object& y) { return sub(operand(x, y), x); }, py::is_operator())
      .def(
          "__mul__", [](const Tensor& x, const py::object& y) { return mul(x, operand(x, y)); }, py::is_operator())
      .def(
          "__rmul__", [](const Tensor& x, const py::object& y) { return mul(operand(x, y), x); }, py::is_operator())
      .def(
          "__truediv__", [](const Tensor& x, const py::object& y) { return div(x, operand(x, y)); }, py::is_operator())
      .def(
          "__rtruediv__", [](const Tensor& x, const py::object& y) { return div(operand(x, y), x); }, py::is_operator())
      .def(
          "__pow__", [](const Tensor& x, const py::object& y) { return pow(x, operand(x, y)); }, py::is_operator())
      .def(
          "__rpow__", [](const Tensor& x, const py::object& y) { return pow(operand(x, y), x); }, py::is_operator())
      .def(
          "__matmul__", [](const Tensor& x, const Tensor& y) { return matmul(x, y); }, py::is_operator(), release_gil())
      .def(
          "__rmatmul__", [](const Tensor& x, const Tensor& y) { return matmul(y, x); }, py::is_operator(),
          release_gil())
      .def("__neg__", [](const Tensor& x) { return neg(x); })
      .def("__abs__", [](const Tensor& x) { return abs(x); })
      .def(
          "__eq__",
          [](const Tensor& x, const py::object& y) -> py::object {
            if (y.is_none() || py::isinstance<py::str>(y)) return py::reinterpret_borrow<py::object>(Py_NotImplemented);
            return py::cast(eq(x, operand(x, y)));
          },
          py::is_operator())
      .def(
          "__lt__", [](const Tensor& x, const py::object& y) { return lt(x, operand(x, y)); }, py::is_operator())
      .def(
          "__gt__", [](const Tensor& x, const py::object& y) { return gt(x, operand(x, y)); }, py::is_operator())
      .def("__hash__", [](const Tensor& x) { return std::hash<const void*>()(x.impl().get()); })
      .def("__bool__", [](const Tensor& x) { return x.item() != 0; })
      .def("__float__", [](const Tensor& x) { return x.item(); })
      .def("__int__", [](const Tensor& x) { return py::int_(item_of(x)); })
      .def("__index__",
           [](const Tensor& x) {
             if (is_floating(x.dtype()))
               throw py::type_error("[index] only an integer tensor can be an index, got " +
                                    std::string(dtype_name(x.dtype())));
             return py::int_(item_of(x));
           })
      .def("__iter__",
           [](const py::object& self) {
             if (self.cast<const Tensor&>().dim() == 0)
               throw py::type_error("[iter] a tensor of 0 axes cannot be iterated");
             return py::iter(py::module_::import("builtins")
                                 .attr("map")(self.attr("__getitem__"),
                                              py::module_::import("builtins").attr("range")(py::len(self))));
           })
      .def("__len__", [](const Tensor& x) {
        if (x.dim() == 0) throw py::type_error("[len] a tensor of 0 axes has no length");
        return x.size(0);
      });
}

// --- methods that PyTorch users reach for on the tensor itself ----------------------------------

void bind_math_methods(py::class_<Tensor>& c) {
  c.def(
       "sum", [](const Tensor& x, const py::object& axis, bool keepdim) { return sum(x, axes_of(axis), keepdim); },
       py::arg("axis") = py::none(), py::arg("keepdim") = false)
      .def(
          "mean", [](const Tensor& x, const py::object& axis, bool keepdim) { return mean(x, axes_of(axis), keepdim); },
          py::arg("axis") = py::none(), py::arg("keepdim") = false)
      .def(
          "var",
          [](const Tensor& x, const py::object& axis, bool keepdim, int64_t correction) {
            return var(x, axes_of(axis), keepdim, correction);
          },
          py::arg("axis") = py::none(), py::arg("keepdim") = false, py::arg("correction") = 1)
      .def(
          "max", [](const Tensor& x, const py::object& axis, bool keepdim) { return max(x, axes_of(axis), keepdim); },
          py::arg("axis") = py::none(), py::arg("keepdim") = false)
      .def(
          "min", [](const Tensor& x, const py::object& axis, bool keepdim) { return min(x, axes_of(axis), keepdim); },
          py::arg("axis") = py::none(), py::arg("keepdim") = false)
      .def(
          "argmax", [](const Tensor& x, int64_t axis, bool keepdim) { return argmax(x, axis, keepdim); },
          py::arg("axis"), py::arg("keepdim") = false)
      .def("exp", [](const Tensor& x) { return exp(x); })
      .def("log", [](const Tensor& x) { return log(x); })
      .def("sqrt", [](const Tensor& x) { return sqrt(x); })
      .def("tanh", [](const Tensor& x) { return tanh(x); })
      .def("sigmoid", [](const Tensor& x) { return sigmoid(x); })
      .def("relu", [](const Tensor& x) { return relu(x); })
      .def("abs", [](const Tensor& x) { return abs(x); })
      .def(
          "softmax", [](const Tensor& x, int64_t axis) { return softmax(x, axis); }, py::arg("axis") = -1)
      .def(
          "log_softmax", [](const Tensor& x, int64_t axis) { return log_softmax(x, axis); }, py::arg("axis") = -1)
      .def(
          "matmul", [](const Tensor& x, const Tensor& y) { return matmul(x, y); }, release_gil());
}

void bind_views(py::class_<Tensor>& c) {
  c.def(
       "reshape", [](const Tensor& x, const py::args& shape) { return x.reshape(sizes_of(shape)); },
       "reshape(2, 3) or reshape((2, 3)): a view when the strides allow it, else a copy; one size may be -1")
      .def("permute",
           [](const Tensor& x, const py::args& order) {
             const Shape axes = sizes_of(order);
             return x.permute({axes.begin(), axes.end()});
           })
      .def("transpose", by_reference(&Tensor::transpose), py::arg("axis0"), py::arg("axis1"))
      .def("movedim", by_reference(&Tensor::movedim), py::arg("source"), py::arg("destination"))
      .def("slice", by_reference(&Tensor::slice), py::arg("axis"), py::arg("start"), py::arg("stop"),
           py::arg("step") = 1)
      .def("narrow", by_reference(&Tensor::narrow), py::arg("axis"), py::arg("start"), py::arg("length"))
      .def("select", by_reference(&Tensor::select), py::arg("axis"), py::arg("index"))
      .def("expand", [](const Tensor& x, const py::args& shape) { return x.expand(sizes_of(shape)); })
      .def("squeeze", by_reference(&Tensor::squeeze), py::arg("axis"))
      .def("unsqueeze", by_reference(&Tensor::unsqueeze), py::arg("axis"))
      .def("flatten", by_reference(&Tensor::flatten))
      .def("contiguous", by_reference(&Tensor::contiguous))
      .def("to", by_reference(py::overload_cast<Dtype>(&Tensor::to, py::const_)), py::arg("dtype"), release_gil())
      .def("to", by_reference(py::overload_cast<Device>(&Tensor::to, py::const_)), py::arg("device"), release_gil(),
           "to(axiom.float64) or to(\"cuda\"): a copy in that dtype or on that device (the tensor itself when it "
           "already is)")
      .def("float", [](const Tensor& x) { return x.to(Dtype::float32); })
      .def("double", [](const Tensor& x) { return x.to(Dtype::float64); })
      .def("long", [](const Tensor& x) { return x.to(Dtype::int64); })
      .def("cpu", [](const Tensor& x) { return x.to(Device::cpu()); })
      .def(
          "clone", [](const Tensor& x) { return add(x, zeros_like(x)); }, "a copy with its own memory (differentiable)")
      .def("__getitem__", &index)
      .def("__setitem__", &assign);
}

void bind_gradients(py::class_<Tensor>& c) {
  c.def_property(
       "requires_grad", by_reference(&Tensor::requires_grad),
       [](Tensor& x, bool wanted) { x.set_requires_grad(wanted); },
       "whether backward() computes this tensor's gradient (leaves only)")
      .def(
          "requires_grad_", [](Tensor& x, bool wanted) { return x.set_requires_grad(wanted); },
          py::arg("requires_grad") = true)
      .def_property_readonly(
          "grad",
          [](const Tensor& x) -> std::optional<Tensor> {
            const Tensor g = [&] {
              const GraphLock locked;  // another thread's backward may be writing it
              return x.grad();
            }();
            return g.defined() ? std::optional<Tensor>(g) : std::nullopt;
          },
          "the gradient summed over every backward() so far, or None")
      .def_property_readonly("is_leaf", by_reference(&Tensor::is_leaf))
      .def_property_readonly(
          "grad_fn", [](const Tensor& x) { return x.grad_fn(); },
          "the Node of the op that made this tensor (.name(), .next_functions), or None for a leaf")
      .def("zero_grad", by_reference(&Tensor::zero_grad), graph_lock())
      .def("detach", by_reference(&Tensor::detach))
      .def(
          "backward",
          [](const Tensor& x, const std::optional<Tensor>& gradient, bool retain_graph, bool create_graph) {
            x.backward(gradient.value_or(Tensor()), {.retain_graph = retain_graph, .create_graph = create_graph});
          },
          py::arg("gradient") = py::none(), py::arg("retain_graph") = false, py::arg("create_graph") = false,
          graph_lock(),
          "Adds d(this)/d(leaf) to every leaf's .grad. With no gradient the tensor must hold one element.");
}

}  // namespace

namespace {

// A leaf's end of the graph, as PyTorch's AccumulateGrad: where a gradient is added to .grad.
struct AccumulateGrad {
  Tensor variable;
};

// The graph from Python, as PyTorch shows it: a Node's name() and, per input, (the Node that made
// it, or the leaf's AccumulateGrad, or None for an input that wants no gradient; 0).
void bind_graph_nodes(py::module_& m) {
  py::class_<AccumulateGrad>(m, "AccumulateGrad", "where a leaf's gradient is added to its .grad")
      .def_readonly("variable", &AccumulateGrad::variable, "the leaf")
      .def("name", [](const AccumulateGrad&) { return "AccumulateGrad"; })
      .def("__repr__", [](const AccumulateGrad&) { return std::string("<axiom.AccumulateGrad>"); });
  py::class_<Node, std::shared_ptr<Node>>(m, "Node", "a recorded op of the graph: what Tensor.grad_fn holds")
      .def(
          "name", [](const Node& node) { return std::string(node.name); }, "the op's name (a custom op's own)")
      .def_property_readonly(
          "next_functions",
          [](const Node& node) {
            py::list next;
            for (const Edge& input : node.inputs) {
              py::object fn = py::none();
              if (input.node) fn = py::cast(input.node);
              if (input.leaf) fn = py::cast(AccumulateGrad{Tensor(input.leaf)});
              next.append(py::make_tuple(fn, 0));
            }
            return py::tuple(next);
          },
          "per input: (its Node, an AccumulateGrad for a leaf, or None; 0); empty once the graph is freed")
      .def("__repr__", [](const Node& node) { return "<axiom.Node " + std::string(node.name) + ">"; });
}

}  // namespace

void bind_tensor(py::module_& m) {
  bind_graph_nodes(m);
  py::enum_<Dtype>(m, "dtype", "The element types: float32, float64, int64, uint8.")
      .value("float32", Dtype::float32)
      .value("float64", Dtype::float64)
      .value("int64", Dtype::int64)
      .value("uint8", Dtype::uint8)
      .export_values();
  py::class_<Device>(m, "device", "Where a tensor lives: \"cpu\", \"cuda\", \"cuda:N\" or \"meta\".")
      .def(py::init(&Device::parse), py::arg("name"))
      .def("__str__", by_reference(&Device::str))
      .def("__repr__", [](const Device& d) { return "device('" + d.str() + "')"; })
      .def("__eq__", [](const Device& a, const Device& b) { return a == b; })
      .def("__hash__", [](const Device& d) { return std::hash<std::string>()(d.str()); })
      .def_property_readonly("type", [](const Device& d) { return d.str().substr(0, d.str().find(':')); });

  py::class_<Tensor> c(m, "Tensor", py::buffer_protocol(),
                       "axiom's one value type: numbers, a dtype, a device, and a gradient when asked");
  install_buffer_protocol(c);
  // NumPy's operators defer to the tensor's (np.float64(2) * t is t.__rmul__, a Tensor with its graph)
  c.attr("__array_ufunc__") = py::none();
  c.def_property_readonly("shape", [](const Tensor& x) { return as_tuple(x.shape()); })
      .def_property_readonly("dtype", by_reference(&Tensor::dtype))
      .def_property_readonly("device", by_reference(&Tensor::device))
      .def_property_readonly("ndim", by_reference(&Tensor::dim))
      .def("dim", by_reference(&Tensor::dim))
      .def("numel", by_reference(&Tensor::numel))
      .def(
          "size",
          [](const Tensor& x, std::optional<int64_t> axis) -> py::object {
            return axis ? py::object(py::int_(x.size(*axis))) : py::object(as_tuple(x.shape()));
          },
          py::arg("axis") = py::none())
      .def(
          "stride", [](const Tensor& x) { return as_tuple(x.strides()); }, "the strides, in elements")
      .def("is_contiguous", [](const Tensor& x) { return x.is_contiguous(); })
      .def("item", &item_of, "the one element: an int for integer tensors, else a float")
      .def("tolist",
           [](const py::object& self) { return as_numpy(self.attr("detach")().attr("cpu")()).attr("tolist")(); })
      .def("numpy", &as_numpy, "A NumPy array over this tensor's memory (CPU tensors that do not require a gradient)")
      .def(
          "__array__",
          [](const py::object& self, const py::object& dtype) {
            py::object array = as_numpy(self);
            return dtype.is_none() ? array : array.attr("astype")(dtype);
          },
          py::arg("dtype") = py::none())
      .def("__repr__", &repr);
  bind_operators(c);
  bind_math_methods(c);
  bind_views(c);
  bind_gradients(c);
}

}  // namespace axiom::python
