// The products of the bfloat16 precision (core/matmul_precision.h) through autograd: every op
// whose products it changes, forward and backward, against float32 at bfloat16's tolerance; and
// the fused layers, which round each operand once and keep the rounded copies
// (autograd/bfloat16_products.h), against the same layers in separate ops, which round at every
// product: the same bits.
#include <optional>
#include <string>
#include <vector>

#include "autograd/functional.h"
#include "autograd/internal.h"
#include "core/launch.h"
#include "core/storage.h"
#include "tests/support/gradients.h"
#include "tests/support/matmul_precision.h"

namespace core = axiom::core;
using namespace axiom;
using namespace axiom::test;
using In = std::vector<axiom::Tensor>;

namespace {

// An op and the same computation in separate ops (matmul, which rounds at the product, then the
// bias added), on float32 leaves of these shapes: products of
// 70 x 80 x 64 multiply-adds per matrix and more, past the 64^3 below which products stay float32.
struct Case {
  const char* op;
  std::vector<Shape> shapes;
  Fn fused, separate;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"matmul",
       {{2, 70, 80}, {80, 64}},
       [](const In& in) { return matmul(in[0], in[1]); },
       [](const In& in) { return matmul(in[0], in[1]); }},
      {"linear",
       {{2, 70, 80}, {80, 64}, {64}},
       [](const In& in) { return linear(in[0], in[1], in[2]); },
       [](const In& in) { return add(matmul(in[0], in[1]), in[2]); }},
      {"layer_norm_linear",
       {{2, 70, 80}, {80}, {80}, {80, 64}, {64}},
       [](const In& in) { return layer_norm_linear(in[0], in[1], in[2], 1e-5, in[3], in[4]); },
       [](const In& in) { return add(matmul(layer_norm(in[0], in[1], in[2], 1e-5), in[3]), in[4]); }},
      {"layer_norm_linear, no parameters but the weight",
       {{2, 70, 80}, {80, 64}},
       [](const In& in) { return layer_norm_linear(in[0], {}, {}, 1e-5, in[1], {}); },
       [](const In& in) { return matmul(layer_norm(in[0], {}, {}, 1e-5), in[1]); }},
      {"activation_linear",
       {{2, 70, 80}, {80, 64}, {64}},
       [](const In& in) { return activation_linear(Activation::gelu, in[0], in[1], in[2]); },
       [](const In& in) { return add(matmul(gelu(in[0]), in[1]), in[2]); }},
      {"activation_linear, relu, no bias",
       {{2, 70, 80}, {80, 64}},
       [](const In& in) { return activation_linear(Activation::relu, in[0], in[1], {}); },
       [](const In& in) { return matmul(relu(in[0]), in[1]); }},
  };
  return all;
}

// The output and every input's gradient of fn on float32 leaves drawn from `seed`, with a seed
// gradient drawn after them.
std::vector<core::Tensor> output_and_grads(const Case& c, const Fn& fn, uint64_t seed) {
  In in;
  for (const Shape& shape : c.shapes) in.push_back(leaf(uniform64(shape, seed++, -2, 2).to(Dtype::float32)));
  const axiom::Tensor y = fn(in);
  y.backward(axiom::Tensor(uniform64(y.shape(), seed, -1, 1).to(Dtype::float32)));
  std::vector<core::Tensor> out = {core_tensor(y)};
  for (const axiom::Tensor& x : in) out.push_back(core_tensor(x.grad()));
  return out;
}

bool same_bits(const core::Tensor& a, const core::Tensor& b) {
  return a.shape() == b.shape() && core::sum(core::eq(a, b).to(Dtype::float64)).item() == double(a.numel());
}

}  // namespace

TEST_CASE("bfloat16 products: each op's output and gradients within bfloat16's tolerance of float32") {
  if (!bfloat16_products_here()) return;
  for (const Case& c : cases()) {
    CAPTURE(std::string(c.op));
    const std::vector<core::Tensor> float32 = output_and_grads(c, c.fused, 61);
    const PrecisionForTest bfloat16(core::MatmulPrecision::bfloat16);
    const std::vector<core::Tensor> rounded = output_and_grads(c, c.fused, 61);
    for (size_t i = 0; i < float32.size(); ++i) {
      CAPTURE(i);  // 0: the output; then each input's gradient
      // 8 significant bits per operand: each product off by up to 2^-8 relative, sums of 64 to 140
      // of them; the largest error a fraction of the largest value
      const double largest = core::max(core::abs(float32[i])).item();
      check_close(rounded[i], values_of(float32[i]), 0, 2e-2 * largest, c.op);
      const bool bias = i > 0 && c.shapes[i - 1] == Shape{64};    // its gradient sums g: no product
      if (!bias) CHECK_FALSE(same_bits(rounded[i], float32[i]));  // and the rounding shows
    }
  }
}

TEST_CASE("bfloat16 products: the fused layers give the bits of their separate ops") {
  if (!bfloat16_products_here()) return;
  const PrecisionForTest bfloat16(core::MatmulPrecision::bfloat16);
  for (const Case& c : cases()) {
    CAPTURE(std::string(c.op));
    const std::vector<core::Tensor> fused = output_and_grads(c, c.fused, 62),
                                    separate = output_and_grads(c, c.separate, 62);
    for (size_t i = 0; i < fused.size(); ++i) {
      CAPTURE(i);
      CHECK(same_bits(fused[i], separate[i]));
    }
  }
}

namespace {
// A graph of the backward pass goes through a fused op's composite, whose products round at the
// product: Hessian-vector products of sum(op(x)^2) within bfloat16's tolerance of float32.
void check_second_derivatives(const Case& c) {
  CAPTURE(std::string(c.op));
  In inputs, directions;
  uint64_t seed = 63;
  for (const Shape& shape : c.shapes) {
    inputs.push_back(axiom::Tensor(uniform64(shape, seed++, -2, 2).to(Dtype::float32)));
    directions.push_back(axiom::Tensor(uniform64(shape, seed++, -1, 1).to(Dtype::float32)));
  }
  const TensorFunction f = [&](const In& in) {
    const axiom::Tensor y = c.fused(in);
    return sum(mul(y, y));
  };
  const std::vector<axiom::Tensor> float32 = hvp(f, inputs, directions);
  const PrecisionForTest bfloat16(core::MatmulPrecision::bfloat16);
  const std::vector<axiom::Tensor> rounded = hvp(f, inputs, directions);
  for (size_t i = 0; i < float32.size(); ++i) {
    CAPTURE(i);
    const double largest = core::max(core::abs(core_tensor(float32[i]))).item();
    check_close(core_tensor(rounded[i]), values_of(core_tensor(float32[i])), 0, 3e-2 * largest, c.op);
  }
}
}  // namespace

TEST_CASE("bfloat16 products: second derivatives through the composites") {
  if (!bfloat16_products_here()) return;
  for (const Case& c : cases()) check_second_derivatives(c);
}

TEST_CASE("bfloat16 products: the fused layers keep bfloat16 copies, not float32 ones") {
  if (!bfloat16_products_here()) return;
  // On the meta device (shapes only), the memory a graph keeps: y [140, 80] rounded (2 bytes each)
  // and the weight [80, 64] rounded, instead of nothing but x in float32.
  const Shape x_shape{2, 70, 80};
  auto kept_by_graph = [&](bool rounded) {
    const std::optional<PrecisionForTest> scope =
        rounded ? std::optional<PrecisionForTest>(std::in_place, core::MatmulPrecision::bfloat16) : std::nullopt;
    const axiom::Tensor x = leaf(core::empty(x_shape, Dtype::float32, Device::meta()));
    const axiom::Tensor w = leaf(core::empty({80, 64}, Dtype::float32, Device::meta()));
    const int64_t before = core::allocation_stats(DeviceType::meta).live_bytes;
    const axiom::Tensor y = layer_norm_linear(x, {}, {}, 1e-5, w, {});
    return core::allocation_stats(DeviceType::meta).live_bytes - before - y.numel() * 4;  // less the output
  };
  const int64_t float32 = kept_by_graph(false), bfloat16 = kept_by_graph(true);
  CHECK(bfloat16 - float32 == (140 * 80 + 80 * 64) * 2);
}

// core::matmul folds a batch of large matrices into one product and rounds it; a batch of small
// ones stays small float32 products. The fused layers follow the same rule: their forward product
// stays float32 here (the weight's gradient, one product over the whole batch, rounds, as
// core::matmul's does), and they give their separate ops' bits.
TEST_CASE("bfloat16 products: a batch of small matrices stays float32") {
  if (!bfloat16_products_here()) return;
  const Case c = {"layer_norm_linear, 20-row matrices",
                  {{30, 20, 80}, {80}, {80}, {80, 64}, {64}},
                  [](const In& in) { return layer_norm_linear(in[0], in[1], in[2], 1e-5, in[3], in[4]); },
                  [](const In& in) { return add(matmul(layer_norm(in[0], in[1], in[2], 1e-5), in[3]), in[4]); }};
  const std::vector<core::Tensor> float32 = output_and_grads(c, c.fused, 64);
  const PrecisionForTest bfloat16(core::MatmulPrecision::bfloat16);
  const std::vector<core::Tensor> fused = output_and_grads(c, c.fused, 64),
                                  separate = output_and_grads(c, c.separate, 64);
  CHECK(same_bits(fused[0], float32[0]));
  for (size_t i = 0; i < fused.size(); ++i) {
    CAPTURE(i);
    CHECK(same_bits(fused[i], separate[i]));
  }
}

// --- layer_norm_attention: qkv kept in bfloat16 ----------------------------------------------------

namespace {

// x [2, 70, 80] normalized, projected by w [80, 192] (+ b [192]) to qkv of 4 heads of 16, attended
// along axis 1 (lines of 70, causal): a product of 70 x 80 x 192 per matrix, which rounds. w and b
// are the leaves ([-2, 2]) / 16, as an initialized layer's are: qkv of about 1, scores of a few
// units. (Scores in the hundreds would make each softmax one-hot, and rounding qkv would change
// which key a query picks, not the last bits of the output.)
const std::vector<Shape> kLayerShapes = {{2, 70, 80}, {80}, {80}, {80, 192}, {192}};

axiom::Tensor projections(const In& in) {
  return layer_norm_linear(in[0], in[1], in[2], 1e-5, mul(in[3], 1.0 / 16), mul(in[4], 1.0 / 16));
}

axiom::Tensor attended(const In& in) {
  return layer_norm_attention(in[0], in[1], in[2], 1e-5, mul(in[3], 1.0 / 16), mul(in[4], 1.0 / 16), 1, 4,
                              AttentionMask::causal());
}

// The output and the inputs' gradients of layer_norm_linear, then qkv rounded once to bfloat16
// (its derivative taken as 1: qkv's gradient is passed on as it is), then attention: the bits of
// layer_norm_attention's, but for the bias's gradient, which sums in another order.
std::vector<core::Tensor> rounded_between_the_ops(const std::vector<Shape>& shapes, uint64_t seed) {
  In in;
  for (const Shape& shape : shapes) in.push_back(leaf(uniform64(shape, seed++, -2, 2).to(Dtype::float32)));
  const axiom::Tensor qkv = projections(in);
  const axiom::Tensor rounded = leaf(core_tensor(qkv).to(Dtype::bfloat16).to(Dtype::float32));
  const axiom::Tensor y = attention(rounded, 1, 4, AttentionMask::causal());
  y.backward(axiom::Tensor(uniform64(y.shape(), seed, -1, 1).to(Dtype::float32)));
  qkv.backward(rounded.grad());
  std::vector<core::Tensor> out = {core_tensor(y)};
  for (const axiom::Tensor& x : in) out.push_back(core_tensor(x.grad()));
  return out;
}

// The output and gradients of layer_norm_attention on leaves of `shapes`: the bits of
// rounded_between_the_ops (the bias's gradient within float32's rounding of its sums), and within
// bfloat16's tolerance of float32.
void check_rounded_once(const std::vector<Shape>& shapes) {
  const Case c{"layer_norm_attention", shapes, attended, attended};
  const std::vector<core::Tensor> float32 = output_and_grads(c, c.fused, 65);
  const PrecisionForTest bfloat16(core::MatmulPrecision::bfloat16);
  const std::vector<core::Tensor> fused = output_and_grads(c, c.fused, 65),
                                  separate = rounded_between_the_ops(shapes, 65);
  for (size_t i = 0; i < fused.size(); ++i) {
    CAPTURE(i);    // 0: the output; then each input's gradient
    if (i == 5) {  // the bias's: float32 sums of qkv's gradient, which may add line by line
      check_close(fused[i], values_of(separate[i]), 1e-5, 1e-5, "the bias's gradient");
    } else {
      CHECK(same_bits(fused[i], separate[i]));
    }
    const double largest = core::max(core::abs(float32[i])).item();
    check_close(fused[i], values_of(float32[i]), 0, 2e-2 * largest, "layer_norm_attention");
  }
}

}  // namespace

// Lines of 70, which the CPU kernel copies (qkv widened and its gradient rounded line by line), and
// one line of 300, which it does not (the whole qkv widened first, the gradient rounded after).
TEST_CASE("bfloat16 products: layer_norm_attention rounds qkv once, between its two ops") {
  if (!bfloat16_products_here()) return;
  for (const Shape& x : {kLayerShapes[0], Shape{1, 300, 80}}) {
    CAPTURE(x);
    std::vector<Shape> shapes = kLayerShapes;
    shapes[0] = x;
    check_rounded_once(shapes);
  }
}

TEST_CASE("bfloat16 products: layer_norm_attention keeps qkv in bfloat16, not float32") {
  if (!bfloat16_products_here()) return;
  const PrecisionForTest bfloat16(core::MatmulPrecision::bfloat16);
  // On the meta device (shapes only), the memory a graph keeps: qkv [140, 192] at 2 bytes each
  // where attention after layer_norm_linear keeps it at 4.
  auto kept_by_graph = [](bool fused) {
    In in;
    for (const Shape& shape : kLayerShapes) in.push_back(leaf(core::empty(shape, Dtype::float32, Device::meta())));
    const int64_t before = core::allocation_stats(DeviceType::meta).live_bytes;
    const axiom::Tensor y = fused ? attended(in) : attention(projections(in), 1, 4, AttentionMask::causal());
    return core::allocation_stats(DeviceType::meta).live_bytes - before;
  };
  CHECK(kept_by_graph(false) - kept_by_graph(true) == 140 * 192 * 2);
}

TEST_CASE("bfloat16 products: second derivatives of layer_norm_attention, through its two ops") {
  if (!bfloat16_products_here()) return;
  check_second_derivatives({"layer_norm_attention", kLayerShapes, attended, attended});
}

// --- layer_norm_feedforward: h kept in bfloat16 ----------------------------------------------------

namespace {

// x [2, 70, 80] normalized, projected up by [80, 96] (+ [96]) to h, activated, projected down by
// [96, 64] (+ [64]): products of 70 x 80 x 96 and 70 x 96 x 64 per matrix, which round. The
// projections' parameters are the leaves ([-2, 2]) / 16, as an initialized layer's are: h of about
// 1, where GELU bends. (With h in the tens, second derivatives would come from the few h near 0,
// which the products' rounding moves.)
const std::vector<Shape> kFeedforwardShapes = {{2, 70, 80}, {80}, {80}, {80, 96}, {96}, {96, 64}, {64}};

In with_projections_scaled(In in) {
  for (size_t i = 3; i < in.size(); ++i) in[i] = mul(in[i], 1.0 / 16);
  return in;
}

Fn feedforward(Activation activation) {
  return [activation](const In& leaves) {
    const In in = with_projections_scaled(leaves);
    return layer_norm_feedforward(in[0], in[1], in[2], 1e-5, in[3], in[4], activation, in[5], in[6]);
  };
}

// The output and the inputs' gradients of layer_norm_linear, then h rounded once to bfloat16 (its
// derivative taken as 1: h's gradient is passed on as it is), then activation_linear: the bits of
// layer_norm_feedforward's, every gradient included.
std::vector<core::Tensor> h_rounded_between_the_ops(Activation activation, uint64_t seed) {
  In leaves;
  for (const Shape& shape : kFeedforwardShapes)
    leaves.push_back(leaf(uniform64(shape, seed++, -2, 2).to(Dtype::float32)));
  const In in = with_projections_scaled(leaves);
  const axiom::Tensor h = layer_norm_linear(in[0], in[1], in[2], 1e-5, in[3], in[4]);
  const axiom::Tensor rounded = leaf(core_tensor(h).to(Dtype::bfloat16).to(Dtype::float32));
  const axiom::Tensor y = activation_linear(activation, rounded, in[5], in[6]);
  y.backward(axiom::Tensor(uniform64(y.shape(), seed, -1, 1).to(Dtype::float32)));
  h.backward(rounded.grad());
  std::vector<core::Tensor> out = {core_tensor(y)};
  for (const axiom::Tensor& x : leaves) out.push_back(core_tensor(x.grad()));
  return out;
}

}  // namespace

TEST_CASE("bfloat16 products: layer_norm_feedforward rounds h once, between its two ops") {
  if (!bfloat16_products_here()) return;
  for (const Activation activation : {Activation::gelu, Activation::gelu_tanh, Activation::relu}) {
    CAPTURE(static_cast<int>(activation));
    const Case c{"layer_norm_feedforward", kFeedforwardShapes, feedforward(activation), feedforward(activation)};
    const std::vector<core::Tensor> float32 = output_and_grads(c, c.fused, 66);
    const PrecisionForTest bfloat16(core::MatmulPrecision::bfloat16);
    const std::vector<core::Tensor> fused = output_and_grads(c, c.fused, 66),
                                    separate = h_rounded_between_the_ops(activation, 66);
    for (size_t i = 0; i < fused.size(); ++i) {
      CAPTURE(i);  // 0: the output; then each input's gradient
      CHECK(same_bits(fused[i], separate[i]));
      // (relu's gradients jump where the products' rounding moves an h across 0)
      if (activation == Activation::relu) continue;
      const double largest = core::max(core::abs(float32[i])).item();
      check_close(fused[i], values_of(float32[i]), 0, 2e-2 * largest, "layer_norm_feedforward");
    }
  }
}

TEST_CASE("bfloat16 products: layer_norm_feedforward keeps h in bfloat16, not float32") {
  if (!bfloat16_products_here()) return;
  const PrecisionForTest bfloat16(core::MatmulPrecision::bfloat16);
  // On the meta device (shapes only), the memory a graph keeps: h [140, 96] at 2 bytes each where
  // activation_linear after layer_norm_linear keeps it at 4.
  auto kept_by_graph = [](bool fused) {
    In in;
    for (const Shape& shape : kFeedforwardShapes)
      in.push_back(leaf(core::empty(shape, Dtype::float32, Device::meta())));
    const int64_t before = core::allocation_stats(DeviceType::meta).live_bytes;
    const axiom::Tensor y =
        fused ? layer_norm_feedforward(in[0], in[1], in[2], 1e-5, in[3], in[4], Activation::gelu, in[5], in[6])
              : activation_linear(Activation::gelu, layer_norm_linear(in[0], in[1], in[2], 1e-5, in[3], in[4]), in[5],
                                  in[6]);
    return core::allocation_stats(DeviceType::meta).live_bytes - before;
  };
  CHECK(kept_by_graph(false) - kept_by_graph(true) == 140 * 96 * 2);
}

TEST_CASE("bfloat16 products: second derivatives of layer_norm_feedforward, through its two ops") {
  if (!bfloat16_products_here()) return;
  check_second_derivatives(
      {"layer_norm_feedforward", kFeedforwardShapes, feedforward(Activation::gelu), feedforward(Activation::gelu)});
}

// The branches of the fused backward pass that the cases above do not take: x, the layer norm and
// the up projection frozen (no gradient wanted there: only GELU is recomputed for the down
// projection's weight), and no biases. The same bits as the two ops with h rounded in between.
TEST_CASE("bfloat16 products: layer_norm_feedforward with only the down projection learning, no biases") {
  if (!bfloat16_products_here()) return;
  const PrecisionForTest bfloat16(core::MatmulPrecision::bfloat16);
  auto output_and_down_grad = [](bool fused) {
    const axiom::Tensor x(uniform64({2, 70, 80}, 69, -2, 2).to(Dtype::float32));
    const axiom::Tensor up(core::mul(uniform64({80, 96}, 70, -1, 1).to(Dtype::float32), core::scalar(1.0 / 16)));
    const axiom::Tensor down = leaf(uniform64({96, 64}, 71, -1, 1).to(Dtype::float32));
    axiom::Tensor y;
    if (fused) {
      y = layer_norm_feedforward(x, {}, {}, 1e-5, up, {}, Activation::gelu, down, {});
    } else {
      const core::Tensor h = core_tensor(layer_norm_linear(x, {}, {}, 1e-5, up, {}));
      y = activation_linear(Activation::gelu, axiom::Tensor(h.to(Dtype::bfloat16).to(Dtype::float32)), down, {});
    }
    y.backward(axiom::Tensor(uniform64(y.shape(), 72, -1, 1).to(Dtype::float32)));
    return std::vector<core::Tensor>{core_tensor(y), core_tensor(down.grad())};
  };
  const std::vector<core::Tensor> fused = output_and_down_grad(true), separate = output_and_down_grad(false);
  CHECK(same_bits(fused[0], separate[0]));
  CHECK(same_bits(fused[1], separate[1]));
}

// Under bfloat16 products, what the two ops would refuse is refused by name: a down projection that
// does not fit h (the fused op leaves it to activation_linear), an activation of no known kind.
TEST_CASE("bfloat16 products: layer_norm_feedforward refuses what its two ops refuse") {
  if (!bfloat16_products_here()) return;
  const PrecisionForTest bfloat16(core::MatmulPrecision::bfloat16);
  In in;
  for (const Shape& shape : kFeedforwardShapes) in.push_back(leaf(uniform64(shape, 67, -2, 2).to(Dtype::float32)));
  const axiom::Tensor misfit = leaf(uniform64({95, 64}, 68, -2, 2).to(Dtype::float32));
  check_error(
      [&] { (void)layer_norm_feedforward(in[0], in[1], in[2], 1e-5, in[3], in[4], Activation::gelu, misfit, in[6]); },
      {"[linear] shapes [2, 70, 96] and [95, 64] cannot be multiplied (96 != 95)"});
  check_error(
      [&] { (void)layer_norm_feedforward(in[0], in[1], in[2], 1e-5, in[3], in[4], Activation(9), in[5], in[6]); },
      {"[activation] unknown kind 9"});
}
