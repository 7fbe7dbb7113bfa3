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

namespace axiom::python {

namespace py = pybind11;

// For .def(...): the call runs without the GIL, so other Python threads go on meanwhile.
using release_gil = py::call_guard<py::gil_scoped_release>;

void bind_errors(py::module_& m);
void bind_tensor(py::module_& m);
void bind_numpy(py::module_& m);
void bind_ops(py::module_& m);
void bind_autograd(py::module_& m);
void bind_nn(py::module_& nn);
void bind_optim(py::module_& optim);
void bind_models(py::module_& models);
void bind_data(py::module_& data);

// A Python value as a Tensor: a Tensor itself, or anything NumPy turns into an array (a number, a
// list, an array), copied, with `like`'s dtype and device when given (the other operand of `x + 2`).
Tensor as_tensor(const py::handle& value, const Tensor* like = nullptr);

// An axis argument: None (every axis), an int, or a sequence of ints.
std::vector<int64_t> axes_of(const py::object& axis);

// A shape from Python: a tuple or list of ints, each >= 0 (else a ValueError naming `op`).
Shape shape_of(const py::handle& value, const char* op);

}  // namespace axiom::python
