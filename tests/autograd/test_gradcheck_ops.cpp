// gradcheck (float64, the full Jacobian, tiny shapes) of every differentiable op in autograd/ops.h
// and every differentiable view method of axiom::Tensor: on broadcasting inputs, on leaves whose
// memory is not contiguous (made from transposed or sliced core tensors), and with values used
// more than once. Inputs are kept away from the points where an op has no derivative (0 for abs
// and relu, ties for maximum, minimum and max). One check runs in projection mode on a larger input.
#include <string>
#include <vector>

#include "tests/autograd/helpers.h"

namespace core = axiom::core;
using namespace axiom;
using namespace axiom::agtest;
using In = std::vector<axiom::Tensor>;

namespace {

// A [3, 4] leaf whose memory is the transpose of a [4, 3] buffer.
axiom::Tensor transposed_leaf(uint64_t seed, double low = -2, double high = 2) {
  return leaf(uniform64({4, 3}, seed, low, high).transpose(0, 1));
}

// A [3, 4] leaf that views every other row and column of a [7, 9] buffer.
axiom::Tensor sliced_leaf(uint64_t seed, double low = -2, double high = 2) {
  return leaf(uniform64({7, 9}, seed, low, high).slice(0, 1, 7, 2).slice(1, 0, 8, 2));
}

}  // namespace

// --- elementwise ------------------------------------------------------------------------------------

TEST_CASE("binary ops broadcast a 3x1x4 with a 5x1") {
  const auto a = leaf(uniform64({3, 1, 4}, 1)), b = leaf(uniform64({5, 1}, 2));
  check_grad("add", [](const In& in) { return add(in[0], in[1]); }, {a, b});
  check_grad("sub", [](const In& in) { return sub(in[0], in[1]); }, {a, b});
  check_grad("mul", [](const In& in) { return mul(in[0], in[1]); }, {a, b});
  check_grad("maximum", [](const In& in) { return maximum(in[0], in[1]); }, {a, b});
  check_grad("minimum", [](const In& in) { return minimum(in[0], in[1]); }, {a, b});

  const auto divisor = leaf(away_from_zero({5, 1}, 3));
  check_grad("div", [](const In& in) { return div(in[0], in[1]); }, {a, divisor});

  const auto base = leaf(uniform64({3, 1, 4}, 4, 0.5, 2)), exponent = leaf(uniform64({5, 1}, 5, -1.5, 1.5));
  check_grad("pow (tensor exponent)", [](const In& in) { return pow(in[0], in[1]); }, {base, exponent});
}

TEST_CASE("binary ops where only one operand wants a gradient") {
  const auto a = leaf(uniform64({2, 3}, 6));
  const axiom::Tensor constant(away_from_zero({3}, 7));  // no gradient wanted
  check_grad("add (second constant)", [&](const In& in) { return add(in[0], constant); }, {a});
  check_grad("sub (first constant)", [&](const In& in) { return sub(constant, in[0]); }, {a});
  check_grad("mul (first constant)", [&](const In& in) { return mul(constant, in[0]); }, {a});
  check_grad("div (second constant)", [&](const In& in) { return div(in[0], constant); }, {a});
  const auto divisor = leaf(away_from_zero({2, 3}, 8));
  check_grad("div (first constant)", [&](const In& in) { return div(constant, in[0]); }, {divisor});
  const auto positive = leaf(uniform64({2, 3}, 9, 0.5, 2));
  check_grad("pow (constant exponent tensor)", [&](const In& in) { return pow(in[0], constant); }, {positive});
  const axiom::Tensor base(uniform64({3}, 10, 0.5, 2));
  check_grad("pow (constant base)", [&](const In& in) { return pow(base, in[0]); }, {a});
  check_grad("maximum (second constant)", [&](const In& in) { return maximum(in[0], constant); }, {a});
  check_grad("minimum (first constant)", [&](const In& in) { return minimum(constant, in[0]); }, {a});
}

TEST_CASE("binary ops on non-contiguous leaves") {
  const auto a = transposed_leaf(11), b = sliced_leaf(12);
  REQUIRE(a.shape() == Shape{3, 4});
  REQUIRE(b.shape() == Shape{3, 4});
  REQUIRE_FALSE(a.data().is_contiguous());
  REQUIRE_FALSE(b.data().is_contiguous());
  check_grad("add", [](const In& in) { return add(in[0], in[1]); }, {a, b});
  check_grad("sub", [](const In& in) { return sub(in[0], in[1]); }, {a, b});
  check_grad("mul", [](const In& in) { return mul(in[0], in[1]); }, {a, b});
  check_grad("maximum", [](const In& in) { return maximum(in[0], in[1]); }, {a, b});
  check_grad("minimum", [](const In& in) { return minimum(in[0], in[1]); }, {a, b});
  const auto divisor = sliced_leaf(13, 0.5, 2);
  check_grad("div", [](const In& in) { return div(in[0], in[1]); }, {a, divisor});
  const auto base = transposed_leaf(14, 0.5, 2);
  check_grad("pow", [](const In& in) { return pow(in[0], in[1]); }, {base, b});
}

TEST_CASE("the scalar overloads") {
  const auto x = leaf(uniform64({2, 3}, 15));
  const auto positive = leaf(uniform64({2, 3}, 16, 0.3, 2));
  check_grad("add scalar", [](const In& in) { return add(in[0], 0.7); }, {x});
  check_grad("sub scalar", [](const In& in) { return sub(in[0], 0.3); }, {x});
  check_grad("mul scalar", [](const In& in) { return mul(in[0], -1.7); }, {x});
  check_grad("div scalar", [](const In& in) { return div(in[0], 2.5); }, {x});
  check_grad("pow 3", [](const In& in) { return pow(in[0], 3.0); }, {x});
  check_grad("pow 2 of negatives too", [](const In& in) { return pow(in[0], 2.0); }, {x});
  check_grad("pow 0.5", [](const In& in) { return pow(in[0], 0.5); }, {positive});
  check_grad("pow -1.5", [](const In& in) { return pow(in[0], -1.5); }, {positive});
}

TEST_CASE("unary ops") {
  const auto x = leaf(uniform64({2, 3}, 17));
  const auto nonzero = leaf(away_from_zero({2, 3}, 18));
  const auto positive = leaf(uniform64({2, 3}, 19, 0.3, 2));
  check_grad("neg", [](const In& in) { return neg(in[0]); }, {x});
  check_grad("abs", [](const In& in) { return abs(in[0]); }, {nonzero});
  check_grad("exp", [](const In& in) { return exp(in[0]); }, {x});
  check_grad("log", [](const In& in) { return log(in[0]); }, {positive});
  check_grad("sqrt", [](const In& in) { return sqrt(in[0]); }, {positive});
  check_grad("rsqrt", [](const In& in) { return rsqrt(in[0]); }, {positive});
  check_grad("tanh", [](const In& in) { return tanh(in[0]); }, {x});
  check_grad("sigmoid", [](const In& in) { return sigmoid(in[0]); }, {x});
  check_grad("relu", [](const In& in) { return relu(in[0]); }, {nonzero});
  check_grad("gelu", [](const In& in) { return gelu(in[0]); }, {x});
  check_grad("gelu_tanh", [](const In& in) { return gelu_tanh(in[0]); }, {x});
}

TEST_CASE("unary ops on a non-contiguous leaf") {
  const auto x = sliced_leaf(20);
  const auto positive = transposed_leaf(21, 0.3, 2);
  check_grad("exp", [](const In& in) { return exp(in[0]); }, {x});
  check_grad("tanh", [](const In& in) { return tanh(in[0]); }, {x});
  check_grad("gelu", [](const In& in) { return gelu(in[0]); }, {x});
  check_grad("log", [](const In& in) { return log(in[0]); }, {positive});
  check_grad("rsqrt", [](const In& in) { return rsqrt(in[0]); }, {positive});
}

TEST_CASE("the operators are the named ops") {
  const auto a = leaf(uniform64({2, 3}, 22)), b = leaf(away_from_zero({3}, 23));
  check_grad("a + b", [](const In& in) { return in[0] + in[1]; }, {a, b});
  check_grad("a - b", [](const In& in) { return in[0] - in[1]; }, {a, b});
  check_grad("a * b", [](const In& in) { return in[0] * in[1]; }, {a, b});
  check_grad("a / b", [](const In& in) { return in[0] / in[1]; }, {a, b});
  check_grad("-a", [](const In& in) { return -in[0]; }, {a});
}

TEST_CASE("where and masked_fill, with broadcast conditions and masks") {
  const core::Tensor cond = core::from_vector<uint8_t>({1, 0, 1}, {3, 1});
  const auto a = leaf(uniform64({3, 4}, 24)), b = leaf(uniform64({4}, 25));
  check_grad("where", [&](const In& in) { return where(axiom::Tensor(cond), in[0], in[1]); }, {a, b});
  const core::Tensor cond2 = core::from_vector<uint8_t>({0, 1, 1, 0}, {4});
  check_grad("where (condition along the other axis)",
             [&](const In& in) { return where(axiom::Tensor(cond2), in[0], in[1]); }, {a, b});
  const core::Tensor mask = core::from_vector<uint8_t>({1, 0, 0, 1}, {1, 4});
  check_grad("masked_fill", [&](const In& in) { return masked_fill(in[0], axiom::Tensor(mask), 9.0); }, {a});
  check_grad("masked_fill on a transposed leaf",
             [&](const In& in) { return masked_fill(in[0], axiom::Tensor(mask), -3.0); }, {transposed_leaf(26)});
}

// --- reductions ---------------------------------------------------------------------------------------

namespace {
const std::vector<std::vector<int64_t>> kAxisChoices = {{}, {0}, {1}, {-1}, {0, 2}, {1, 2}, {0, 1, 2}};
}

TEST_CASE("sum and mean over every choice of axes, keepdim or not") {
  const auto x = leaf(uniform64({2, 3, 4}, 30));
  for (const auto& axes : kAxisChoices) {
    for (bool keepdim : {false, true}) {
      CAPTURE(core::shape_str(axes));
      CAPTURE(keepdim);
      check_grad("sum", [&](const In& in) { return sum(in[0], axes, keepdim); }, {x});
      check_grad("mean", [&](const In& in) { return mean(in[0], axes, keepdim); }, {x});
    }
  }
}

TEST_CASE("var with correction 0 and 1") {
  const auto x = leaf(uniform64({2, 3, 4}, 31));
  for (const auto& axes : kAxisChoices) {
    for (bool keepdim : {false, true}) {
      for (int64_t correction : {0, 1}) {
        CAPTURE(core::shape_str(axes));
        CAPTURE(keepdim);
        CAPTURE(correction);
        check_grad("var", [&](const In& in) { return var(in[0], axes, keepdim, correction); }, {x});
      }
    }
  }
}

TEST_CASE("max and min over one and several axes") {
  const auto x = leaf(uniform64({2, 3, 4}, 32));  // continuous values: no ties
  for (const auto& axes : kAxisChoices) {
    for (bool keepdim : {false, true}) {
      CAPTURE(core::shape_str(axes));
      CAPTURE(keepdim);
      check_grad("max", [&](const In& in) { return axiom::max(in[0], axes, keepdim); }, {x});
      check_grad("min", [&](const In& in) { return axiom::min(in[0], axes, keepdim); }, {x});
    }
  }
}

TEST_CASE("reductions of non-contiguous leaves") {
  const auto x = transposed_leaf(33), y = sliced_leaf(34);
  check_grad("sum", [](const In& in) { return sum(in[0], {1}); }, {x});
  check_grad("mean", [](const In& in) { return mean(in[0], {0}, true); }, {y});
  check_grad("var", [](const In& in) { return var(in[0], {1}, false, 1); }, {x});
  check_grad("max", [](const In& in) { return axiom::max(in[0], {0}); }, {y});
  check_grad("min", [](const In& in) { return axiom::min(in[0], {1}); }, {x});
}

// --- indexing -------------------------------------------------------------------------------------------

TEST_CASE("gather along each axis, an index used twice") {
  const auto x = leaf(uniform64({3, 4}, 35));
  const axiom::Tensor rows(core::from_vector<int64_t>({2, 0, 0, 1, 1, 2, 0, 2}, {2, 4}));     // axis 0: [2, 4]
  const axiom::Tensor columns(core::from_vector<int64_t>({3, 3, 0, 1, 2, 1}, {3, 2}));        // axis 1: [3, 2]
  check_grad("gather", [&](const In& in) { return gather(in[0], 0, rows); }, {x});
  check_grad("gather", [&](const In& in) { return gather(in[0], 1, columns); }, {x});
  check_grad("gather", [&](const In& in) { return gather(in[0], -1, columns); }, {transposed_leaf(36)});
}

// --- matmul -------------------------------------------------------------------------------------------

TEST_CASE("matmul of every operand rank") {
  const auto matmul_fn = [](const In& in) { return matmul(in[0], in[1]); };
  struct Case {
    const char* what;
    Shape a, b;
  };
  const Case cases[] = {
      {"2-D", {3, 4}, {4, 2}},
      {"batched", {2, 3, 4}, {2, 4, 5}},
      {"broadcast batch axes", {2, 1, 2, 3}, {3, 3, 2}},
      {"shared weight a[B, M, K] @ b[K, N]", {2, 3, 4}, {4, 5}},
      {"shared weight with two batch axes", {2, 2, 3, 4}, {4, 2}},
      {"a matrix times a batch", {3, 4}, {2, 4, 5}},
      {"1-D on the left", {4}, {4, 3}},
      {"1-D on the left of a batch", {4}, {2, 4, 3}},
      {"1-D on the right", {3, 4}, {4}},
      {"1-D on the right of a batch", {2, 3, 4}, {4}},
      {"1-D on both sides (a dot product)", {4}, {4}},
  };
  uint64_t seed = 40;
  for (const Case& c : cases) {
    CAPTURE(std::string(c.what));
    const auto a = leaf(uniform64(c.a, seed++)), b = leaf(uniform64(c.b, seed++));
    check_grad(c.what, matmul_fn, {a, b});
  }
}

TEST_CASE("matmul of non-contiguous operands, and with one operand constant") {
  const auto matmul_fn = [](const In& in) { return matmul(in[0], in[1]); };
  const auto a = transposed_leaf(60);                               // [3, 4], transposed memory
  const auto b = leaf(uniform64({4, 4}, 61).slice(1, 0, 4, 2));     // [4, 2], every other column
  check_grad("transposed @ sliced", matmul_fn, {a, b});
  const auto batch = leaf(uniform64({4, 3, 2}, 62).permute({2, 1, 0}));  // [2, 3, 4]
  check_grad("permuted batch @ shared weight", matmul_fn, {batch, leaf(uniform64({4, 5}, 63))});
  const axiom::Tensor constant(uniform64({4, 2}, 64));
  check_grad("only a wants a gradient", [&](const In& in) { return matmul(in[0], constant); }, {a});
  const axiom::Tensor left(uniform64({2, 3, 4}, 65));
  check_grad("only the shared weight wants a gradient", [&](const In& in) { return matmul(left, in[0]); },
             {leaf(uniform64({4, 5}, 66))});
}

// --- neural-network ops -------------------------------------------------------------------------------

TEST_CASE("softmax and log_softmax over each axis") {
  const auto x = leaf(uniform64({2, 3, 4}, 70));
  for (int64_t axis : {0, 1, 2, -1, -3}) {
    CAPTURE(axis);
    check_grad("softmax", [axis](const In& in) { return softmax(in[0], axis); }, {x});
    check_grad("log_softmax", [axis](const In& in) { return log_softmax(in[0], axis); }, {x});
  }
  const auto t = transposed_leaf(71);
  check_grad("softmax of a transposed leaf", [](const In& in) { return softmax(in[0], 0); }, {t});
  check_grad("log_softmax of a transposed leaf", [](const In& in) { return log_softmax(in[0], -1); }, {t});
}

TEST_CASE("linear: x @ w + b for 1-D, 2-D and batched x") {
  const auto w = leaf(uniform64({3, 4}, 75)), b = leaf(uniform64({4}, 76));
  for (const Shape& shape : {Shape{3}, Shape{5, 3}, Shape{2, 5, 3}}) {
    CAPTURE(core::shape_str(shape));
    check_grad("linear", [](const In& in) { return linear(in[0], in[1], in[2]); }, {leaf(uniform64(shape, 77)), w, b});
  }
  check_grad("a transposed x", [](const In& in) { return linear(in[0], in[1], in[2]); },
             {leaf(uniform64({3, 5}, 78).transpose(0, 1)), w, b});
}

TEST_CASE("activation_linear: act(h) @ w + b for every activation, with and without a bias") {
  const auto w = leaf(uniform64({3, 4}, 79)), b = leaf(uniform64({4}, 80));
  for (Activation act : {Activation::gelu, Activation::gelu_tanh, Activation::relu}) {
    CAPTURE(static_cast<int>(act));
    for (const Shape& shape : {Shape{3}, Shape{5, 3}, Shape{2, 5, 3}}) {
      CAPTURE(core::shape_str(shape));
      const auto h = leaf(away_from_zero(shape, 81));  // relu's kink at 0 stays away from the finite differences
      check_grad("activation_linear", [act](const In& in) { return activation_linear(act, in[0], in[1], in[2]); }, {h, w, b});
      check_grad("activation_linear without a bias", [act](const In& in) { return activation_linear(act, in[0], in[1], {}); }, {h, w});
    }
  }
}

TEST_CASE("activation_linear: the bits of linear(activate(h)), keeping h alone for backward") {
  for (Dtype dtype : {Dtype::float64, Dtype::float32}) {
    CAPTURE(dtype);
    core::Generator gen(82);
    const auto h = leaf(core::uniform({2, 64, 16}, -3, 3, gen, dtype));
    const auto w = leaf(core::uniform({16, 8}, -1, 1, gen, dtype)), b = leaf(core::uniform({8}, -1, 1, gen, dtype));
    const axiom::Tensor weights(core::uniform({2, 64, 8}, -1, 1, gen, dtype));
    auto gradients = [&](bool fused) {
      for (const auto& t : {h, w, b}) t.zero_grad();
      const int64_t before = core::allocation_stats().live_bytes;
      const axiom::Tensor out = fused ? activation_linear(Activation::gelu, h, w, b) : linear(gelu(h), w, b);
      const int64_t kept = core::allocation_stats().live_bytes - before;  // the output, and what backward needs
      sum(mul(out, weights)).backward();
      return std::make_tuple(axiom::test::values_of(out.data()), axiom::test::values_of(h.grad().data()), axiom::test::values_of(w.grad().data()), axiom::test::values_of(b.grad().data()), kept);
    };
    const auto [out, dh, dw, db, kept] = gradients(false);
    const auto [fused_out, fused_dh, fused_dw, fused_db, fused_kept] = gradients(true);
    CHECK(fused_out == out);
    CHECK(fused_dh == dh);
    CHECK(fused_dw == dw);
    CHECK(fused_db == db);
    // gelu(h), as big as h, is not kept
    CHECK(kept - fused_kept == static_cast<int64_t>(h.numel() * core::dtype_size(dtype)));
  }
}

TEST_CASE("layer_norm_linear: linear(layer_norm(x)) with and without the norm's and the product's parameters") {
  const auto nw = leaf(uniform64({3}, 83)), nb = leaf(uniform64({3}, 84));
  const auto w = leaf(uniform64({3, 4}, 85)), b = leaf(uniform64({4}, 86));
  for (const Shape& shape : {Shape{3}, Shape{5, 3}, Shape{2, 5, 3}}) {
    CAPTURE(core::shape_str(shape));
    const auto x = leaf(uniform64(shape, 87));
    check_grad("layer_norm_linear", [](const In& in) { return layer_norm_linear(in[0], in[1], in[2], 1e-5, in[3], in[4]); },
               {x, nw, nb, w, b});
    check_grad("without the parameters that may be left out", [](const In& in) { return layer_norm_linear(in[0], {}, {}, 1e-5, in[1], {}); },
               {x, w});
  }
}

TEST_CASE("layer_norm_linear: the bits of linear(layer_norm(x)), keeping x alone for backward") {
  for (Dtype dtype : {Dtype::float64, Dtype::float32}) {
    CAPTURE(dtype);
    core::Generator gen(88);
    auto param = [&](const Shape& shape) { return leaf(core::uniform(shape, -1, 1, gen, dtype)); };
    const auto x = param({2, 64, 16}), nw = param({16}), nb = param({16}), w = param({16, 8}), b = param({8});
    const axiom::Tensor weights(core::uniform({2, 64, 8}, -1, 1, gen, dtype));
    auto gradients = [&](bool fused) {
      for (const auto& t : {x, nw, nb, w, b}) t.zero_grad();
      const int64_t before = core::allocation_stats().live_bytes;
      const axiom::Tensor out = fused ? layer_norm_linear(x, nw, nb, 1e-5, w, b) : linear(layer_norm(x, nw, nb, 1e-5), w, b);
      const int64_t kept = core::allocation_stats().live_bytes - before;
      sum(mul(out, weights)).backward();
      std::vector<std::vector<double>> values{axiom::test::values_of(out.data())};
      for (const auto& t : {x, nw, nb, w, b}) values.push_back(axiom::test::values_of(t.grad().data()));
      return std::make_pair(values, kept);
    };
    const auto [plain, kept] = gradients(false);
    const auto [fused, fused_kept] = gradients(true);
    CHECK(fused == plain);
    CHECK(kept - fused_kept == static_cast<int64_t>(x.numel() * core::dtype_size(dtype)));  // layer_norm(x) is not kept
  }
}

TEST_CASE("attention along each axis, causal or not") {
  const auto qkv = leaf(uniform64({2, 3, 4, 12}, 86));
  for (int64_t axis : {1, 2}) {
    for (bool causal : {false, true}) {
      CAPTURE(axis);
      CAPTURE(causal);
      check_grad("attention", [=](const In& in) { return attention(in[0], axis, 2, causal); }, {qkv});
    }
  }
  check_grad("a sequence, one head", [](const In& in) { return attention(in[0], 1, 1, true); }, {leaf(uniform64({2, 5, 6}, 87))});
  check_grad("a strided qkv", [](const In& in) { return attention(in[0], 0, 2, false); },
             {leaf(uniform64({12, 4}, 88).transpose(0, 1))});
}

TEST_CASE("layer_norm with and without weight and bias") {
  const auto x = leaf(uniform64({3, 5}, 80));
  const auto w = leaf(uniform64({5}, 81, 0.5, 1.5)), b = leaf(uniform64({5}, 82));
  const axiom::Tensor none;
  check_grad("weight and bias", [](const In& in) { return layer_norm(in[0], in[1], in[2]); }, {x, w, b});
  check_grad("neither", [&](const In& in) { return layer_norm(in[0], none, none); }, {x});
  check_grad("weight only", [&](const In& in) { return layer_norm(in[0], in[1], none); }, {x, w});
  check_grad("bias only", [&](const In& in) { return layer_norm(in[0], none, in[1]); }, {x, b});
  check_grad("constant weight and bias, gradient to x", [&](const In& in) { return layer_norm(in[0], w.detach(), b.detach()); }, {x});
  check_grad("gradients to weight and bias only", [&](const In& in) { return layer_norm(x.detach(), in[0], in[1]); }, {w, b});
  check_grad("3-D input", [](const In& in) { return layer_norm(in[0], in[1], in[2], 1e-3); },
             {leaf(uniform64({2, 2, 5}, 83)), w, b});
  check_grad("1-D input", [](const In& in) { return layer_norm(in[0], in[1], in[2]); }, {leaf(uniform64({5}, 84)), w, b});
  check_grad("transposed input", [](const In& in) { return layer_norm(in[0], in[1], in[2]); },
             {leaf(uniform64({5, 3}, 85).transpose(0, 1)), w, b});
}

TEST_CASE("embedding sends its gradient to the weight, summed over repeated indices") {
  const auto weight = leaf(uniform64({5, 3}, 90));
  const core::Tensor indices = int64s({1, 3, 1, 4, 1, 0}, {2, 3});  // row 1 three times, row 2 never
  check_grad("2-D indices", [&](const In& in) { return embedding(in[0], axiom::Tensor(indices)); }, {weight});
  const core::Tensor flat = int64s({2, 2, 0}, {3});
  check_grad("1-D indices", [&](const In& in) { return embedding(in[0], axiom::Tensor(flat)); }, {weight});
  // Through a nonlinearity, so that the repeated rows' gradients differ from position to position.
  check_grad("then tanh times position weights",
             [&](const In& in) {
               const axiom::Tensor scale(uniform64({2, 3, 3}, 91));
               return sum(mul(tanh(embedding(in[0], axiom::Tensor(indices))), scale));
             },
             {weight});
}

TEST_CASE("cross_entropy with every reduction, with and without label smoothing") {
  const auto logits = leaf(uniform64({4, 5}, 100));
  const axiom::Tensor targets(int64s({1, 0, 4, 1}, {4}));
  for (Reduction reduction : {Reduction::mean, Reduction::sum, Reduction::none}) {
    for (double smoothing : {0.0, 0.1}) {
      CAPTURE(static_cast<int>(reduction));
      CAPTURE(smoothing);
      const CrossEntropyOptions options{smoothing, reduction};
      check_grad("[4, 5] logits", [&](const In& in) { return cross_entropy(in[0], targets, options); }, {logits});
      const auto logits3 = leaf(uniform64({2, 3, 4}, 101));
      const axiom::Tensor targets3(int64s({3, 0, 1, 1, 2, 3}, {2, 3}));
      check_grad("[2, 3, 4] logits", [&](const In& in) { return cross_entropy(in[0], targets3, options); }, {logits3});
      const axiom::Tensor target1(core::scalar(2, Dtype::int64));
      check_grad("one row of logits", [&](const In& in) { return cross_entropy(in[0], target1, options); },
                 {leaf(uniform64({5}, 102))});
    }
  }
  check_grad("transposed logits", [&](const In& in) { return cross_entropy(in[0], axiom::Tensor(int64s({0, 3, 2}, {3}))); },
             {transposed_leaf(103)});
}

TEST_CASE("dropout with a fixed generator") {
  const auto x = leaf(uniform64({4, 5}, 110, 0.5, 2));  // nonzero: dropped elements are recognisable
  constexpr double p = 0.4;
  // The generator is made inside fn with the same seed: every call draws the same mask.
  const Fn dropped = [](const In& in) {
    core::Generator gen(1234);
    return dropout(in[0], p, /*training=*/true, gen);
  };
  // The mask is not trivial: some elements are zeroed, the others scaled by 1 / (1 - p).
  const std::vector<double> in = x.data().to_vector<double>(), out = dropped({x}).data().to_vector<double>();
  int zeroed = 0, kept = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    if (out[i] == 0) ++zeroed;
    else if (std::abs(out[i] - in[i] / (1 - p)) < 1e-12) ++kept;
  }
  CHECK(zeroed > 0);
  CHECK(kept > 0);
  CHECK(zeroed + kept == 20);
  check_grad("dropout", dropped, {x});
  check_grad("dropout times x (the mask meets a value)", [&](const In& in) { return mul(dropped(in), in[0]); }, {x});
  check_grad("dropout of a transposed leaf", dropped, {transposed_leaf(111)});
  check_grad("dropout in eval mode is the identity",
             [](const In& in) { return mul(dropout(in[0], p, /*training=*/false), 2.0); }, {x});
}

// --- views and shape ops ----------------------------------------------------------------------------

TEST_CASE("view methods: reshape, permute, transpose, movedim, flatten") {
  const auto x = leaf(uniform64({2, 3, 4}, 120));
  check_grad("reshape", [](const In& in) { return in[0].reshape({4, 6}); }, {x});
  check_grad("reshape with -1", [](const In& in) { return in[0].reshape({-1, 2}); }, {x});
  check_grad("permute", [](const In& in) { return in[0].permute({2, 0, 1}); }, {x});
  check_grad("permute with negative axes", [](const In& in) { return in[0].permute({1, -1, 0}); }, {x});
  check_grad("transpose", [](const In& in) { return in[0].transpose(0, 2); }, {x});
  check_grad("transpose with negative axes", [](const In& in) { return in[0].transpose(-1, -2); }, {x});
  check_grad("movedim forward", [](const In& in) { return in[0].movedim(0, 2); }, {x});
  check_grad("movedim backward", [](const In& in) { return in[0].movedim(-1, 0); }, {x});
  check_grad("flatten", [](const In& in) { return in[0].flatten(); }, {x});
  check_grad("reshape of a transposed leaf (a copy)", [](const In& in) { return in[0].reshape({12}); },
             {transposed_leaf(121)});
  // Through a nonlinearity with position-dependent weights, so that misplaced gradients show.
  const axiom::Tensor scale(uniform64({4, 2, 3}, 122));
  check_grad("permute then weights", [&](const In& in) { return mul(tanh(in[0].permute({2, 0, 1})), scale); }, {x});
}

TEST_CASE("view methods: slice with steps, narrow, select") {
  const auto x = leaf(uniform64({3, 4, 5}, 130));
  check_grad("slice step 2", [](const In& in) { return in[0].slice(2, 0, 5, 2); }, {x});
  check_grad("slice step 3 from 1", [](const In& in) { return in[0].slice(2, 1, 5, 3); }, {x});
  check_grad("slice with negative start", [](const In& in) { return in[0].slice(1, -3, 4, 2); }, {x});
  check_grad("slice of the first axis", [](const In& in) { return in[0].slice(0, 1, 3); }, {x});
  check_grad("narrow", [](const In& in) { return in[0].narrow(1, 1, 2); }, {x});
  check_grad("narrow of the last axis", [](const In& in) { return in[0].narrow(-1, 2, 3); }, {x});
  check_grad("select", [](const In& in) { return in[0].select(1, 2); }, {x});
  check_grad("select with a negative index", [](const In& in) { return in[0].select(0, -1); }, {x});
  check_grad("slices overlapping in a sum",
             [](const In& in) { return add(in[0].narrow(2, 0, 3), mul(in[0].narrow(2, 2, 3), 2.0)); }, {x});
  check_grad("slice of a sliced leaf", [](const In& in) { return in[0].slice(1, 0, 4, 3); }, {sliced_leaf(131)});
}

TEST_CASE("view methods: expand, squeeze, unsqueeze, contiguous, to") {
  const auto column = leaf(uniform64({3, 1}, 140));
  check_grad("expand", [](const In& in) { return in[0].expand({2, 3, 4}); }, {column});
  check_grad("expand with -1", [](const In& in) { return in[0].expand({2, -1, 3}); }, {column});
  const auto x = leaf(uniform64({2, 1, 3}, 141));
  check_grad("squeeze", [](const In& in) { return in[0].squeeze(1); }, {x});
  check_grad("squeeze with a negative axis", [](const In& in) { return in[0].squeeze(-2); }, {x});
  check_grad("unsqueeze", [](const In& in) { return in[0].unsqueeze(0); }, {x});
  check_grad("unsqueeze at the end", [](const In& in) { return in[0].unsqueeze(-1); }, {x});
  const auto t = transposed_leaf(142);
  check_grad("contiguous of a transposed leaf", [](const In& in) { return in[0].contiguous(); }, {t});
  check_grad("contiguous of a transposed view",
             [](const In& in) { return mul(in[0].transpose(0, 1).contiguous(), in[0].transpose(0, 1)); }, {t});
  // float32 rounding is about 1e-7: a step of 1e-2 keeps the finite differences to about 1e-5.
  GradcheckOptions coarse;
  coarse.eps = 1e-2;
  coarse.atol = 1e-4;
  check_grad("to float32 and back",
             [](const In& in) { return mul(in[0].to(Dtype::float32).to(Dtype::float64), 3.0); }, {t}, coarse);
}

TEST_CASE("concat, stack, pad and shift") {
  const auto a = leaf(uniform64({2, 1, 3}, 150)), b = leaf(uniform64({2, 2, 3}, 151)), c = leaf(uniform64({2, 3, 3}, 152));
  check_grad("concat along axis 1", [](const In& in) { return concat(in, 1); }, {a, b, c});
  const axiom::Tensor middle(uniform64({2, 2, 3}, 157));  // no gradient wanted
  check_grad("concat along axis -2 with a constant in the middle",
             [&](const In& in) { return concat({in[0], middle, in[1]}, -2); }, {a, c});
  const auto p = leaf(uniform64({2, 3}, 153)), q = leaf(uniform64({2, 3}, 154));
  check_grad("stack along axis 0", [](const In& in) { return stack(in, 0); }, {p, q});
  check_grad("stack along the last axis", [](const In& in) { return stack(in, -1); }, {p, q});
  check_grad("stack along axis 1, with a non-contiguous input", [&](const In& in) { return stack({in[0], in[1]}, 1); },
             {p, leaf(uniform64({3, 2}, 156).transpose(0, 1))});
  check_grad("pad", [](const In& in) { return pad(in[0], 1, 2, 1, 0.5); }, {p});
  check_grad("pad the first axis", [](const In& in) { return pad(in[0], 0, 0, 2); }, {p});
  check_grad("pad with a negative axis", [](const In& in) { return pad(in[0], -1, 1, 0, -1.0); }, {p});
  for (int64_t amount : {1, 2, -1, -2, 0, 5}) {
    CAPTURE(amount);
    check_grad("shift along axis 1", [amount](const In& in) { return shift(in[0], 1, amount); }, {p});
    check_grad("shift along axis 0", [amount](const In& in) { return shift(in[0], 0, amount); }, {p});
  }
  check_grad("shift along axis -1", [](const In& in) { return shift(in[0], -1, -1); }, {b});
}

// --- values used more than once ---------------------------------------------------------------------

TEST_CASE("values used twice") {
  const auto x = leaf(uniform64({3, 3}, 160));
  check_grad("mul(x, x)", [](const In& in) { return mul(in[0], in[0]); }, {x});
  check_grad("add(x, tanh(x))", [](const In& in) { return add(in[0], tanh(in[0])); }, {x});
  check_grad("x * x^T", [](const In& in) { return mul(in[0], in[0].transpose(0, 1)); }, {x});
  check_grad("matmul(x, x)", [](const In& in) { return matmul(in[0], in[0]); }, {x});
  check_grad("x * sum(x) (a broadcast reuse)", [](const In& in) { return mul(in[0], sum(in[0], {1}, true)); }, {x});
  check_grad("concat(x, exp(x))", [](const In& in) { return concat({in[0], exp(in[0])}, 0); }, {x});
  check_grad("a shared intermediate used three times",
             [](const In& in) {
               const axiom::Tensor h = sigmoid(in[0]);
               return add(mul(h, h), softmax(h, 0));
             },
             {x});
  check_grad("one leaf as both operands of a broadcast",
             [](const In& in) { return div(in[0], add(in[0].select(0, 1), 3.0)); }, {x});
}

// --- projection mode ---------------------------------------------------------------------------------

TEST_CASE("projection mode on a larger input") {
  const auto x = leaf(uniform64({16, 24}, 170)), w = leaf(uniform64({24, 12}, 171, -0.3, 0.3));
  GradcheckOptions options;
  options.full_jacobian = false;
  options.projections = 6;
  check_grad("log_softmax(tanh(x @ w))", [](const In& in) { return log_softmax(tanh(matmul(in[0], in[1])), -1); },
             {x, w}, options);
  options.seed = 5;
  check_grad("layer_norm and gelu", [](const In& in) { return gelu(layer_norm(in[0], axiom::Tensor(), axiom::Tensor())); },
             {x}, options);
}
