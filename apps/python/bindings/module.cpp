// The compiled part of the Python package axiom: axiom._axiom, with its submodules nn, optim,
// models and data. axiom/__init__.py re-exports it, with the few helpers written in Python.
#include "apps/python/bindings/bindings.h"

#ifdef AXIOM_PYTHON_OP_TABLE
namespace axiom::python {
void bind_op_table(pybind11::module_& m);  // tests/python/op_table_bindings.cpp: the C++ suites' op table
}
#endif

PYBIND11_MODULE(_axiom, m) {
  namespace python = axiom::python;
  m.doc() = "axiom: a readable deep-learning framework in C++, from Python";
  python::bind_errors(m);
  python::bind_tensor(m);
  python::bind_numpy(m);
  python::bind_ops(m);
  python::bind_autograd(m);
  pybind11::module_ nn = m.def_submodule("nn", "layers up to the Axial Transformer's blocks");
  python::bind_nn(nn);
  pybind11::module_ optim = m.def_submodule("optim", "SGD, Adam, AdamW, schedules and clipping");
  python::bind_optim(optim);
  pybind11::module_ models = m.def_submodule("models", "the image models, their samplers and the trainer");
  python::bind_models(models);
  pybind11::module_ data = m.def_submodule("data", "the datasets");
  python::bind_data(data);
  m.def(
      "cuda_is_available",
      [] {
        try {
          axiom::zeros({1}, axiom::Dtype::float32, axiom::Device::cuda());
          return true;
        } catch (const axiom::Error&) {
          return false;
        }
      },
      "whether axiom was built with CUDA and a GPU answers");
#ifdef AXIOM_PYTHON_OP_TABLE
  python::bind_op_table(m);
#endif
}
