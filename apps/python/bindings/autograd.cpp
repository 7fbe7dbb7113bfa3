// Gradients as values, checks of derivatives, and grad mode, as PyTorch's torch.autograd has them:
//
//   (dx,) = axiom.grad(y, [x], create_graph=True)     gradients returned, not added to .grad
//   axiom.hvp(f, (x,), (v,))                           f is called as f(*inputs), as in PyTorch
//   assert axiom.gradcheck(f, (x,))                    a result that is truthy when the check passed
//   with axiom.no_grad(): ...                          (axiom/__init__.py; the guards are here)
#include <pybind11/functional.h>

#include <mutex>

#include "apps/python/bindings/bindings.h"

namespace axiom::python {

namespace {
std::recursive_mutex graph_mutex;  // GraphLock's
}  // namespace

GraphLock::GraphLock() { graph_mutex.lock(); }  // released_ has let the GIL go first
GraphLock::~GraphLock() { graph_mutex.unlock(); }

namespace {

// One tensor or a sequence of them, as a list.
std::vector<Tensor> tensors_of(const py::object& value) {
  if (value.is_none()) return {};
  if (py::isinstance<Tensor>(value)) return {value.cast<Tensor>()};
  return cast_or_type_error<std::vector<Tensor>>(value, "expected a Tensor or a sequence of Tensors");
}

// A Python function of tensors, f(*inputs) -> Tensor, as the C++ function of a list of tensors.
// C++ copies and drops that function without the GIL, so it holds the Python function through a
// shared_ptr (copies touch no Python reference count) whose last owner takes the GIL to let it go.
TensorFunction as_function(const py::function& f) {
  std::shared_ptr<py::function> held(new py::function(f), [](py::function* function) {
    if (!Py_IsInitialized()) return;  // the interpreter has gone: nothing left to release
    py::gil_scoped_acquire gil;
    delete function;
  });
  return [held](const std::vector<Tensor>& inputs) {
    py::gil_scoped_acquire gil;
    py::tuple args(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) args[i] = inputs[i];
    const py::object result = (*held)(*args);
    if (!py::isinstance<Tensor>(result))
      throw py::type_error("the function must return an axiom.Tensor, got " + std::string(py::repr(result)));
    return result.cast<Tensor>();
  };
}

// A custom op's backward in Python, backward(ctx) -> a Tensor or a sequence of Tensors and Nones
// (None: no gradient), as the C++ CustomOp::Backward. The context is copied: Python may keep it.
struct PythonBackwardContext {
  std::vector<Tensor> inputs;
  Tensor output, grad_output;
  Needs needs;
};

Grads gradients_of(const py::object& result, const std::string& op) {
  if (py::isinstance<Tensor>(result)) return {result.cast<Tensor>()};
  if (!py::isinstance<py::sequence>(result) || py::isinstance<py::str>(result)) {
    throw py::type_error("custom op '" + op +
                         "': the backward must return a Tensor or a sequence of Tensors and Nones, got " +
                         std::string(py::repr(result)));
  }
  Grads grads;
  for (const py::handle item : result) {
    if (item.is_none()) {
      grads.emplace_back();
    } else if (py::isinstance<Tensor>(item)) {
      grads.push_back(item.cast<Tensor>());
    } else {
      throw py::type_error("custom op '" + op + "': the backward returned " + std::string(py::repr(item)) +
                           " where a Tensor or None belongs");
    }
  }
  return grads;
}

CustomOp::Backward as_backward(const py::function& backward, const std::string& op) {
  std::shared_ptr<py::function> held(new py::function(backward), [](py::function* function) {
    if (!Py_IsInitialized()) return;
    py::gil_scoped_acquire gil;
    delete function;
  });
  return [held, op](const BackwardContext& c) {
    py::gil_scoped_acquire gil;
    const py::object result = (*held)(PythonBackwardContext{c.inputs, c.output, c.grad_output, c.needs});
    return gradients_of(result, op);
  };
}

// A custom op's forward-mode rule in Python, jvp(inputs, tangents) -> Tensor (two lists of Tensors).
Jvp as_jvp(const py::object& jvp) {
  if (jvp.is_none()) return {};
  std::shared_ptr<py::object> held(new py::object(jvp), [](py::object* function) {
    if (!Py_IsInitialized()) return;
    py::gil_scoped_acquire gil;
    delete function;
  });
  return [held](const std::vector<Tensor>& inputs, const std::vector<Tensor>& tangents) {
    py::gil_scoped_acquire gil;
    const py::object result = (*held)(inputs, tangents);
    if (!py::isinstance<Tensor>(result))
      throw py::type_error("the jvp must return an axiom.Tensor, got " + std::string(py::repr(result)));
    return result.cast<Tensor>();
  };
}

void bind_custom_op(py::module_& m) {
  py::class_<PythonBackwardContext>(m, "BackwardContext", "what a custom op's backward is given")
      .def_readonly("inputs", &PythonBackwardContext::inputs, "the op's inputs, as its forward saw them")
      .def_readonly("output", &PythonBackwardContext::output, "the op's output")
      .def_readonly("grad_output", &PythonBackwardContext::grad_output, "dL/d(output), in the output's shape")
      .def_readonly("needs", &PythonBackwardContext::needs, "needs[i]: whether input i wants a gradient");
  py::class_<CustomOp>(m, "_CustomOp", "a custom op (autograd/custom_op.h); axiom.custom_op makes one")
      .def(py::init([](const std::string& name, const py::function& forward, const py::function& backward,
                       bool once_differentiable, const py::object& jvp) {
             return CustomOp(name, as_function(forward), as_backward(backward, name),
                             {.once_differentiable = once_differentiable, .jvp = as_jvp(jvp)});
           }),
           py::arg("name"), py::arg("forward"), py::arg("backward"), py::arg("once_differentiable") = false,
           py::arg("jvp") = py::none())
      .def_property_readonly("name", &CustomOp::name)
      .def("__call__", [](const CustomOp& op, const py::args& args) {
        std::vector<Tensor> inputs;
        for (const py::handle arg : args) {
          if (!py::isinstance<Tensor>(arg))
            throw py::type_error("custom op '" + op.name() + "' takes Tensors, got " + std::string(py::repr(arg)));
          inputs.push_back(arg.cast<Tensor>());
        }
        return op(inputs);
      });
}

py::object one_or_tuple(const std::vector<Tensor>& values, bool one) {
  if (one) return py::cast(values.at(0));
  return py::cast(values);
}

// A Python guard object for `with`: holds a NoGrad or an EnableGrad between __enter__ and __exit__.
template <typename Guard>
struct GradModeGuard {
  std::unique_ptr<Guard> active;
};

template <typename Guard>
void bind_guard(py::module_& m, const char* name, const char* doc) {
  py::class_<GradModeGuard<Guard>>(m, name, doc)
      .def(py::init<>())
      .def("__enter__", [](GradModeGuard<Guard>& g) { g.active = std::make_unique<Guard>(); })
      .def("__exit__", [](GradModeGuard<Guard>& g, const py::args&) { g.active.reset(); });
}

// `with axiom.NAME("text"):` holds a Guard("text") between __enter__ and __exit__ (one thread);
// `check`, if given, refuses a bad name when the object is made rather than when it is entered.
template <typename Guard>
struct NamedGuard {
  std::string name;
  std::unique_ptr<Guard> active;
};

template <typename Guard>
void bind_named_guard(py::module_& m, const char* python_name, const char* doc,
                      void (*check)(const std::string&) = nullptr) {
  py::class_<NamedGuard<Guard>>(m, python_name, doc)
      .def(py::init([check](const std::string& name) {
             if (check) check(name);
             return NamedGuard<Guard>{name, nullptr};
           }),
           py::arg("name"))
      .def("__enter__",
           [python_name](NamedGuard<Guard>& guard) {
             if (guard.active)
               throw py::value_error(std::string(python_name) + " '" + guard.name + "' is entered already");
             guard.active = std::make_unique<Guard>(guard.name);
           })
      .def("__exit__", [](NamedGuard<Guard>& guard, const py::args&) { guard.active.reset(); });
}

void bind_gradcheck(py::module_& m) {
  py::class_<GradcheckResult>(m, "GradcheckResult",
                              "What gradcheck found: truthy when it passed; .message says where it failed.")
      .def_readonly("ok", &GradcheckResult::ok)
      .def_readonly("message", &GradcheckResult::message)
      .def_readonly("worst_error", &GradcheckResult::worst_error)
      .def("__bool__", [](const GradcheckResult& r) { return r.ok; })
      .def("__repr__", [](const GradcheckResult& r) {
        // worst_error as Python's repr of a float: 4.1e-11, not std::to_string's 0.000000
        return r.ok ? "GradcheckResult(ok=True, worst_error=" + std::string(py::repr(py::float_(r.worst_error))) + ")"
                    : "GradcheckResult(ok=False, message=" + std::string(py::repr(py::str(r.message))) + ")";
      });
  const auto check = [](auto checker) {
    return [checker](const py::function& f, const py::object& inputs, double eps, double atol, double rtol,
                     bool full_jacobian, int projections, uint64_t seed) {
      const GradcheckOptions options{.eps = eps,
                                     .atol = atol,
                                     .rtol = rtol,
                                     .full_jacobian = full_jacobian,
                                     .projections = projections,
                                     .seed = seed};
      const std::vector<Tensor> values = tensors_of(inputs);
      const TensorFunction function = as_function(f);  // with the GIL: it holds a Python object
      const GraphLock locked;
      return checker(function, values, options);
    };
  };
  const char* gradcheck_doc =
      "Compares the gradients of f(*inputs) (float64 inputs; those that require a gradient) with central finite "
      "differences.";
  const char* gradgradcheck_doc =
      "Compares the second derivatives of f(*inputs) with finite differences of its first derivatives.";
  for (const auto& [name, checker, doc] : {std::tuple{"gradcheck", &gradcheck, gradcheck_doc},
                                           std::tuple{"gradgradcheck", &gradgradcheck, gradgradcheck_doc}}) {
    m.def(name, check(checker), py::arg("f"), py::arg("inputs"), py::arg("eps") = 1e-6, py::arg("atol") = 1e-5,
          py::arg("rtol") = 1e-3, py::arg("full_jacobian") = true, py::arg("projections") = 8, py::arg("seed") = 0,
          doc);
  }
}

void bind_functional(py::module_& m) {
  m.def(
      "vjp",
      [](const py::function& f, const py::object& inputs, const Tensor& v, bool create_graph) {
        const bool one = py::isinstance<Tensor>(inputs);
        const std::vector<Tensor> values = tensors_of(inputs);
        const TensorFunction function = as_function(f);
        VjpResult result;
        {
          const GraphLock locked;
          result = vjp(function, values, v, create_graph);
        }
        return py::make_tuple(result.output, one_or_tuple(result.grads, one));
      },
      py::arg("f"), py::arg("inputs"), py::arg("v"), py::arg("create_graph") = false, "(f(*inputs), v^T J)");
  m.def(
      "jvp",
      [](const py::function& f, const py::object& inputs, const py::object& tangents, bool create_graph) {
        const std::vector<Tensor> values = tensors_of(inputs), directions = tensors_of(tangents);
        const TensorFunction function = as_function(f);
        JvpResult result;
        {
          const GraphLock locked;
          result = jvp(function, values, directions, create_graph);
        }
        return py::make_tuple(result.output, result.tangent);
      },
      py::arg("f"), py::arg("inputs"), py::arg("tangents"), py::arg("create_graph") = false,
      "(f(*inputs), J u): forward mode");
  m.def(
      "hvp",
      [](const py::function& f, const py::object& inputs, const py::object& v) {
        const bool one = py::isinstance<Tensor>(inputs);
        const std::vector<Tensor> values = tensors_of(inputs), directions = tensors_of(v);
        const TensorFunction function = as_function(f);
        std::vector<Tensor> result;
        {
          const GraphLock locked;
          result = hvp(function, values, directions);
        }
        return one_or_tuple(result, one);
      },
      py::arg("f"), py::arg("inputs"), py::arg("v"), "H v for f with a one-element output");
  for (const auto& [name, derivative] : {std::pair{"jacobian", &jacobian}, std::pair{"hessian", &hessian}}) {
    m.def(
        name,
        [derivative](const py::function& f, const Tensor& x) {
          const TensorFunction g = as_function(f);
          const GraphLock locked;
          return derivative([g](const Tensor& input) { return g({input}); }, x);
        },
        py::arg("f"), py::arg("x"));
  }
  m.def(
      "grad",
      [](const py::object& outputs, const py::object& inputs, const py::object& grad_outputs, bool create_graph,
         bool retain_graph, bool allow_unused) {
        const bool one = py::isinstance<Tensor>(inputs);
        const std::vector<Tensor> outs = tensors_of(outputs), ins = tensors_of(inputs),
                                  gouts = tensors_of(grad_outputs);
        std::vector<Tensor> result;
        {
          const GraphLock locked;
          result = grad(outs, ins, gouts,
                        {.create_graph = create_graph, .retain_graph = retain_graph, .allow_unused = allow_unused});
        }
        py::list out;
        for (const Tensor& g : result) out.append(g.defined() ? py::cast(g) : py::none());
        return one ? out[0] : py::object(py::tuple(out));
      },
      py::arg("outputs"), py::arg("inputs"), py::arg("grad_outputs") = py::none(), py::arg("create_graph") = false,
      py::arg("retain_graph") = false, py::arg("allow_unused") = false,
      "The gradients of sum_k <outputs[k], grad_outputs[k]> with respect to `inputs`, returned (torch.autograd.grad).\n"
      "An input the outputs do not depend on gives None with allow_unused.");
}

}  // namespace

// Names for to_dot's leaves: a dict {name: Tensor} or pairs (a module's named_parameters()).
TensorNames names_of(const py::object& names) {
  TensorNames named;
  if (names.is_none()) return named;
  const py::object pairs = py::isinstance<py::dict>(names) ? names.attr("items")() : names;
  for (const py::handle pair : pairs) {
    const auto [name, tensor] =
        cast_or_type_error<std::pair<std::string, Tensor>>(pair, "names: expected (name, Tensor) pairs or a dict");
    named.emplace_back(name, tensor);
  }
  return named;
}

void bind_graph(py::module_& m) {
  m.def(
      "to_dot",
      [](const py::object& outputs, const py::object& names, int collapse) {
        return to_dot(tensors_of(outputs), names_of(names), {.collapse = collapse});
      },
      py::arg("outputs"), py::arg("names") = py::none(), py::arg("collapse") = 0,
      "The graph that made `outputs` (a Tensor or a list) as Graphviz's DOT text: a box per op, an ellipse per leaf "
      "that requires a gradient (named from `names`: a dict or (name, Tensor) pairs such as a module's "
      "named_parameters()), the ops of a backward pass recorded with create_graph filled orange; with collapse=N, "
      "one box per name_scope N deep. axiom.draw shows it.");
  bind_named_guard<NameScope>(m, "name_scope",
                              "with axiom.name_scope(\"block\"): the ops recorded inside carry the name (nested "
                              "scopes join by \"/\"), and axiom.to_dot(..., collapse=1) draws them as one box",
                              [](const std::string& name) { const NameScope checked(name); });
  m.def("current_name_scope", &current_name_scope, "the scopes around this point, joined by \"/\" (\"\": none)");
}

void bind_profiler(py::module_& m) {
  py::class_<ProfileRow>(m, "ProfileRow", "one row of a profile: the events of one name, kind and pass")
      .def_readonly("name", &ProfileRow::name)
      .def_readonly("kind", &ProfileRow::kind, "op, rule (a backward rule) or range")
      .def_readonly("pass_name", &ProfileRow::pass, "forward, backward, in backward, or '' for a range")
      .def_readonly("calls", &ProfileRow::calls)
      .def_readonly("seconds", &ProfileRow::seconds)
      .def_readonly("bytes", &ProfileRow::bytes, "-1: not known")
      .def_readonly("flops", &ProfileRow::flops, "-1: not known")
      .def("__repr__", [](const ProfileRow& r) {
        return "ProfileRow(" + r.name + ", " + r.kind + ", " + r.pass + ", calls=" + std::to_string(r.calls) + ")";
      });
  py::class_<Profile>(m, "Profile", "what a profiler recorded (autograd/profiler.h)")
      .def("table", &Profile::table, py::arg("max_rows") = 25, "one row per op and pass, the slowest first")
      .def("csv", &Profile::csv)
      .def("chrome_trace", &Profile::chrome_trace, "Trace Event Format JSON, for chrome://tracing or Perfetto")
      .def("rows", &Profile::rows)
      .def_property_readonly("wall_seconds", &Profile::wall_seconds);
  py::class_<Profiler>(m, "_Profiler", "records while it runs; axiom.profile() makes one")
      .def(py::init<>())
      .def("stop", &Profiler::stop);
  bind_named_guard<ProfileRange>(m, "profile_range", "with axiom.profile_range(\"data\"): one event of a profile");
}

void bind_autograd(py::module_& m) {
  bind_guard<NoGrad>(m, "_NoGrad", "While entered, ops record nothing (axiom.no_grad).");
  bind_guard<EnableGrad>(m, "_EnableGrad", "While entered, ops record again (axiom.enable_grad).");
  m.def("is_grad_enabled", &grad_enabled);
  bind_gradcheck(m);
  bind_functional(m);
  bind_custom_op(m);
  bind_graph(m);
  bind_profiler(m);
}

}  // namespace axiom::python
