// axiom.nn's C++ layers: Module (parameters, state_dict, safetensors save and load, train/eval,
// to) and the layers up to the Axial Transformer's blocks. Each layer is called like a function,
// layer(x), as in PyTorch. A layer made with a Generator keeps it alive (dropout draws from it).
// Layers written in Python derive from axiom.nn.Module (axiom/nn.py), which holds these as children.
#include "apps/python/bindings/bindings.h"

namespace axiom::python {

namespace {

using nn::Module;

py::dict state_dict(const Module& module) {
  py::dict out;
  for (const auto& [name, value] : module.state()) out[py::str(name)] = value;
  return out;
}

void load_state_dict(Module& module, const py::dict& state) {
  nn::StateDict values;
  for (const auto& [name, value] : state)
    values.emplace_back(cast_or_type_error<std::string>(name, "a state's names are strings"), as_tensor(value));
  const GraphLock locked;
  module.load_state(values);
}

void bind_module(py::module_& nn) {
  py::class_<Module, std::shared_ptr<Module>>(nn, "CppModule",
                                              "A layer written in C++: its parameters, state and modes.")
      .def("parameters", by_reference(&Module::parameters))
      .def("named_parameters", by_reference(&Module::named_parameters))
      .def("parameter_count", by_reference(&Module::parameter_count), "the number of scalars in every parameter")
      .def(
          "train",
          [](Module& m, bool on) {
            m.train(on);
            return &m;
          },
          py::arg("mode") = true, py::return_value_policy::reference)
      .def(
          "eval",
          [](Module& m) {
            m.eval();
            return &m;
          },
          py::return_value_policy::reference)
      .def_property_readonly("training", by_reference(&Module::is_training))
      .def(
          "to",
          [](Module& m, const Device& device) {
            const GraphLock locked;
            m.to(device);
            return &m;
          },
          py::arg("device"), py::return_value_policy::reference,
          "moves every parameter to the device; the module itself")
      .def(
          "to",
          [](Module& m, Dtype dtype) {
            const GraphLock locked;
            m.to(dtype);
            return &m;
          },
          py::arg("dtype"), py::return_value_policy::reference,
          "converts every parameter to the dtype; the module itself")
      .def("zero_grad", by_reference(&Module::zero_grad), graph_lock())
      .def("state_dict", &state_dict, "{name: tensor}: the parameters by their dotted names")
      .def("load_state_dict", &load_state_dict, py::arg("state"),
           "copies the values in; every name and shape must match")
      .def(
          "save", [](const Module& m, const std::string& path) { m.save(checked_path(path, "save")); }, py::arg("path"),
          release_gil(), "writes the parameters to a safetensors file, atomically")
      .def(
          "load", [](Module& m, const std::string& path) { m.load(checked_path(path, "load")); }, py::arg("path"),
          graph_lock(), "reads parameters written by save()");
}

// A layer class whose forward takes one tensor: callable, with forward() too.
template <typename Layer>
py::class_<Layer, Module, std::shared_ptr<Layer>> layer(py::module_& nn, const char* name, const char* doc) {
  py::class_<Layer, Module, std::shared_ptr<Layer>> c(nn, name, doc);
  c.def("forward", by_reference(py::overload_cast<const Tensor&>(&Layer::forward, py::const_)), py::arg("x"),
        release_gil())
      .def("__call__", by_reference(py::overload_cast<const Tensor&>(&Layer::forward, py::const_)), py::arg("x"),
           release_gil());
  return c;
}

void bind_layers(py::module_& nn) {
  py::enum_<nn::DenseInit>(nn, "DenseInit")
      .value("uniform", nn::DenseInit::uniform)
      .value("normal", nn::DenseInit::normal);
  layer<nn::Dense>(nn, "Dense",
                   "y = x @ weight + bias over the last axis: [..., in] -> [..., out]; weight is [in, out]")
      .def(py::init([](int64_t in, int64_t out, Generator* gen, bool bias, double init_scale, nn::DenseInit init) {
             return std::make_shared<nn::Dense>(in, out, generator_or_default(gen),
                                                nn::DenseOptions{.bias = bias, .init_scale = init_scale, .init = init});
           }),
           py::arg("in_features"), py::arg("out_features"), py::arg("generator") = nullptr, py::arg("bias") = true,
           py::arg("init_scale") = 1.0, py::arg("init") = nn::DenseInit::uniform)
      .def_readonly("weight", &nn::Dense::weight)
      .def_property_readonly("bias",
                             [](const nn::Dense& d) { return d.bias.defined() ? py::cast(d.bias) : py::none(); });
  layer<nn::LayerNorm>(nn, "LayerNorm", "normalises the last axis, then * weight + bias")
      .def(py::init<int64_t, double>(), py::arg("features"), py::arg("eps") = 1e-5)
      .def_readonly("weight", &nn::LayerNorm::weight)
      .def_readonly("bias", &nn::LayerNorm::bias);
  layer<nn::Embedding>(nn, "Embedding", "a table of `count` vectors: int64 indices [...] -> [..., features]")
      .def(py::init([](int64_t count, int64_t features, Generator* gen, double init_std) {
             return std::make_shared<nn::Embedding>(count, features, generator_or_default(gen), init_std);
           }),
           py::arg("count"), py::arg("features"), py::arg("generator") = nullptr, py::arg("init_std") = 1.0)
      .def_readonly("weight", &nn::Embedding::weight);
  layer<nn::Dropout>(nn, "Dropout", "zeroes elements with probability p in training mode, scaling the rest by 1/(1-p)")
      .def(py::init(
               [](double p, Generator* gen) { return std::make_shared<nn::Dropout>(p, generator_or_default(gen)); }),
           py::arg("p"), py::arg("generator") = nullptr, py::keep_alive<1, 3>());
}

void bind_attention_layers(py::module_& nn) {
  py::class_<nn::LocalBlocks>(nn, "LocalBlocks", "local attention's query blocks: rows x columns (rows 0: not local)")
      .def(py::init([](int64_t rows, int64_t columns) {
             return nn::LocalBlocks{rows, columns};
           }),
           py::arg("rows") = 0, py::arg("columns") = 0)
      .def_readwrite("rows", &nn::LocalBlocks::rows)
      .def_readwrite("columns", &nn::LocalBlocks::columns);
  nn.def("local_mask", &nn::local_mask, py::arg("blocks"), py::arg("grid_rows"), py::arg("grid_columns"),
         "the AttentionMask of local attention over a grid in raster order");
  layer<nn::AxialAttention>(nn, "AxialAttention",
                            "multi-head attention along one spatial axis of x [B, d1, ..., dn, D]")
      .def(py::init([](int64_t features, int64_t heads, int64_t axis, Generator* gen, bool masked,
                       double output_init_scale, int64_t relative_distance, const nn::LocalBlocks& local) {
             return std::make_shared<nn::AxialAttention>(features, heads, axis, generator_or_default(gen),
                                                         nn::AttentionOptions{.masked = masked,
                                                                              .output_init_scale = output_init_scale,
                                                                              .relative_distance = relative_distance,
                                                                              .local = local});
           }),
           py::arg("features"), py::arg("heads"), py::arg("axis"), py::arg("generator") = nullptr,
           py::arg("masked") = false, py::arg("output_init_scale") = 1.0, py::arg("relative_distance") = 0,
           py::arg("local") = nn::LocalBlocks{})
      .def_readonly("qkv", &nn::AxialAttention::qkv)
      .def_readonly("out", &nn::AxialAttention::out)
      .def_readonly("heads", &nn::AxialAttention::heads)
      .def_readonly("axis", &nn::AxialAttention::axis)
      .def_readonly("masked", &nn::AxialAttention::masked);
  const auto block_options = [](int64_t heads, int64_t ff_multiple, bool masked, Activation nonlinearity,
                                double output_init_scale) {
    return nn::BlockOptions{.heads = heads,
                            .ff_multiple = ff_multiple,
                            .masked = masked,
                            .nonlinearity = nonlinearity,
                            .output_init_scale = output_init_scale};
  };
  layer<nn::TransformerBlock>(nn, "TransformerBlock",
                              "x + attention(LayerNorm(x)) then + feed-forward(LayerNorm(.)), along `axis`")
      .def(py::init([block_options](int64_t features, int64_t axis, Generator* gen, int64_t heads, int64_t ff_multiple,
                                    bool masked, Activation nonlinearity, double output_init_scale) {
             return std::make_shared<nn::TransformerBlock>(
                 features, axis, generator_or_default(gen),
                 block_options(heads, ff_multiple, masked, nonlinearity, output_init_scale));
           }),
           py::arg("features"), py::arg("axis"), py::arg("generator") = nullptr, py::arg("heads") = 4,
           py::arg("ff_multiple") = 4, py::arg("masked") = false, py::arg("nonlinearity") = Activation::gelu,
           py::arg("output_init_scale") = 1.0)
      .def_readonly("attention", &nn::TransformerBlock::attention)
      .def_readonly("feedforward", &nn::TransformerBlock::feedforward);
  layer<nn::AttentionBlock>(nn, "AttentionBlock", "x + AxialAttention(LayerNorm(x))")
      .def_readonly("norm", &nn::AttentionBlock::norm)
      .def_readonly("attention", &nn::AttentionBlock::attention);
  layer<nn::FeedforwardBlock>(nn, "FeedforwardBlock", "x + Dense(nonlinearity(Dense(LayerNorm(x))))")
      .def_readonly("norm", &nn::FeedforwardBlock::norm)
      .def_readonly("up", &nn::FeedforwardBlock::up)
      .def_readonly("down", &nn::FeedforwardBlock::down);
  layer<nn::FactorizedPositionEmbedding>(nn, "FactorizedPositionEmbedding",
                                         "x [B, d1, ..., dn, D] + one learned table per axis")
      .def(py::init([](const Shape& sizes, int64_t features, Generator* gen, double init_std) {
             return std::make_shared<nn::FactorizedPositionEmbedding>(sizes, features, generator_or_default(gen),
                                                                      init_std);
           }),
           py::arg("sizes"), py::arg("features"), py::arg("generator") = nullptr, py::arg("init_std") = 0.02);
}

void bind_recurrent(py::module_& nn) {
  py::class_<nn::GRU, Module, std::shared_ptr<nn::GRU>>(
      nn, "GRU", "a gated recurrent unit over x [B, T, in]: (outputs [B, T, H], last h [B, H])")
      .def(py::init([](int64_t in, int64_t hidden, Generator* gen) {
             return std::make_shared<nn::GRU>(in, hidden, generator_or_default(gen));
           }),
           py::arg("input_features"), py::arg("hidden_features"), py::arg("generator") = nullptr)
      .def(
          "__call__",
          [](const nn::GRU& gru, const Tensor& x, const std::optional<Tensor>& h) {
            return gru.forward(x, h.value_or(Tensor()));
          },
          py::arg("x"), py::arg("h") = py::none(), release_gil());
}

}  // namespace

void bind_nn(py::module_& nn) {
  bind_module(nn);
  bind_layers(nn);
  bind_attention_layers(nn);
  bind_recurrent(nn);
}

}  // namespace axiom::python
