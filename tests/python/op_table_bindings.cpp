// axiom._axiom._op_table(): the op table of the C++ suites (tests/autograd/op_table.h) in Python, so
// that test_ops_vs_torch.py compares every one of its cases with PyTorch instead of listing the ops
// again. tests/python/CMakeLists.txt compiles this file into the Python module when the Python
// suites are built; it is not part of axiom's Python interface.
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "tests/autograd/op_table.h"

namespace axiom::python {

namespace py = pybind11;

void bind_op_table(py::module_& m) {
  py::class_<test::OpCase>(m, "_OpCase", "one case of the op table: an op, its inputs, axiom's and PyTorch's spelling")
      .def_readonly("op", &test::OpCase::op, "the op of autograd/ops.h or the Tensor method it checks")
      .def_readonly("what", &test::OpCase::what, "what is particular about its inputs")
      .def_readonly("inputs", &test::OpCase::inputs, "float64 (and integer) tensors on the CPU")
      .def_readonly("pytorch", &test::OpCase::pytorch, "the same in PyTorch, over the inputs a, b, c, d, e")
      .def(
          "__call__", [](const test::OpCase& c, const std::vector<Tensor>& inputs) { return c.f(inputs); },
          py::arg("inputs"), "the op applied to `inputs` (the case's own, or the same moved or converted)")
      .def("__repr__", [](const test::OpCase& c) { return "<op table case " + c.op + ": " + c.what + ">"; });
  m.def("_op_table", &test::op_table, "every case of the C++ suites' op table (tests/autograd/op_table.h)");
}

}  // namespace axiom::python
