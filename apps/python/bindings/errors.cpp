// axiom::Error as Python exceptions. Every message keeps its form, "[op] what was wrong, with the
// values"; the type says what kind of mistake it was, so that Python code can catch it the way it
// catches NumPy's or PyTorch's:
//
//   axiom.Error            RuntimeError  the base of all four (files, devices, a graph already freed)
//   axiom.DtypeError       TypeError     a dtype the op does not take      ("dtype", "must be int64", "got float32")
//   axiom.IndexError       IndexError    an index or range outside an axis ("out of range")
//   axiom.ShapeError       ValueError    a shape, size or value the op cannot use ("shape", "must", "got",
//                                        "unknown": a preset, dataset, device or config key)
//
// The kind is read from the message (one library-wide exception type in C++), in that order:
// a message that names both a dtype and a shape is a DtypeError. A graph's state (freed by an
// earlier backward, changed in place, not differentiable again) is an axiom.Error, as PyTorch's
// RuntimeError. C++'s options in a message are spelt as Python's ({.retain_graph = true} is
// retain_graph=True).
#include <regex>
#include <string>

#include "apps/python/bindings/bindings.h"

namespace axiom::python {

namespace {

enum class Kind { dtype, index, value, runtime };

Kind kind_of(const std::string& message) {
  // the state of a graph, as PyTorch's RuntimeError: freed, changed in place, not differentiable again
  static const std::regex graph_words(
      R"(freed by an earlier backward|modified after the forward pass|once_differentiable|calls the op itself)");
  if (std::regex_search(message, graph_words)) return Kind::runtime;
  // a dtype named after "is", "must be" or "got", unless a shape follows it ("is float32 [2, 3]")
  static const std::regex dtype_words(
      R"(dtype|\b(is|must be|got|not) (uint8 or int64|float32|float64|int64|uint8)\b(?! \[))");
  static const std::regex index_words(R"(out of range|\bindex\b.*\b(outside|past|beyond)\b|not a class in)");
  static const std::regex value_words(
      R"(shape|must|\bgot\b|expected|cannot|size|negative|at least|at most|\bunknown\b|twice)");
  if (std::regex_search(message, dtype_words)) return Kind::dtype;
  if (std::regex_search(message, index_words)) return Kind::index;
  if (std::regex_search(message, value_words)) return Kind::value;
  return Kind::runtime;
}

// The message in Python's spelling: C++'s option "{.retain_graph = true}" is retain_graph=True.
std::string python_spelling(const std::string& message) {
  static const std::regex option(R"(\{\.(\w+) = true\})");
  return std::regex_replace(message, option, "$1=True");
}

// A new exception class axiom.<name> deriving from every class in `bases`.
PyObject* new_exception(py::module_& m, const char* name, py::tuple bases, const char* doc) {
  const std::string qualified = std::string("axiom.") + name;
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases.ptr(), nullptr);
  if (!type) throw py::error_already_set();
  m.add_object(name, py::handle(type));
  return type;
}

}  // namespace

void bind_errors(py::module_& m) {
  static PyObject* base =
      new_exception(m, "Error", py::make_tuple(py::handle(PyExc_RuntimeError)),
                    "An error axiom found: the message names the op and the values it could not use.");
  static PyObject* dtype_error = new_exception(
      m, "DtypeError", py::make_tuple(py::handle(base), py::handle(PyExc_TypeError)), "A dtype the op does not take.");
  static PyObject* index_error =
      new_exception(m, "IndexError", py::make_tuple(py::handle(base), py::handle(PyExc_IndexError)),
                    "An index or a range outside an axis.");
  static PyObject* shape_error =
      new_exception(m, "ShapeError", py::make_tuple(py::handle(base), py::handle(PyExc_ValueError)),
                    "A shape, size or value the op cannot use.");
  py::register_exception_translator([](std::exception_ptr thrown) {
    try {
      if (thrown) std::rethrow_exception(thrown);
    } catch (const Error& error) {
      const std::string message = python_spelling(error.what());
      PyObject* types[] = {dtype_error, index_error, shape_error, base};  // in Kind's order
      // Every byte of the message kept: bytes that are not UTF-8 (a file's own) as \xNN escapes.
      const py::object text = py::reinterpret_steal<py::object>(
          PyUnicode_DecodeUTF8(message.data(), static_cast<Py_ssize_t>(message.size()), "backslashreplace"));
      PyErr_SetObject(types[static_cast<int>(kind_of(message))], text.ptr());
    }
  });
}

}  // namespace axiom::python
