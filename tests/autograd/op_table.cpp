// The op table (op_table.h): every differentiable op with its sample inputs, section by section.
// Each case says what it computes twice: in axiom (the C++ function) and in PyTorch (a Python
// expression over the inputs a, b, c, d, e, which tests/python/test_ops_vs_torch.py evaluates).
#include "tests/autograd/op_table.h"

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>

#include "nn/local.h"

namespace axiom::test {

namespace {

using In = std::vector<Tensor>;

Tensor strided_leaf(const core::Tensor& view) {
  if (view.is_contiguous()) throw std::logic_error("op table: a strided leaf's view is contiguous");
  return leaf(view);
}

// A [3, 4] leaf whose memory is the transpose of a [4, 3] buffer.
Tensor transposed_leaf(uint64_t seed, double low = -2, double high = 2) {
  return strided_leaf(uniform64({4, 3}, seed, low, high).transpose(0, 1));
}

// A [3, 4] leaf that views every other row and column of a [7, 9] buffer.
Tensor sliced_leaf(uint64_t seed, double low = -2, double high = 2) {
  return strided_leaf(uniform64({7, 9}, seed, low, high).slice(0, 1, 7, 2).slice(1, 0, 8, 2));
}

// An input that wants no gradient: indices, masks, targets, fixed operands.
Tensor constant(const core::Tensor& value) { return Tensor(value); }

class Table {
 public:
  void add(std::string op, std::string what, In inputs, Fn f, std::string pytorch, GradcheckOptions options = {}) {
    cases.push_back({std::move(op), std::move(what), std::move(inputs), std::move(f), std::move(pytorch), options});
  }
  std::vector<OpCase> cases;
};

std::string axes_str(const std::vector<int64_t>& axes) { return "axes " + core::shape_str(axes); }

// Python's spelling of a reduction's axes over an input of `rank` axes: {} (every axis) is (0, 1, 2).
std::string python_axes(const std::vector<int64_t>& axes, int64_t rank) {
  std::vector<int64_t> listed = axes;
  if (listed.empty()) {
    for (int64_t axis = 0; axis < rank; ++axis) listed.push_back(axis);
  }
  std::string text = "(";
  for (size_t i = 0; i < listed.size(); ++i) text += (i ? ", " : "") + std::to_string(listed[i]);
  return text + (listed.size() == 1 ? ",)" : ")");
}

std::string python_bool(bool value) { return value ? "True" : "False"; }

// --- elementwise ------------------------------------------------------------------------------------

void binary_ops(Table& t) {
  const auto a = leaf(uniform64({3, 1, 4}, 1)), b = leaf(uniform64({5, 1}, 2));
  const std::string broadcast = "broadcast [3, 1, 4] with [5, 1]";
  t.add(
      "add", broadcast, {a, b}, [](const In& in) { return add(in[0], in[1]); }, "torch.add(a, b)");
  t.add(
      "sub", broadcast, {a, b}, [](const In& in) { return sub(in[0], in[1]); }, "torch.sub(a, b)");
  t.add(
      "mul", broadcast, {a, b}, [](const In& in) { return mul(in[0], in[1]); }, "torch.mul(a, b)");
  t.add(
      "maximum", broadcast, {a, b}, [](const In& in) { return maximum(in[0], in[1]); }, "torch.maximum(a, b)");
  t.add(
      "minimum", broadcast, {a, b}, [](const In& in) { return minimum(in[0], in[1]); }, "torch.minimum(a, b)");
  t.add(
      "div", broadcast, {a, leaf(away_from_zero({5, 1}, 3))}, [](const In& in) { return div(in[0], in[1]); },
      "torch.div(a, b)");
  t.add(
      "pow", broadcast + ", a tensor exponent",
      {leaf(uniform64({3, 1, 4}, 4, 0.5, 2)), leaf(uniform64({5, 1}, 5, -1.5, 1.5))},
      [](const In& in) { return pow(in[0], in[1]); }, "torch.pow(a, b)");

  // One operand a constant (no gradient wanted).
  const auto x = leaf(uniform64({2, 3}, 6));
  const auto fixed = constant(away_from_zero({3}, 7));
  t.add(
      "add", "second operand constant", {x, fixed}, [](const In& in) { return add(in[0], in[1]); }, "a + b");
  t.add(
      "sub", "first operand constant", {x, fixed}, [](const In& in) { return sub(in[1], in[0]); }, "b - a");
  t.add(
      "mul", "first operand constant", {x, fixed}, [](const In& in) { return mul(in[1], in[0]); }, "b * a");
  t.add(
      "div", "second operand constant", {x, fixed}, [](const In& in) { return div(in[0], in[1]); }, "a / b");
  t.add(
      "div", "first operand constant", {leaf(away_from_zero({2, 3}, 8)), fixed},
      [](const In& in) { return div(in[1], in[0]); }, "b / a");
  t.add(
      "pow", "a constant exponent tensor", {leaf(uniform64({2, 3}, 9, 0.5, 2)), fixed},
      [](const In& in) { return pow(in[0], in[1]); }, "torch.pow(a, b)");
  t.add(
      "pow", "a constant base", {x, constant(uniform64({3}, 10, 0.5, 2))},
      [](const In& in) { return pow(in[1], in[0]); }, "torch.pow(b, a)");
  t.add(
      "maximum", "second operand constant", {x, fixed}, [](const In& in) { return maximum(in[0], in[1]); },
      "torch.maximum(a, b)");
  t.add(
      "minimum", "first operand constant", {x, fixed}, [](const In& in) { return minimum(in[1], in[0]); },
      "torch.minimum(b, a)");

  // Leaves whose memory is not contiguous.
  const auto p = transposed_leaf(11), q = sliced_leaf(12);
  const std::string strided = "a transposed and a sliced leaf";
  t.add(
      "add", strided, {p, q}, [](const In& in) { return add(in[0], in[1]); }, "torch.add(a, b)");
  t.add(
      "sub", strided, {p, q}, [](const In& in) { return sub(in[0], in[1]); }, "torch.sub(a, b)");
  t.add(
      "mul", strided, {p, q}, [](const In& in) { return mul(in[0], in[1]); }, "torch.mul(a, b)");
  t.add(
      "maximum", strided, {p, q}, [](const In& in) { return maximum(in[0], in[1]); }, "torch.maximum(a, b)");
  t.add(
      "minimum", strided, {p, q}, [](const In& in) { return minimum(in[0], in[1]); }, "torch.minimum(a, b)");
  t.add(
      "div", strided, {p, sliced_leaf(13, 0.5, 2)}, [](const In& in) { return div(in[0], in[1]); }, "torch.div(a, b)");
  t.add(
      "pow", strided, {transposed_leaf(14, 0.5, 2), q}, [](const In& in) { return pow(in[0], in[1]); },
      "torch.pow(a, b)");

  // Empty tensors: [0, 3] with [3].
  const auto empty = leaf(uniform64({0, 3}, 15)), row = leaf(uniform64({3}, 16, 0.5, 2));
  const std::string with_row = "empty [0, 3] with [3]";
  t.add(
      "add", with_row, {empty, row}, [](const In& in) { return add(in[0], in[1]); }, "torch.add(a, b)");
  t.add(
      "mul", with_row, {empty, row}, [](const In& in) { return mul(in[0], in[1]); }, "torch.mul(a, b)");
  t.add(
      "div", with_row, {empty, row}, [](const In& in) { return div(in[0], in[1]); }, "torch.div(a, b)");
}

void scalar_overloads(Table& t) {
  const auto x = leaf(uniform64({2, 3}, 15));
  const auto positive = leaf(uniform64({2, 3}, 16, 0.3, 2));
  t.add(
      "add", "a scalar", {x}, [](const In& in) { return add(in[0], 0.7); }, "a + 0.7");
  t.add(
      "sub", "a scalar", {x}, [](const In& in) { return sub(in[0], 0.3); }, "a - 0.3");
  t.add(
      "mul", "a scalar", {x}, [](const In& in) { return mul(in[0], -1.7); }, "a * -1.7");
  t.add(
      "div", "a scalar", {x}, [](const In& in) { return div(in[0], 2.5); }, "a / 2.5");
  t.add(
      "pow", "exponent 3", {x}, [](const In& in) { return pow(in[0], 3.0); }, "a ** 3.0");
  t.add(
      "pow", "exponent 2, of negatives too", {x}, [](const In& in) { return pow(in[0], 2.0); }, "a ** 2.0");
  t.add(
      "pow", "exponent 0.5", {positive}, [](const In& in) { return pow(in[0], 0.5); }, "a ** 0.5");
  t.add(
      "pow", "exponent -1.5", {positive}, [](const In& in) { return pow(in[0], -1.5); }, "a ** -1.5");
}

void unary_ops(Table& t) {
  const auto x = leaf(uniform64({2, 3}, 17));
  const auto nonzero = leaf(away_from_zero({2, 3}, 18));
  const auto positive = leaf(uniform64({2, 3}, 19, 0.3, 2));
  t.add(
      "neg", "[2, 3]", {x}, [](const In& in) { return neg(in[0]); }, "torch.neg(a)");
  t.add(
      "abs", "[2, 3], away from 0", {nonzero}, [](const In& in) { return abs(in[0]); }, "torch.abs(a)");
  t.add(
      "exp", "[2, 3]", {x}, [](const In& in) { return exp(in[0]); }, "torch.exp(a)");
  t.add(
      "log", "[2, 3], positive", {positive}, [](const In& in) { return log(in[0]); }, "torch.log(a)");
  t.add(
      "sqrt", "[2, 3], positive", {positive}, [](const In& in) { return sqrt(in[0]); }, "torch.sqrt(a)");
  t.add(
      "rsqrt", "[2, 3], positive", {positive}, [](const In& in) { return rsqrt(in[0]); }, "torch.rsqrt(a)");
  t.add(
      "tanh", "[2, 3]", {x}, [](const In& in) { return tanh(in[0]); }, "torch.tanh(a)");
  t.add(
      "sigmoid", "[2, 3]", {x}, [](const In& in) { return sigmoid(in[0]); }, "torch.sigmoid(a)");
  t.add(
      "relu", "[2, 3], away from 0", {nonzero}, [](const In& in) { return relu(in[0]); }, "torch.relu(a)");
  t.add(
      "gelu", "[2, 3]", {x}, [](const In& in) { return gelu(in[0]); }, "F.gelu(a)");
  t.add(
      "gelu_tanh", "[2, 3]", {x}, [](const In& in) { return gelu_tanh(in[0]); }, "F.gelu(a, approximate='tanh')");

  const auto sliced = sliced_leaf(20), transposed = transposed_leaf(21, 0.3, 2);
  t.add(
      "exp", "a sliced leaf", {sliced}, [](const In& in) { return exp(in[0]); }, "torch.exp(a)");
  t.add(
      "tanh", "a sliced leaf", {sliced}, [](const In& in) { return tanh(in[0]); }, "torch.tanh(a)");
  t.add(
      "gelu", "a sliced leaf", {sliced}, [](const In& in) { return gelu(in[0]); }, "F.gelu(a)");
  t.add(
      "log", "a transposed leaf", {transposed}, [](const In& in) { return log(in[0]); }, "torch.log(a)");
  t.add(
      "rsqrt", "a transposed leaf", {transposed}, [](const In& in) { return rsqrt(in[0]); }, "torch.rsqrt(a)");
  t.add(
      "tanh", "empty [2, 0]", {leaf(uniform64({2, 0}, 22))}, [](const In& in) { return tanh(in[0]); }, "torch.tanh(a)");

  const auto a = leaf(uniform64({2, 3}, 22)), b = leaf(away_from_zero({3}, 23));
  t.add(
      "operator+", "a + b", {a, b}, [](const In& in) { return in[0] + in[1]; }, "a + b");
  t.add(
      "operator-", "a - b", {a, b}, [](const In& in) { return in[0] - in[1]; }, "a - b");
  t.add(
      "operator*", "a * b", {a, b}, [](const In& in) { return in[0] * in[1]; }, "a * b");
  t.add(
      "operator/", "a / b", {a, b}, [](const In& in) { return in[0] / in[1]; }, "a / b");
  t.add(
      "operator-", "-a", {a}, [](const In& in) { return -in[0]; }, "-a");
}

void where_and_masked_fill(Table& t) {
  const auto a = leaf(uniform64({3, 4}, 24)), b = leaf(uniform64({4}, 25));
  const auto rows = constant(core::from_vector<uint8_t>({1, 0, 1}, {3, 1}));
  const auto columns = constant(core::from_vector<uint8_t>({0, 1, 1, 0}, {4}));
  t.add(
      "where", "a [3, 1] condition", {rows, a, b}, [](const In& in) { return where(in[0], in[1], in[2]); },
      "torch.where(a.bool(), b, c)");
  t.add(
      "where", "a [4] condition, along the other axis", {columns, a, b},
      [](const In& in) { return where(in[0], in[1], in[2]); }, "torch.where(a.bool(), b, c)");
  const auto mask = constant(core::from_vector<uint8_t>({1, 0, 0, 1}, {1, 4}));
  t.add(
      "masked_fill", "a [1, 4] mask", {a, mask}, [](const In& in) { return masked_fill(in[0], in[1], 9.0); },
      "a.masked_fill(b.bool(), 9.0)");
  t.add(
      "masked_fill", "a transposed leaf", {transposed_leaf(26), mask},
      [](const In& in) { return masked_fill(in[0], in[1], -3.0); }, "a.masked_fill(b.bool(), -3.0)");
}

// --- reductions ---------------------------------------------------------------------------------------

void reductions(Table& t) {
  const std::vector<std::vector<int64_t>> axis_choices = {{}, {0}, {1}, {-1}, {0, 2}, {1, 2}, {0, 1, 2}};
  const auto x = leaf(uniform64({2, 3, 4}, 30)), y = leaf(uniform64({2, 3, 4}, 31));
  const auto z = leaf(uniform64({2, 3, 4}, 32));  // continuous values: no ties
  for (const auto& axes : axis_choices) {
    for (bool keepdim : {false, true}) {
      const std::string what = axes_str(axes) + (keepdim ? ", keepdim" : "");
      const std::string over = "dim=" + python_axes(axes, 3) + ", keepdim=" + python_bool(keepdim);
      t.add(
          "sum", what, {x}, [=](const In& in) { return sum(in[0], axes, keepdim); }, "a.sum(" + over + ")");
      t.add(
          "mean", what, {x}, [=](const In& in) { return mean(in[0], axes, keepdim); }, "a.mean(" + over + ")");
      for (int64_t correction : {0, 1}) {
        t.add(
            "var", what + ", correction " + std::to_string(correction), {y},
            [=](const In& in) { return var(in[0], axes, keepdim, correction); },
            "torch.var(a, " + over + ", unbiased=" + python_bool(correction == 1) + ")");
      }
      t.add(
          "max", what, {z}, [=](const In& in) { return axiom::max(in[0], axes, keepdim); },
          "torch.amax(a, " + over + ")");
      t.add(
          "min", what, {z}, [=](const In& in) { return axiom::min(in[0], axes, keepdim); },
          "torch.amin(a, " + over + ")");
    }
  }
  const auto p = transposed_leaf(33), q = sliced_leaf(34);
  t.add(
      "sum", "a transposed leaf", {p}, [](const In& in) { return sum(in[0], {1}); }, "a.sum(1)");
  t.add(
      "mean", "a sliced leaf", {q}, [](const In& in) { return mean(in[0], {0}, true); }, "a.mean(0, keepdim=True)");
  t.add(
      "var", "a transposed leaf", {p}, [](const In& in) { return var(in[0], {1}, false, 1); }, "torch.var(a, 1)");
  t.add(
      "max", "a sliced leaf", {q}, [](const In& in) { return axiom::max(in[0], {0}); }, "torch.amax(a, 0)");
  t.add(
      "min", "a transposed leaf", {p}, [](const In& in) { return axiom::min(in[0], {1}); }, "torch.amin(a, 1)");
  const auto empty = leaf(uniform64({0, 4}, 35));
  t.add(
      "sum", "empty [0, 4], over the empty axis", {empty}, [](const In& in) { return sum(in[0], {0}); }, "a.sum(0)");
  t.add(
      "sum", "empty [0, 4], over the other axis", {empty}, [](const In& in) { return sum(in[0], {1}); }, "a.sum(1)");
}

// --- indexing -------------------------------------------------------------------------------------------

void indexing(Table& t) {
  const auto x = leaf(uniform64({3, 4}, 35));
  const auto rows = constant(int64s({2, 0, 0, 1, 1, 2, 0, 2}, {2, 4}));  // axis 0: [2, 4]
  const auto columns = constant(int64s({3, 3, 0, 1, 2, 1}, {3, 2}));     // axis 1: [3, 2]
  t.add(
      "gather", "axis 0, an index used twice", {x, rows}, [](const In& in) { return gather(in[0], 0, in[1]); },
      "torch.gather(a, 0, b)");
  t.add(
      "gather", "axis 1", {x, columns}, [](const In& in) { return gather(in[0], 1, in[1]); }, "torch.gather(a, 1, b)");
  t.add(
      "gather", "axis -1 of a transposed leaf", {transposed_leaf(36), columns},
      [](const In& in) { return gather(in[0], -1, in[1]); }, "torch.gather(a, -1, b)");
  const auto picks = constant(int64s({2, 0, 2, 1, 2}, {5}));  // slice 2 three times
  t.add(
      "index_select", "axis 0, a slice picked three times", {x, picks},
      [](const In& in) { return index_select(in[0], 0, in[1]); }, "torch.index_select(a, 0, b)");
  t.add(
      "index_select", "axis -1 of a transposed leaf, through tanh",
      {transposed_leaf(37), constant(int64s({3, 1, 3}, {3}))},
      [](const In& in) { return tanh(index_select(in[0], -1, in[1])); }, "torch.tanh(torch.index_select(a, -1, b))");

  const auto weight = leaf(uniform64({5, 3}, 90));
  const auto indices = constant(int64s({1, 3, 1, 4, 1, 0}, {2, 3}));  // row 1 three times, row 2 never
  t.add(
      "embedding", "2-D indices, repeated", {weight, indices}, [](const In& in) { return embedding(in[0], in[1]); },
      "F.embedding(b, a)");
  t.add(
      "embedding", "1-D indices", {weight, constant(int64s({2, 2, 0}, {3}))},
      [](const In& in) { return embedding(in[0], in[1]); }, "F.embedding(b, a)");
  // Through a nonlinearity, so that the repeated rows' gradients differ from position to position.
  t.add(
      "embedding", "then tanh times position weights", {weight, indices, constant(uniform64({2, 3, 3}, 91))},
      [](const In& in) { return sum(mul(tanh(embedding(in[0], in[1])), in[2])); },
      "torch.sum(torch.tanh(F.embedding(b, a)) * c)");
}

// --- matmul -------------------------------------------------------------------------------------------

void matmuls(Table& t) {
  struct Shapes {
    const char* what;
    Shape a, b;
  };
  const Shapes cases[] = {
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
      {"empty rows [0, 4] @ [4, 2]", {0, 4}, {4, 2}},
      {"empty inner axis [3, 0] @ [0, 2]", {3, 0}, {0, 2}},
  };
  const auto product = [](const In& in) { return matmul(in[0], in[1]); };
  const std::string torch_product = "torch.matmul(a, b)";
  uint64_t seed = 40;
  for (const Shapes& c : cases) {
    t.add("matmul", c.what, {leaf(uniform64(c.a, seed)), leaf(uniform64(c.b, seed + 1))}, product, torch_product);
    seed += 2;
  }
  const auto a = transposed_leaf(60);                            // [3, 4], transposed memory
  const auto b = leaf(uniform64({4, 4}, 61).slice(1, 0, 4, 2));  // [4, 2], every other column
  t.add("matmul", "transposed @ sliced", {a, b}, product, torch_product);
  t.add("matmul", "permuted batch @ shared weight",
        {leaf(uniform64({4, 3, 2}, 62).permute({2, 1, 0})), leaf(uniform64({4, 5}, 63))}, product, torch_product);
  t.add("matmul", "only the left operand wants a gradient", {a, constant(uniform64({4, 2}, 64))}, product,
        torch_product);
  t.add("matmul", "only the shared weight wants a gradient",
        {constant(uniform64({2, 3, 4}, 65)), leaf(uniform64({4, 5}, 66))}, product, torch_product);

  const auto w = leaf(uniform64({3, 4}, 75)), bias = leaf(uniform64({4}, 76));
  const auto affine = [](const In& in) { return linear(in[0], in[1], in[2]); };
  for (const Shape& shape : {Shape{3}, Shape{5, 3}, Shape{2, 5, 3}}) {
    t.add("linear", "x " + core::shape_str(shape), {leaf(uniform64(shape, 77)), w, bias}, affine, "a @ b + c");
  }
  t.add("linear", "a transposed x", {leaf(uniform64({3, 5}, 78).transpose(0, 1)), w, bias}, affine, "a @ b + c");
  t.add(
      "linear", "no bias", {leaf(uniform64({5, 3}, 79)), w}, [](const In& in) { return linear(in[0], in[1], {}); },
      "a @ b");
  t.add(
      "linear", "a transposed weight", {leaf(uniform64({2, 5, 3}, 74)), leaf(uniform64({4, 3}, 73)), bias},
      [](const In& in) { return linear(in[0], in[1].transpose(0, 1), in[2]); }, "a @ b.T + c");
}

// --- neural-network ops -------------------------------------------------------------------------------

void normalisations(Table& t) {
  const auto x = leaf(uniform64({2, 3, 4}, 70));
  for (int64_t axis : {0, 1, 2, -1, -3}) {
    const std::string what = "axis " + std::to_string(axis);
    t.add(
        "softmax", what, {x}, [axis](const In& in) { return softmax(in[0], axis); },
        "torch.softmax(a, " + std::to_string(axis) + ")");
    t.add(
        "log_softmax", what, {x}, [axis](const In& in) { return log_softmax(in[0], axis); },
        "torch.log_softmax(a, " + std::to_string(axis) + ")");
  }
  const auto transposed = transposed_leaf(71);
  t.add(
      "softmax", "a transposed leaf", {transposed}, [](const In& in) { return softmax(in[0], 0); },
      "torch.softmax(a, 0)");
  t.add(
      "log_softmax", "a transposed leaf", {transposed}, [](const In& in) { return log_softmax(in[0], -1); },
      "torch.log_softmax(a, -1)");
  t.add(
      "softmax", "empty [0, 4]", {leaf(uniform64({0, 4}, 72))}, [](const In& in) { return softmax(in[0], -1); },
      "torch.softmax(a, -1)");

  const auto rows = leaf(uniform64({3, 5}, 80));
  const auto weight = leaf(uniform64({5}, 81, 0.5, 1.5)), bias = leaf(uniform64({5}, 82));
  const auto normalized = [](const In& in) { return layer_norm(in[0], in[1], in[2]); };
  const std::string torch_normalized = "F.layer_norm(a, (5,), b, c)";
  t.add("layer_norm", "weight and bias", {rows, weight, bias}, normalized, torch_normalized);
  t.add(
      "layer_norm", "neither weight nor bias", {rows}, [](const In& in) { return layer_norm(in[0], {}, {}); },
      "F.layer_norm(a, (5,))");
  t.add(
      "layer_norm", "weight only", {rows, weight}, [](const In& in) { return layer_norm(in[0], in[1], {}); },
      "F.layer_norm(a, (5,), b)");
  t.add(
      "layer_norm", "bias only", {rows, bias}, [](const In& in) { return layer_norm(in[0], {}, in[1]); },
      "F.layer_norm(a, (5,)) + b");  // (PyTorch 1.13's second derivative fails with weight None and a bias)
  t.add("layer_norm", "constant weight and bias, gradient to x", {rows, weight.detach(), bias.detach()}, normalized,
        torch_normalized);
  t.add("layer_norm", "gradients to weight and bias only", {rows.detach(), weight, bias}, normalized, torch_normalized);
  t.add(
      "layer_norm", "3-D input, eps 1e-3", {leaf(uniform64({2, 2, 5}, 83)), weight, bias},
      [](const In& in) { return layer_norm(in[0], in[1], in[2], 1e-3); }, "F.layer_norm(a, (5,), b, c, eps=1e-3)");
  t.add("layer_norm", "1-D input", {leaf(uniform64({5}, 84)), weight, bias}, normalized, torch_normalized);
  t.add("layer_norm", "transposed input", {leaf(uniform64({5, 3}, 85).transpose(0, 1)), weight, bias}, normalized,
        torch_normalized);
}

// PyTorch's spelling of an activation applied to the input `a`.
std::string torch_activation(Activation act) {
  return act == Activation::gelu        ? "F.gelu(a)"
         : act == Activation::gelu_tanh ? "F.gelu(a, approximate='tanh')"
                                        : "torch.relu(a)";
}

void fused_linears(Table& t) {
  const auto w = leaf(uniform64({3, 4}, 79)), b = leaf(uniform64({4}, 80));
  for (Activation act : {Activation::gelu, Activation::gelu_tanh, Activation::relu}) {
    const std::string name = act == Activation::gelu ? "gelu" : act == Activation::gelu_tanh ? "gelu_tanh" : "relu";
    for (const Shape& shape : {Shape{3}, Shape{5, 3}, Shape{2, 5, 3}}) {
      const auto h = leaf(away_from_zero(shape, 81));  // relu's kink at 0 stays away from the finite differences
      const std::string what = name + ", h " + core::shape_str(shape);
      t.add(
          "activation_linear", what, {h, w, b},
          [act](const In& in) { return activation_linear(act, in[0], in[1], in[2]); },
          torch_activation(act) + " @ b + c");
      t.add(
          "activation_linear", what + ", no bias", {h, w},
          [act](const In& in) { return activation_linear(act, in[0], in[1], {}); }, torch_activation(act) + " @ b");
    }
  }
  t.add(
      "activation_linear", "gelu_tanh, a transposed weight",
      {leaf(uniform64({2, 5, 3}, 78)), leaf(uniform64({4, 3}, 77)), b},
      [](const In& in) { return activation_linear(Activation::gelu_tanh, in[0], in[1].transpose(0, 1), in[2]); },
      "F.gelu(a, approximate='tanh') @ b.T + c");
  const auto nw = leaf(uniform64({3}, 83)), nb = leaf(uniform64({3}, 84));
  const auto w2 = leaf(uniform64({3, 4}, 85)), b2 = leaf(uniform64({4}, 86));
  for (const Shape& shape : {Shape{3}, Shape{5, 3}, Shape{2, 5, 3}}) {
    const auto x = leaf(uniform64(shape, 87));
    const std::string what = "x " + core::shape_str(shape);
    t.add(
        "layer_norm_linear", what, {x, nw, nb, w2, b2},
        [](const In& in) { return layer_norm_linear(in[0], in[1], in[2], 1e-5, in[3], in[4]); },
        "F.layer_norm(a, (3,), b, c) @ d + e");
    t.add(
        "layer_norm_linear", what + ", without the parameters that may be left out", {x, w2},
        [](const In& in) { return layer_norm_linear(in[0], {}, {}, 1e-5, in[1], {}); }, "F.layer_norm(a, (3,)) @ b");
  }
  t.add(
      "layer_norm_linear", "a transposed weight",
      {leaf(uniform64({2, 5, 3}, 88)), nw, nb, leaf(uniform64({4, 3}, 89)), b2},
      [](const In& in) { return layer_norm_linear(in[0], in[1], in[2], 1e-5, in[3].transpose(0, 1), in[4]); },
      "F.layer_norm(a, (3,), b, c) @ d.T + e");
  // a feed-forward layer: normalized, projected up, activated, projected down (under bfloat16
  // products, one fused op: tests/autograd/test_bfloat16_products.cpp)
  const auto up_w = leaf(uniform64({3, 5}, 90)), up_b = leaf(uniform64({5}, 91));
  const auto down_w = leaf(uniform64({5, 4}, 92)), down_b = leaf(uniform64({4}, 93));
  t.add(
      "layer_norm_feedforward", "gelu, x [2, 5, 3]",
      {leaf(uniform64({2, 5, 3}, 94)), nw, nb, up_w, up_b, down_w, down_b},
      [](const In& in) {
        return layer_norm_feedforward(in[0], in[1], in[2], 1e-5, in[3], in[4], Activation::gelu, in[5], in[6]);
      },
      "F.gelu(F.layer_norm(a, (3,), b, c) @ d + e) @ f + g");
  t.add(
      "layer_norm_feedforward", "gelu_tanh, x [5, 3], without the parameters that may be left out",
      {leaf(uniform64({5, 3}, 95)), up_w, down_w},
      [](const In& in) {
        return layer_norm_feedforward(in[0], {}, {}, 1e-5, in[1], {}, Activation::gelu_tanh, in[2], {});
      },
      "F.gelu(F.layer_norm(a, (3,)) @ b, approximate='tanh') @ c");
}

void attentions(Table& t) {
  const auto qkv = leaf(uniform64({2, 3, 4, 12}, 86));
  for (int64_t axis : {1, 2}) {
    for (bool causal : {false, true}) {
      t.add(
          "attention", "axis " + std::to_string(axis) + (causal ? ", causal" : ""), {qkv},
          [=](const In& in) { return attention(in[0], axis, 2, AttentionMask::causal_if(causal)); },
          "attention(a, " + std::to_string(axis) + ", 2, causal=" + python_bool(causal) + ")");
    }
  }
  t.add(
      "attention", "a sequence, one head", {leaf(uniform64({2, 5, 6}, 87))},
      [](const In& in) { return attention(in[0], 1, 1, AttentionMask::causal()); }, "attention(a, 1, 1, causal=True)");
  t.add(
      "attention", "a strided qkv", {leaf(uniform64({12, 4}, 88).transpose(0, 1))},
      [](const In& in) { return attention(in[0], 0, 2, AttentionMask::all()); }, "attention(a, 0, 2)");
  // local attention's block patterns (fused on the CPU, composed on a device that does not fuse them)
  t.add(
      "attention", "local 2-D blocks on a 3 x 5 grid", {leaf(uniform64({2, 15, 12}, 89))},
      [](const In& in) { return attention(in[0], 1, 2, nn::local_mask({.rows = 2, .columns = 2}, 3, 5)); },
      "attention(a, 1, 2, bias=local_bias(2, 2, 3, 5))");
  t.add(
      "attention", "local 1-D blocks, the last padded", {leaf(uniform64({2, 7, 6}, 90))},
      [](const In& in) { return attention(in[0], 1, 1, nn::local_mask({.rows = 1, .columns = 3}, 1, 7)); },
      "attention(a, 1, 1, bias=local_bias(1, 3, 1, 7))");
  // a bias (relative positions' [..., H, L, L], and one broadcast from [L, L]): the composite path
  t.add(
      "attention", "a bias [B, H, L, L], causal", {leaf(uniform64({2, 4, 12}, 91)), leaf(uniform64({2, 2, 4, 4}, 92))},
      [](const In& in) { return attention(in[0], 1, 2, AttentionMask::causal(), in[1]); },
      "attention(a, 1, 2, causal=True, bias=b)");
  t.add(
      "attention", "a bias [L, L] broadcast", {leaf(uniform64({2, 4, 12}, 93)), leaf(uniform64({4, 4}, 94))},
      [](const In& in) { return attention(in[0], 1, 2, AttentionMask::all(), in[1]); }, "attention(a, 1, 2, bias=b)");
  // a layer's input normalized, projected to qkv and attended (under bfloat16 products, one fused
  // op: tests/autograd/test_bfloat16_products.cpp)
  const auto x = leaf(uniform64({2, 3, 4, 5}, 96)), nw = leaf(uniform64({5}, 97)), nb = leaf(uniform64({5}, 98));
  const auto w = leaf(uniform64({5, 12}, 99)), b = leaf(uniform64({12}, 100));
  t.add(
      "layer_norm_attention", "axis 2, causal", {x, nw, nb, w, b},
      [](const In& in) {
        return layer_norm_attention(in[0], in[1], in[2], 1e-5, in[3], in[4], 2, 2, AttentionMask::causal());
      },
      "attention(F.layer_norm(a, (5,), b, c) @ d + e, 2, 2, causal=True)");
  t.add(
      "layer_norm_attention", "axis 1, without the parameters that may be left out", {x, w},
      [](const In& in) { return layer_norm_attention(in[0], {}, {}, 1e-5, in[1], {}, 1, 2, AttentionMask::all()); },
      "attention(F.layer_norm(a, (5,)) @ b, 1, 2)");
  t.add(
      "attention_queries", "along axis 1, two heads", {leaf(uniform64({2, 3, 4, 12}, 95))},
      [](const In& in) { return attention_queries(in[0], 1, 2); }, "queries(a, 1, 2)");
}

void cross_entropies(Table& t) {
  const auto logits = leaf(uniform64({4, 5}, 100)), logits3 = leaf(uniform64({2, 3, 4}, 101)),
             row = leaf(uniform64({5}, 102));
  const auto targets = constant(int64s({1, 0, 4, 1}, {4})), targets3 = constant(int64s({3, 0, 1, 1, 2, 3}, {2, 3}));
  const auto target1 = constant(core::scalar(2, Dtype::int64));
  for (Reduction reduction : {Reduction::mean, Reduction::sum, Reduction::none}) {
    for (double smoothing : {0.0, 0.1}) {
      const CrossEntropyOptions options{smoothing, reduction};
      const std::string reduced = reduction == Reduction::mean ? "mean" : reduction == Reduction::sum ? "sum" : "none";
      const std::string smoothed = smoothing == 0 ? "0" : "0.1";
      const std::string what = reduced + ", smoothing " + smoothed;
      const auto loss = [options](const In& in) { return cross_entropy(in[0], in[1], options); };
      const std::string torch_loss = "cross_entropy(a, b, " + smoothed + ", '" + reduced + "')";
      t.add("cross_entropy", what + ", [4, 5] logits", {logits, targets}, loss, torch_loss);
      t.add("cross_entropy", what + ", [2, 3, 4] logits", {logits3, targets3}, loss, torch_loss);
      t.add("cross_entropy", what + ", one row of logits", {row, target1}, loss, torch_loss);
    }
  }
  t.add(
      "cross_entropy", "transposed logits", {transposed_leaf(103), constant(int64s({0, 3, 2}, {3}))},
      [](const In& in) { return cross_entropy(in[0], in[1]); }, "cross_entropy(a, b)");
}

void dropouts(Table& t) {
  // The generator is made inside f with the same seed: every call draws the same mask
  // (test_gradcheck_ops.cpp checks that the mask is not trivial). PyTorch cannot draw axiom's
  // mask: its side reads the mask from axiom's output, `ours` (no input here is 0).
  constexpr double p = 0.4;
  const auto x = leaf(uniform64({4, 5}, 110, 0.5, 2));
  const auto dropped = [](const In& in) {
    Generator gen(1234);
    return dropout(in[0], p, /*training=*/true, gen);
  };
  t.add("dropout", "training, p = 0.4", {x}, dropped, "a * (ours != 0) / 0.6");
  t.add(
      "dropout", "times x (the mask meets a value)", {x}, [dropped](const In& in) { return mul(dropped(in), in[0]); },
      "a * (ours != 0) / 0.6 * a");
  t.add("dropout", "a transposed leaf", {transposed_leaf(111)}, dropped, "a * (ours != 0) / 0.6");
  t.add(
      "dropout", "eval mode is the identity", {x},
      [](const In& in) { return mul(dropout(in[0], p, /*training=*/false), 2.0); }, "a * 2.0");
}

// --- views and shape ops ----------------------------------------------------------------------------

void views(Table& t) {
  const auto x = leaf(uniform64({2, 3, 4}, 120));
  t.add(
      "reshape", "[2, 3, 4] to [4, 6]", {x},
      [](const In& in) {
        return in[0].reshape({4, 6});
      },
      "a.reshape(4, 6)");
  t.add(
      "reshape", "with -1", {x},
      [](const In& in) {
        return in[0].reshape({-1, 2});
      },
      "a.reshape(-1, 2)");
  t.add(
      "reshape", "of a transposed leaf (a copy)", {transposed_leaf(121)},
      [](const In& in) { return in[0].reshape({12}); }, "a.reshape(12)");
  t.add(
      "permute", "[2, 0, 1]", {x},
      [](const In& in) {
        return in[0].permute({2, 0, 1});
      },
      "a.permute(2, 0, 1)");
  t.add(
      "permute", "negative axes", {x},
      [](const In& in) {
        return in[0].permute({1, -1, 0});
      },
      "a.permute(1, -1, 0)");
  // Through a nonlinearity with position-dependent weights, so that misplaced gradients show.
  t.add(
      "permute", "then weights", {x, constant(uniform64({4, 2, 3}, 122))},
      [](const In& in) {
        return mul(tanh(in[0].permute({2, 0, 1})), in[1]);
      },
      "torch.tanh(a.permute(2, 0, 1)) * b");
  t.add(
      "transpose", "axes 0 and 2", {x}, [](const In& in) { return in[0].transpose(0, 2); }, "a.transpose(0, 2)");
  t.add(
      "transpose", "negative axes", {x}, [](const In& in) { return in[0].transpose(-1, -2); }, "a.transpose(-1, -2)");
  t.add(
      "movedim", "forward", {x}, [](const In& in) { return in[0].movedim(0, 2); }, "a.movedim(0, 2)");
  t.add(
      "movedim", "backward", {x}, [](const In& in) { return in[0].movedim(-1, 0); }, "a.movedim(-1, 0)");
  t.add(
      "flatten", "[2, 3, 4]", {x}, [](const In& in) { return in[0].flatten(); }, "a.flatten()");

  const auto y = leaf(uniform64({3, 4, 5}, 130));
  t.add(
      "slice", "step 2", {y}, [](const In& in) { return in[0].slice(2, 0, 5, 2); }, "a[:, :, 0:5:2]");
  t.add(
      "slice", "step 3 from 1", {y}, [](const In& in) { return in[0].slice(2, 1, 5, 3); }, "a[:, :, 1:5:3]");
  t.add(
      "slice", "negative start", {y}, [](const In& in) { return in[0].slice(1, -3, 4, 2); }, "a[:, -3:4:2]");
  t.add(
      "slice", "the first axis", {y}, [](const In& in) { return in[0].slice(0, 1, 3); }, "a[1:3]");
  t.add(
      "slice", "of a sliced leaf", {sliced_leaf(131)}, [](const In& in) { return in[0].slice(1, 0, 4, 3); },
      "a[:, 0:4:3]");
  t.add(
      "slice", "empty", {y}, [](const In& in) { return in[0].slice(1, 2, 2); }, "a[:, 2:2]");
  t.add(
      "narrow", "axis 1", {y}, [](const In& in) { return in[0].narrow(1, 1, 2); }, "a.narrow(1, 1, 2)");
  t.add(
      "narrow", "the last axis", {y}, [](const In& in) { return in[0].narrow(-1, 2, 3); }, "a.narrow(-1, 2, 3)");
  t.add(
      "narrow", "overlapping narrows in a sum", {y},
      [](const In& in) { return add(in[0].narrow(2, 0, 3), mul(in[0].narrow(2, 2, 3), 2.0)); },
      "a.narrow(2, 0, 3) + a.narrow(2, 2, 3) * 2.0");
  t.add(
      "select", "axis 1", {y}, [](const In& in) { return in[0].select(1, 2); }, "a.select(1, 2)");
  t.add(
      "select", "a negative index", {y}, [](const In& in) { return in[0].select(0, -1); }, "a.select(0, -1)");

  const auto column = leaf(uniform64({3, 1}, 140));
  t.add(
      "expand", "[3, 1] to [2, 3, 4]", {column},
      [](const In& in) {
        return in[0].expand({2, 3, 4});
      },
      "a.expand(2, 3, 4)");
  t.add(
      "expand", "with -1", {column},
      [](const In& in) {
        return in[0].expand({2, -1, 3});
      },
      "a.expand(2, -1, 3)");
  const auto z = leaf(uniform64({2, 1, 3}, 141));
  t.add(
      "squeeze", "axis 1", {z}, [](const In& in) { return in[0].squeeze(1); }, "a.squeeze(1)");
  t.add(
      "squeeze", "a negative axis", {z}, [](const In& in) { return in[0].squeeze(-2); }, "a.squeeze(-2)");
  t.add(
      "unsqueeze", "axis 0", {z}, [](const In& in) { return in[0].unsqueeze(0); }, "a.unsqueeze(0)");
  t.add(
      "unsqueeze", "at the end", {z}, [](const In& in) { return in[0].unsqueeze(-1); }, "a.unsqueeze(-1)");
  const auto transposed = transposed_leaf(142);
  t.add(
      "contiguous", "a transposed leaf", {transposed}, [](const In& in) { return in[0].contiguous(); },
      "a.contiguous()");
  t.add(
      "contiguous", "a transposed view", {transposed},
      [](const In& in) { return mul(in[0].transpose(0, 1).contiguous(), in[0].transpose(0, 1)); },
      "a.transpose(0, 1).contiguous() * a.transpose(0, 1)");
  // float32 rounding is about 1e-7: a step of 1e-2 keeps the finite differences to about 1e-5.
  GradcheckOptions coarse;
  coarse.eps = 1e-2;
  coarse.atol = 1e-4;
  t.add(
      "to", "float32 and back", {transposed},
      [](const In& in) { return mul(in[0].to(Dtype::float32).to(Dtype::float64), 3.0); },
      "a.to(torch.float32).to(torch.float64) * 3.0", coarse);
  t.add(
      "to", "the CPU and back to the input's device", {transposed},
      [](const In& in) { return mul(in[0], in[0].to(Device::cpu()).to(in[0].device())); }, "a * a");
}

void joins_and_shifts(Table& t) {
  const auto a = leaf(uniform64({2, 1, 3}, 150)), b = leaf(uniform64({2, 2, 3}, 151)),
             c = leaf(uniform64({2, 3, 3}, 152));
  t.add(
      "concat", "axis 1", {a, b, c}, [](const In& in) { return concat(in, 1); }, "torch.cat([a, b, c], 1)");
  t.add(
      "concat", "axis -2, a constant in the middle", {a, constant(uniform64({2, 2, 3}, 157)), c},
      [](const In& in) { return concat(in, -2); }, "torch.cat([a, b, c], -2)");
  t.add(
      "concat", "with an empty tensor", {a, leaf(uniform64({2, 0, 3}, 158))},
      [](const In& in) { return concat(in, 1); }, "torch.cat([a, b], 1)");
  const auto p = leaf(uniform64({2, 3}, 153)), q = leaf(uniform64({2, 3}, 154));
  t.add(
      "stack", "axis 0", {p, q}, [](const In& in) { return stack(in, 0); }, "torch.stack([a, b], 0)");
  t.add(
      "stack", "the last axis", {p, q}, [](const In& in) { return stack(in, -1); }, "torch.stack([a, b], -1)");
  t.add(
      "stack", "axis 1, a non-contiguous input", {p, leaf(uniform64({3, 2}, 156).transpose(0, 1))},
      [](const In& in) { return stack(in, 1); }, "torch.stack([a, b], 1)");
  t.add(
      "pad", "axis 1, 2 before and 1 after", {p}, [](const In& in) { return pad(in[0], 1, 2, 1, 0.5); },
      "pad(a, 1, 2, 1, 0.5)");
  t.add(
      "pad", "the first axis", {p}, [](const In& in) { return pad(in[0], 0, 0, 2); }, "pad(a, 0, 0, 2)");
  t.add(
      "pad", "a negative axis", {p}, [](const In& in) { return pad(in[0], -1, 1, 0, -1.0); }, "pad(a, -1, 1, 0, -1.0)");
  for (int64_t amount : {1, 2, -1, -2, 0, 5}) {
    const std::string by = std::to_string(amount);
    t.add(
        "shift", "axis 1 by " + by, {p}, [amount](const In& in) { return shift(in[0], 1, amount); },
        "shift(a, 1, " + by + ")");
    t.add(
        "shift", "axis 0 by " + by, {p}, [amount](const In& in) { return shift(in[0], 0, amount); },
        "shift(a, 0, " + by + ")");
  }
  t.add(
      "shift", "axis -1", {b}, [](const In& in) { return shift(in[0], -1, -1); }, "shift(a, -1, -1)");
}

// --- values used more than once, and larger inputs in projection mode ---------------------------------

void composites(Table& t) {
  const auto x = leaf(uniform64({3, 3}, 160));
  t.add(
      "composite", "mul(x, x)", {x}, [](const In& in) { return mul(in[0], in[0]); }, "a * a");
  t.add(
      "composite", "add(x, tanh(x))", {x}, [](const In& in) { return add(in[0], tanh(in[0])); }, "a + torch.tanh(a)");
  t.add(
      "composite", "x * x^T", {x}, [](const In& in) { return mul(in[0], in[0].transpose(0, 1)); }, "a * a.T");
  t.add(
      "composite", "matmul(x, x)", {x}, [](const In& in) { return matmul(in[0], in[0]); }, "a @ a");
  t.add(
      "composite", "x * sum(x) (a broadcast reuse)", {x},
      [](const In& in) { return mul(in[0], sum(in[0], {1}, true)); }, "a * a.sum(1, keepdim=True)");
  t.add(
      "composite", "concat(x, exp(x))", {x},
      [](const In& in) {
        return concat({in[0], exp(in[0])}, 0);
      },
      "torch.cat([a, torch.exp(a)], 0)");
  t.add(
      "composite", "a shared intermediate used three times", {x},
      [](const In& in) {
        const Tensor h = sigmoid(in[0]);
        return add(mul(h, h), softmax(h, 0));
      },
      "torch.sigmoid(a) * torch.sigmoid(a) + torch.softmax(torch.sigmoid(a), 0)");
  t.add(
      "composite", "one leaf as both operands of a broadcast", {x},
      [](const In& in) { return div(in[0], add(in[0].select(0, 1), 3.0)); }, "a / (a.select(0, 1) + 3.0)");

  const auto big = leaf(uniform64({16, 24}, 170)), w = leaf(uniform64({24, 12}, 171, -0.3, 0.3));
  GradcheckOptions projections;
  projections.full_jacobian = false;
  projections.projections = 6;
  t.add(
      "composite", "log_softmax(tanh(x @ w)), projection mode", {big, w},
      [](const In& in) { return log_softmax(tanh(matmul(in[0], in[1])), -1); },
      "torch.log_softmax(torch.tanh(a @ b), -1)", projections);
  projections.seed = 5;
  t.add(
      "composite", "gelu(layer_norm(x)), projection mode", {big},
      [](const In& in) { return gelu(layer_norm(in[0], {}, {})); }, "F.gelu(F.layer_norm(a, (24,)))", projections);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("op table: cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::vector<OpCase> op_table() {
  Table t;
  binary_ops(t);
  scalar_overloads(t);
  unary_ops(t);
  where_and_masked_fill(t);
  reductions(t);
  indexing(t);
  matmuls(t);
  normalisations(t);
  fused_linears(t);
  attentions(t);
  cross_entropies(t);
  dropouts(t);
  views(t);
  joins_and_shifts(t);
  composites(t);
  return t.cases;
}

std::vector<std::string> ops_that_need_a_case(const std::string& source_dir) {
  // Not differentiable, or not an op of their own: comparisons, argmax and categorical (integer
  // results), the inference-only attention steps, activate (gelu, gelu_tanh or relu by name, each
  // with cases).
  const std::set<std::string> exempt = {
      "eq", "lt", "gt", "argmax", "categorical", "attention_step", "attention_step_cached", "activate"};
  std::set<std::string> names;
  const std::string ops = read_file(source_dir + "/autograd/ops.h");
  const std::regex function(R"(\nTensor (operator[^\s(]+|[a-z_]+)\()");
  for (std::sregex_iterator it(ops.begin(), ops.end(), function), end; it != end; ++it) names.insert((*it)[1]);
  const std::string tensor = read_file(source_dir + "/autograd/tensor.h");
  const size_t from = tensor.find("differentiable views"), to = tensor.find("For the engine");
  if (from == std::string::npos || to == std::string::npos)
    throw std::runtime_error("op table: no view section in autograd/tensor.h");
  const std::string view_section = tensor.substr(from, to - from);
  const std::regex method(R"(Tensor ([a-z_]+)\()");
  for (std::sregex_iterator it(view_section.begin(), view_section.end(), method), end; it != end; ++it)
    names.insert((*it)[1]);
  std::vector<std::string> result;
  for (const std::string& name : names) {
    if (!exempt.contains(name)) result.push_back(name);
  }
  return result;
}

}  // namespace axiom::test
