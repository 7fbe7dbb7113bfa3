// axiom.optim: SGD, Adam and AdamW over a model's parameters, the learning-rate schedules and
// gradient clipping, with PyTorch's names:
//   opt = axiom.optim.Adam(model.named_parameters(), lr=1e-3)
//   opt.zero_grad(); loss.backward(); opt.step()
// Parameters are a list of tensors, a list of (name, tensor) pairs or a dict; unnamed ones are
// called "0", "1", ... in the saved state.
#include "apps/python/bindings/bindings.h"

namespace axiom::python {

namespace {

using optim::NamedParameters;
using optim::Optimizer;

constexpr const char* kParametersAre = "parameters are a list of Tensors, a list of (name, Tensor) pairs or a dict";

NamedParameters named(const py::object& parameters) {
  NamedParameters out;
  if (py::isinstance<py::dict>(parameters)) {
    for (const auto& [name, value] : parameters.cast<py::dict>()) {
      out.emplace_back(cast_or_type_error<std::string>(name, kParametersAre),
                       cast_or_type_error<Tensor>(value, kParametersAre));
    }
    return out;
  }
  if (py::isinstance<Tensor>(parameters) || !py::isinstance<py::iterable>(parameters))
    throw py::type_error(kParametersAre);
  for (const py::handle item : parameters) {
    if (py::isinstance<Tensor>(item)) {
      out.emplace_back(std::to_string(out.size()), item.cast<Tensor>());
    } else {
      out.push_back(cast_or_type_error<std::pair<std::string, Tensor>>(item, kParametersAre));
    }
  }
  return out;
}

std::pair<double, double> pair_of(const py::object& betas) {
  return cast_or_type_error<std::pair<double, double>>(betas, "betas are two numbers");
}

void bind_optimizers(py::module_& optim) {
  py::class_<Optimizer>(optim, "Optimizer",
                        "Updates parameters from their gradients: step(), zero_grad(), lr, save() and load().")
      .def("step", by_reference(&Optimizer::step), graph_lock(), "updates every parameter that has a gradient")
      .def("zero_grad", by_reference(&Optimizer::zero_grad), graph_lock())
      .def_property("lr", by_reference(&Optimizer::lr), by_reference(&Optimizer::set_lr))
      .def_property_readonly("name", by_reference(&Optimizer::name))
      .def(
          "save", [](const Optimizer& o, const std::string& path) { o.save(checked_path(path, "save")); },
          py::arg("path"), release_gil(), "the state (moments, step counts, hyperparameters) as safetensors")
      .def(
          "load", [](Optimizer& o, const std::string& path) { o.load(checked_path(path, "load")); }, py::arg("path"),
          graph_lock());
  py::class_<optim::SGD, Optimizer>(optim, "SGD",
                                    "stochastic gradient descent, with momentum, dampening, weight decay and Nesterov")
      .def(py::init([](const py::object& parameters, double lr, double momentum, double dampening, double weight_decay,
                       bool nesterov) {
             return std::make_unique<optim::SGD>(named(parameters), optim::SGDOptions{.lr = lr,
                                                                                      .momentum = momentum,
                                                                                      .dampening = dampening,
                                                                                      .weight_decay = weight_decay,
                                                                                      .nesterov = nesterov});
           }),
           py::arg("parameters"), py::arg("lr") = 1e-3, py::arg("momentum") = 0.0, py::arg("dampening") = 0.0,
           py::arg("weight_decay") = 0.0, py::arg("nesterov") = false);
  py::class_<optim::Adam, Optimizer>(optim, "Adam", "Adam (Kingma and Ba), with L2 weight decay")
      .def(py::init(
               [](const py::object& parameters, double lr, const py::object& betas, double eps, double weight_decay) {
                 return std::make_unique<optim::Adam>(
                     named(parameters),
                     optim::AdamOptions{.lr = lr, .betas = pair_of(betas), .eps = eps, .weight_decay = weight_decay});
               }),
           py::arg("parameters"), py::arg("lr") = 1e-3, py::arg("betas") = py::make_tuple(0.9, 0.999),
           py::arg("eps") = 1e-8, py::arg("weight_decay") = 0.0);
  py::class_<optim::AdamW, optim::Adam>(optim, "AdamW", "Adam with decoupled weight decay (Loshchilov and Hutter)")
      .def(py::init(
               [](const py::object& parameters, double lr, const py::object& betas, double eps, double weight_decay) {
                 return std::make_unique<optim::AdamW>(
                     named(parameters),
                     optim::AdamWOptions{.lr = lr, .betas = pair_of(betas), .eps = eps, .weight_decay = weight_decay});
               }),
           py::arg("parameters"), py::arg("lr") = 1e-3, py::arg("betas") = py::make_tuple(0.9, 0.999),
           py::arg("eps") = 1e-8, py::arg("weight_decay") = 1e-2);
  optim.def(
      "clip_grad_norm",
      [](const py::object& parameters, double max_norm) {
        const NamedParameters values = named(parameters);  // with the GIL: it reads Python objects
        const GraphLock locked;
        return optim::clip_grad_norm(values, max_norm);
      },
      py::arg("parameters"), py::arg("max_norm"),
      "scales the gradients to a global norm of at most max_norm; the norm before");
}

void bind_schedules(py::module_& optim) {
  using optim::Schedule;
  using optim::Warmup;
  py::class_<Schedule>(optim, "Schedule", "A learning rate as a function of the step (from 0), after a linear warmup.")
      .def_static(
          "constant", [](double lr, int64_t warmup) { return Schedule::constant(lr, Warmup{.steps = warmup}); },
          py::arg("lr"), py::arg("warmup") = 0)
      .def_static(
          "cosine",
          [](double lr, int64_t warmup, int64_t decay_steps, double min_lr) {
            return Schedule::cosine(lr, Warmup{.steps = warmup}, decay_steps, min_lr);
          },
          py::arg("lr"), py::arg("warmup"), py::arg("decay_steps"), py::arg("min_lr") = 0.0)
      .def_static(
          "linear",
          [](double lr, int64_t warmup, int64_t decay_steps, double min_lr) {
            return Schedule::linear(lr, Warmup{.steps = warmup}, decay_steps, min_lr);
          },
          py::arg("lr"), py::arg("warmup"), py::arg("decay_steps"), py::arg("min_lr") = 0.0)
      .def_static(
          "exponential",
          [](double lr, int64_t warmup, double gamma) {
            return Schedule::exponential(lr, Warmup{.steps = warmup}, gamma);
          },
          py::arg("lr"), py::arg("warmup"), py::arg("gamma"))
      .def_static(
          "inverse_sqrt", [](double lr, int64_t warmup) { return Schedule::inverse_sqrt(lr, Warmup{.steps = warmup}); },
          py::arg("lr"), py::arg("warmup"))
      .def("lr", by_reference(&Schedule::lr), py::arg("step"))
      .def("apply", by_reference(&Schedule::apply), py::arg("optimizer"), py::arg("step"),
           "sets the optimizer's lr to lr(step)");
}

}  // namespace

void bind_optim(py::module_& optim) {
  bind_optimizers(optim);
  bind_schedules(optim);
}

}  // namespace axiom::python
