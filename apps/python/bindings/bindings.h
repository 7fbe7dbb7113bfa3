// The pieces of the Python module axiom._axiom, one file a part: each bind_* adds its classes and
// functions to the module (or to a submodule) that module.cpp hands it.
//
// Conventions that every file follows:
//   - Python sees one value type, axiom.Tensor (axiom::Tensor); shapes are tuples or lists of ints,
//     dtypes are axiom.float32, float64, int64, uint8, devices are strings ("cpu", "cuda", "cuda:1").
//   - Work that can take long (a matrix product, attention, a backward pass, a training step)
//     releases the GIL (`release_gil`); callbacks into Python take it back (pybind11 does that
//     when it calls a Python function from C++).
//   - Every axiom::Error becomes a Python exception with the same message (errors.cpp).
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "axiom.h"

// A device passed as a string ("cpu", "cuda:1") is parsed where it is passed, so that a misspelt
// one ("tpu") is axiom's ShapeError naming it (Device::parse), not pybind11's "incompatible
// function arguments". Every file sees this caster (it must: one caster per type in the module).
namespace pybind11::detail {
template <>
struct type_caster<axiom::Device> : type_caster_base<axiom::Device> {
  bool load(handle source, bool convert) {
    if (!isinstance<str>(source)) return type_caster_base<axiom::Device>::load(source, convert);
    parsed_ = axiom::Device::parse(source.cast<std::string>());
    value = &parsed_;
    return true;
  }

 private:
  axiom::Device parsed_;
};

// Shapes and strides (Boost's small_vector, core/shape.h) cross as lists of ints, as
// std::vector<int64_t> does.
template <typename T, size_t N>
struct type_caster<boost::container::small_vector<T, N>> : list_caster<boost::container::small_vector<T, N>, T> {};
}  // namespace pybind11::detail

namespace axiom::python {

namespace py = pybind11;

// For .def(...): the call runs without the GIL, so other Python threads go on meanwhile.
using release_gil = py::call_guard<py::gil_scoped_release>;

// Autograd's graphs and the leaves' gradients are not for two threads at once: two backward passes
// through one graph, or into one leaf's .grad, would race. A call that walks a graph or writes
// gradients or parameters (backward, grad and the functional derivatives, optimizer steps,
// zero_grad, Module.to and load) holds this lock, one process-wide recursive mutex, taken after
// the GIL is released. Python code such a call runs (gradcheck's function) takes the GIL while
// holding the lock; no thread waits for the lock while holding the GIL: one order, no deadlock.
class GraphLock {
 public:
  GraphLock();
  ~GraphLock();
  GraphLock(const GraphLock&) = delete;
  GraphLock& operator=(const GraphLock&) = delete;

 private:
  py::gil_scoped_release released_;
};
using graph_lock = py::call_guard<GraphLock>;

void bind_errors(py::module_& m);
void bind_tensor(py::module_& m);
void bind_numpy(py::module_& m);
void bind_ops(py::module_& m);
void bind_autograd(py::module_& m);
void bind_nn(py::module_& nn);
void bind_optim(py::module_& optim);
void bind_models(py::module_& models);
void bind_data(py::module_& data);

// A member function as a function of a reference to its object, for .def(): bound directly,
// pybind11 would take None for a null `this` (MyClass.method(None) would crash the interpreter).
template <typename R, typename C, typename... A>
auto by_reference(R (C::*method)(A...) const) {
  return [method](const C& self, A... args) -> R { return (self.*method)(std::forward<A>(args)...); };
}
template <typename R, typename C, typename... A>
auto by_reference(R (C::*method)(A...)) {
  return [method](C& self, A... args) -> R { return (self.*method)(std::forward<A>(args)...); };
}

// A file's path from Python: a ValueError naming `op` if it holds a NUL byte (C++ would cut the
// path there, and read or write another file).
inline const std::string& checked_path(const std::string& path, const char* op) {
  if (path.find('\0') != std::string::npos)
    throw py::value_error(std::string("[") + op + "] a path may not hold a NUL byte");
  return path;
}

// `value` cast to T, or a TypeError that says what `what` must be (not pybind11's "Unable to cast").
template <typename T>
T cast_or_type_error(const py::handle& value, const char* what) {
  try {
    return value.cast<T>();
  } catch (const py::cast_error&) {
    throw py::type_error(std::string(what) + ", got " + std::string(py::repr(value)));
  }
}

// A `generator=None` argument: the given generator, or the process-wide default one.
inline Generator& generator_or_default(Generator* gen) { return gen ? *gen : default_generator(); }

// A Python value as a Tensor: a Tensor itself, or anything NumPy turns into an array (a number, a
// list, an array), copied, with `like`'s dtype and device when given (the other operand of `x + 2`).
Tensor as_tensor(const py::handle& value, const Tensor* like = nullptr);

// An axis argument: None (every axis), an int, or a sequence of ints.
std::vector<int64_t> axes_of(const py::object& axis);

// dst[...] = src[...] (tensor.cpp), reading src whole first when the two may share memory.
void copy_without_overlap(const Tensor& src, const Tensor& dst);

// A shape from Python: a tuple or list of ints, each >= 0 (else a ValueError naming `op`).
Shape shape_of(const py::handle& value, const char* op);

}  // namespace axiom::python
