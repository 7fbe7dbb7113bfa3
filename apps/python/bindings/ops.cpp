// The ops of autograd/ops.h as module functions (axiom.add, axiom.softmax, ...), with the C++
// names and arguments; numbers may stand in for tensors where an op takes two (axiom.add(x, 1)).
// Also the factories (zeros, ones, full, arange, rand, randn, ...), the generators, and the
// process's matrix-product precision.
#include "apps/python/bindings/bindings.h"
#include "core/matmul_precision.h"

namespace axiom::python {

namespace {

// The two operands of a binary op: tensors, or a number beside a tensor (in its dtype and device).
std::pair<Tensor, Tensor> operands(const py::object& a, const py::object& b) {
  if (py::isinstance<Tensor>(a)) {
    const Tensor x = a.cast<Tensor>();
    return {x, as_tensor(b, &x)};
  }
  const Tensor y = as_tensor(b);
  return {as_tensor(a, &y), y};
}

Tensor optional(const std::optional<Tensor>& value) { return value.value_or(Tensor()); }

template <Tensor (*Op)(const Tensor&, const Tensor&)>
void def_binary(py::module_& m, const char* name, const char* doc) {
  m.def(
      name,
      [](const py::object& a, const py::object& b) {
        const auto [x, y] = operands(a, b);
        return Op(x, y);
      },
      py::arg("a"), py::arg("b"), doc);
}

template <Tensor (*Op)(const Tensor&)>
void def_unary(py::module_& m, const char* name, const char* doc) {
  m.def(name, Op, py::arg("x"), doc);
}

void bind_elementwise(py::module_& m) {
  def_binary<add>(m, "add", "a + b, broadcast");
  def_binary<sub>(m, "sub", "a - b, broadcast");
  def_binary<mul>(m, "mul", "a * b, broadcast");
  def_binary<div>(m, "div", "a / b, broadcast");
  def_binary<pow>(m, "pow", "a ** b, broadcast");
  def_binary<maximum>(m, "maximum", "the larger of a and b (ties split the gradient evenly)");
  def_binary<minimum>(m, "minimum", "the smaller of a and b (ties split the gradient evenly)");
  def_binary<eq>(m, "eq", "a == b as uint8 (no gradient)");
  def_binary<lt>(m, "lt", "a < b as uint8 (no gradient)");
  def_binary<gt>(m, "gt", "a > b as uint8 (no gradient)");
  def_unary<neg>(m, "neg", "-x");
  def_unary<abs>(m, "abs", "|x|");
  def_unary<exp>(m, "exp", "e^x");
  def_unary<log>(m, "log", "the natural logarithm");
  def_unary<sqrt>(m, "sqrt", "the square root");
  def_unary<rsqrt>(m, "rsqrt", "1 / sqrt(x)");
  def_unary<tanh>(m, "tanh", "tanh(x)");
  def_unary<sigmoid>(m, "sigmoid", "1 / (1 + e^-x)");
  def_unary<relu>(m, "relu", "max(x, 0)");
  def_unary<gelu>(m, "gelu", "x * Phi(x), the exact GELU");
  def_unary<gelu_tanh>(m, "gelu_tanh", "the GELU's tanh approximation");
  m.def(
      "where",
      [](const Tensor& cond, const py::object& a, const py::object& b) {
        const auto [x, y] = operands(a, b);
        return where(cond, x, y);
      },
      py::arg("condition"), py::arg("a"), py::arg("b"), "a where condition (uint8) is nonzero, else b");
  m.def("masked_fill", &masked_fill, py::arg("x"), py::arg("mask"), py::arg("value"),
        "x with `value` where mask (uint8) is nonzero");
  m.def(
      "dropout",
      [](const Tensor& x, double p, bool training, Generator* gen) {
        return dropout(x, p, training, generator_or_default(gen));
      },
      py::arg("x"), py::arg("p"), py::arg("training") = true, py::arg("generator") = nullptr,
      "zeroes each element with probability p and scales the rest by 1 / (1 - p); the identity when not training");
}

void bind_reductions(py::module_& m) {
  m.def(
      "sum", [](const Tensor& x, const py::object& axis, bool keepdim) { return sum(x, axes_of(axis), keepdim); },
      py::arg("x"), py::arg("axis") = py::none(), py::arg("keepdim") = false,
      "the sum over `axis` (an int, a list, or None: all)");
  m.def(
      "mean", [](const Tensor& x, const py::object& axis, bool keepdim) { return mean(x, axes_of(axis), keepdim); },
      py::arg("x"), py::arg("axis") = py::none(), py::arg("keepdim") = false);
  m.def(
      "var",
      [](const Tensor& x, const py::object& axis, bool keepdim, int64_t correction) {
        return var(x, axes_of(axis), keepdim, correction);
      },
      py::arg("x"), py::arg("axis") = py::none(), py::arg("keepdim") = false, py::arg("correction") = 1);
  m.def(
      "max", [](const Tensor& x, const py::object& axis, bool keepdim) { return max(x, axes_of(axis), keepdim); },
      py::arg("x"), py::arg("axis") = py::none(), py::arg("keepdim") = false, "ties share the gradient");
  m.def(
      "min", [](const Tensor& x, const py::object& axis, bool keepdim) { return min(x, axes_of(axis), keepdim); },
      py::arg("x"), py::arg("axis") = py::none(), py::arg("keepdim") = false, "ties share the gradient");
  m.def("argmax", &argmax, py::arg("x"), py::arg("axis"), py::arg("keepdim") = false,
        "int64, the first on ties; no gradient");
  m.def("categorical", &categorical, py::arg("logits"), py::arg("uniforms"), py::arg("temperature") = 1.0,
        "a value drawn from each row of logits [..., V] with probability softmax(logits / temperature), chosen by "
        "uniforms [...] in [0, 1) (the first value whose cumulative probability passes the row's uniform); int64, no "
        "gradient");
}

void bind_products(py::module_& m) {
  py::enum_<Activation>(m, "Activation", "The nonlinearities of a feed-forward layer.")
      .value("gelu", Activation::gelu)
      .value("gelu_tanh", Activation::gelu_tanh)
      .value("relu", Activation::relu);
  m.def("matmul", &matmul, py::arg("a"), py::arg("b"), release_gil(), "a @ b, batched and broadcast over leading axes");
  m.def(
      "linear",
      [](const Tensor& x, const Tensor& w, const std::optional<Tensor>& b) { return linear(x, w, optional(b)); },
      py::arg("x"), py::arg("weight"), py::arg("bias") = py::none(), release_gil(),
      "x [..., K] @ weight [K, N] + bias [N]");
  m.def("activate", &activate, py::arg("activation"), py::arg("x"));
  m.def(
      "activation_linear",
      [](Activation act, const Tensor& h, const Tensor& w, const std::optional<Tensor>& b) {
        return activation_linear(act, h, w, optional(b));
      },
      py::arg("activation"), py::arg("h"), py::arg("weight"), py::arg("bias") = py::none(), release_gil(),
      "linear(activate(activation, h), weight, bias), keeping only h for the backward pass");
}

void bind_shapes(py::module_& m) {
  m.def("concat", &concat, py::arg("tensors"), py::arg("axis") = 0);
  m.def("stack", &stack, py::arg("tensors"), py::arg("axis") = 0);
  m.def("pad", &pad, py::arg("x"), py::arg("axis"), py::arg("before"), py::arg("after"), py::arg("value") = 0.0);
  m.def("shift", &shift, py::arg("x"), py::arg("axis"), py::arg("amount"),
        "moves x along axis by amount, filling with zeros");
  m.def("gather", &gather, py::arg("x"), py::arg("axis"), py::arg("index"));
  m.def("index_select", &index_select, py::arg("x"), py::arg("axis"), py::arg("index"));
  m.def("embedding", &embedding, py::arg("weight"), py::arg("indices"), "weight [V, D] at indices [...] -> [..., D]");
  m.def("copy_into", &copy_without_overlap, py::arg("src"), py::arg("dst"),
        "dst[...] = src[...], outside autograd (src read whole first when they overlap)");
}

void bind_attention(py::module_& m) {
  py::class_<AttentionMask>(m, "AttentionMask",
                            "Which keys each query sees: all(), causal(), or a block pattern (nn.local_mask).")
      .def_static("all", &AttentionMask::all)
      .def_static("causal", &AttentionMask::causal)
      .def("table", by_reference(&AttentionMask::table), py::arg("length"), "[L * L] flags, 1 where query i sees key j")
      .def("__repr__", [](const AttentionMask& mask) {
        const char* kinds[] = {"all", "causal", "blocks"};
        return std::string("AttentionMask.") + kinds[static_cast<int>(mask.kind())] + "()";
      });
  m.def(
      "attention",
      [](const Tensor& qkv, int64_t axis, int64_t heads, const AttentionMask& mask, const std::optional<Tensor>& bias) {
        return attention(qkv, axis, heads, mask, optional(bias));
      },
      py::arg("qkv"), py::arg("axis"), py::arg("heads"), py::arg("mask") = AttentionMask::all(),
      py::arg("bias") = py::none(), release_gil(),
      "multi-head self-attention along `axis` from packed projections qkv [..., 3D] -> [..., D]");
  m.def("attention_queries", &attention_queries, py::arg("qkv"), py::arg("axis"), py::arg("heads"));
  m.def("softmax", &softmax, py::arg("x"), py::arg("axis") = -1);
  m.def("log_softmax", &log_softmax, py::arg("x"), py::arg("axis") = -1);
  m.def(
      "layer_norm",
      [](const Tensor& x, const std::optional<Tensor>& w, const std::optional<Tensor>& b, double eps) {
        return layer_norm(x, optional(w), optional(b), eps);
      },
      py::arg("x"), py::arg("weight") = py::none(), py::arg("bias") = py::none(), py::arg("eps") = 1e-5,
      "over the last axis");
  m.def(
      "layer_norm_linear",
      [](const Tensor& x, const std::optional<Tensor>& nw, const std::optional<Tensor>& nb, double eps, const Tensor& w,
         const std::optional<Tensor>& b) {
        return layer_norm_linear(x, optional(nw), optional(nb), eps, w, optional(b));
      },
      py::arg("x"), py::arg("norm_weight"), py::arg("norm_bias"), py::arg("eps"), py::arg("weight"),
      py::arg("bias") = py::none(), release_gil());
  m.def(
      "layer_norm_attention",
      [](const Tensor& x, const std::optional<Tensor>& nw, const std::optional<Tensor>& nb, double eps, const Tensor& w,
         const std::optional<Tensor>& b, int64_t axis, int64_t heads, const AttentionMask& mask) {
        return layer_norm_attention(x, optional(nw), optional(nb), eps, w, optional(b), axis, heads, mask);
      },
      py::arg("x"), py::arg("norm_weight"), py::arg("norm_bias"), py::arg("eps"), py::arg("weight"), py::arg("bias"),
      py::arg("axis"), py::arg("heads"), py::arg("mask") = AttentionMask::all(), release_gil(),
      "attention(layer_norm_linear(x, ...), axis, heads, mask) -> [..., D]; under bfloat16 products one op that "
      "keeps qkv in bfloat16");
  m.def(
      "layer_norm_feedforward",
      [](const Tensor& x, const std::optional<Tensor>& nw, const std::optional<Tensor>& nb, double eps,
         const Tensor& up_w, const std::optional<Tensor>& up_b, Activation activation, const Tensor& down_w,
         const std::optional<Tensor>& down_b) {
        return layer_norm_feedforward(x, optional(nw), optional(nb), eps, up_w, optional(up_b), activation, down_w,
                                      optional(down_b));
      },
      py::arg("x"), py::arg("norm_weight"), py::arg("norm_bias"), py::arg("eps"), py::arg("up_weight"),
      py::arg("up_bias"), py::arg("activation"), py::arg("down_weight"), py::arg("down_bias") = py::none(),
      release_gil(),
      "activation_linear(activation, layer_norm_linear(x, ...), down_weight, down_bias) -> [..., N]; under "
      "bfloat16 products one op that keeps h in bfloat16");
  m.def(
      "cross_entropy",
      [](const Tensor& logits, const Tensor& targets, double label_smoothing, const std::string& reduction) {
        static const std::map<std::string, Reduction> reductions = {
            {"mean", Reduction::mean}, {"sum", Reduction::sum}, {"none", Reduction::none}};
        const auto found = reductions.find(reduction);
        if (found == reductions.end())
          throw py::value_error("[cross_entropy] reduction must be \"mean\", \"sum\" or \"none\", got \"" + reduction +
                                "\"");
        return cross_entropy(logits, targets, {.label_smoothing = label_smoothing, .reduction = found->second});
      },
      py::arg("logits"), py::arg("targets"), py::arg("label_smoothing") = 0.0, py::arg("reduction") = "mean",
      "softmax cross-entropy of logits [..., C] against int64 targets [...], in nats");
}

void bind_factories(py::module_& m) {
  py::class_<Generator>(m, "Generator",
                        "A counter-based random generator (Philox): the same seed, the same numbers, on every device.")
      .def(py::init<uint64_t>(), py::arg("seed") = 0)
      .def_property_readonly("seed", by_reference(&Generator::seed))
      .def_property_readonly("offset", by_reference(&Generator::offset));
  m.def("manual_seed", &manual_seed, py::arg("seed"), "reseeds the generator used when none is passed");
  m.def(
      "set_matmul_precision",
      [](const std::string& word) { core::set_matmul_precision(core::parse_matmul_precision(word)); },
      py::arg("precision"),
      "how float32 matrix products multiply, for the whole process (core/matmul_precision.h; the CLI's --precision): "
      "'float32' (the default), 'bfloat16' (operands rounded to bfloat16, sums in float32; a CPU with AVX-512 BF16 "
      "and oneDNN, else an error saying why) or 'tf32' (CUDA tensors only)");
  m.def(
      "matmul_precision", [] { return core::to_string(core::matmul_precision()); },
      "the process's matrix-product precision: 'float32', 'bfloat16' or 'tf32'");
  const auto shape = [](const py::object& value, const char* op) { return shape_of(value, op); };
  m.def(
      "zeros",
      [shape](const py::object& s, Dtype dtype, const Device& device) {
        return zeros(shape(s, "zeros"), dtype, device);
      },
      py::arg("shape"), py::arg("dtype") = Dtype::float32, py::arg("device") = Device::cpu());
  m.def(
      "ones",
      [shape](const py::object& s, Dtype dtype, const Device& device) { return ones(shape(s, "ones"), dtype, device); },
      py::arg("shape"), py::arg("dtype") = Dtype::float32, py::arg("device") = Device::cpu());
  m.def(
      "full",
      [shape](const py::object& s, double value, Dtype dtype, const Device& device) {
        return full(shape(s, "full"), value, dtype, device);
      },
      py::arg("shape"), py::arg("value"), py::arg("dtype") = Dtype::float32, py::arg("device") = Device::cpu());
  m.def("zeros_like", &zeros_like, py::arg("like"));
  m.def(
      "arange",
      [](int64_t n, const Device& device) {
        if (n < 0) throw py::value_error("[arange] n must be 0 or more, got " + std::to_string(n));
        return arange(n, device);
      },
      py::arg("n"), py::arg("device") = Device::cpu(), "int64 [n]: 0, 1, ..., n - 1");
  m.def(
      "uniform",
      [shape](const py::object& s, double low, double high, Generator* gen, Dtype dtype, const Device& device) {
        return uniform(shape(s, "uniform"), low, high, generator_or_default(gen), dtype, device);
      },
      py::arg("shape"), py::arg("low") = 0.0, py::arg("high") = 1.0, py::arg("generator") = nullptr,
      py::arg("dtype") = Dtype::float32, py::arg("device") = Device::cpu());
  m.def(
      "normal",
      [shape](const py::object& s, double mean, double std, Generator* gen, Dtype dtype, const Device& device) {
        return normal(shape(s, "normal"), mean, std, generator_or_default(gen), dtype, device);
      },
      py::arg("shape"), py::arg("mean") = 0.0, py::arg("std") = 1.0, py::arg("generator") = nullptr,
      py::arg("dtype") = Dtype::float32, py::arg("device") = Device::cpu());
  m.def(
      "randint",
      [shape](const py::object& s, int64_t low, int64_t high, Generator* gen, const Device& device) {
        return randint(shape(s, "randint"), low, high, generator_or_default(gen), device);
      },
      py::arg("shape"), py::arg("low"), py::arg("high"), py::arg("generator") = nullptr,
      py::arg("device") = Device::cpu());
}

}  // namespace

void bind_ops(py::module_& m) {
  bind_elementwise(m);
  bind_reductions(m);
  bind_products(m);
  bind_shapes(m);
  bind_attention(m);
  bind_factories(m);
}

}  // namespace axiom::python
