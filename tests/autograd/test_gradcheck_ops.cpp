// gradcheck and gradgradcheck (float64, tiny shapes) of every case of the op table (op_table.h):
// every differentiable op of autograd/ops.h and every differentiable view method of axiom::Tensor,
// on broadcasting, strided, empty and reused inputs. Also: the table covers every op, dropout's
// mask is not trivial, and the fused linear ops give the bits of their unfused definitions while
// keeping less for backward.
#include <algorithm>
#include <map>
#include <set>
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "tests/autograd/op_table.h"
#include "tests/support/gradients.h"
#include "autograd/internal.h"

namespace core = axiom::core;
using namespace axiom;
using namespace axiom::test;

TEST_CASE("every case of the op table passes gradcheck and gradgradcheck") {
  const std::vector<OpCase> table = op_table();
  CHECK(table.size() > 200);
  for (const OpCase& c : table) {
    check_grad(c.op + ": " + c.what, c.f, c.inputs, c.options);
  }
}

TEST_CASE("the op table has a case for every differentiable op of autograd/ops.h and every view method") {
  std::set<std::string> covered;
  for (const OpCase& c : op_table()) covered.insert(c.op);
  const std::vector<std::string> needed = ops_that_need_a_case(AXIOM_SOURCE_DIR);
  CHECK(needed.size() > 50);
  for (const std::string& op : needed) {
    CHECK_MESSAGE(covered.contains(op),
                  op << " (autograd/ops.h or autograd/tensor.h) has no case in tests/autograd/op_table.cpp");
  }
  // and every case names an op that exists (or "composite"): no case hides under a misspelt name
  for (const std::string& op : covered) {
    CHECK_MESSAGE((op == "composite" || std::ranges::find(needed, op) != needed.end()), "op table: unknown op " << op);
  }
}

namespace {
// The names of the Nodes in y's graph (record()'s first argument), found by walking its edges.
std::set<std::string> recorded_names(const Tensor& y) {
  std::set<std::string> names;
  std::vector<const Node*> stack;
  std::set<const Node*> seen;
  if (y.grad_fn()) stack.push_back(y.grad_fn().get());
  while (!stack.empty()) {
    const Node* node = stack.back();
    stack.pop_back();
    if (!seen.insert(node).second) continue;
    names.insert(node->name);
    for (const Edge& edge : node->inputs) {
      if (edge.node) stack.push_back(edge.node.get());
    }
  }
  return names;
}
}  // namespace

// A case labelled `tanh` that called gelu would pass the coverage test above; this one runs every
// case and checks that, for each op, some case's graph holds a Node recorded under the op's name
// (an operator under its named op's, flatten under reshape's, stack under concat's (concat of
// unsqueezed inputs), attention's queries under narrow's: a view of qkv; layer_norm_attention
// under attention's and layer_norm_feedforward under activation_linear's: each is its two ops but
// under bfloat16 products, which tests/autograd/test_bfloat16_products.cpp checks).
TEST_CASE("every op of the op table is recorded under its own name by at least one of its cases") {
  const std::map<std::string, std::string> recorded_as = {{"operator+", "add"},
                                                          {"operator-", "sub"},
                                                          {"operator*", "mul"},
                                                          {"operator/", "div"},
                                                          {"flatten", "reshape"},
                                                          {"stack", "concat"},
                                                          {"attention_queries", "narrow"},
                                                          {"layer_norm_attention", "attention"},
                                                          {"layer_norm_feedforward", "activation_linear"}};
  std::map<std::string, std::set<std::string>> names_by_op;
  for (const OpCase& c : op_table()) {
    if (c.op == "composite") continue;
    const std::set<std::string> names = recorded_names(c.f(c.inputs));
    names_by_op[c.op].insert(names.begin(), names.end());
  }
  for (const auto& [op, names] : names_by_op) {
    const std::string expected = recorded_as.contains(op) ? recorded_as.at(op) : op;
    CHECK_MESSAGE(names.contains(expected), op << ": no case records a Node named " << expected);
  }
}

TEST_CASE("dropout's mask is not trivial: some elements are zeroed, the others scaled by 1 / (1 - p)") {
  constexpr double p = 0.4;
  const Tensor x = leaf(uniform64({4, 5}, 110, 0.5, 2));  // nonzero: dropped elements are recognisable
  Generator gen(1234);
  const std::vector<double> in = x.to_vector<double>(), out = dropout(x, p, /*training=*/true, gen).to_vector<double>();
  int zeroed = 0, kept = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    if (out[i] == 0)
      ++zeroed;
    else if (std::abs(out[i] - in[i] / (1 - p)) < 1e-12)
      ++kept;
  }
  CHECK(zeroed > 0);
  CHECK(kept > 0);
  CHECK(zeroed + kept == 20);
}

TEST_CASE("activation_linear: the bits of linear(activate(h)), keeping h alone for backward") {
  for (Dtype dtype : {Dtype::float64, Dtype::float32}) {
    CAPTURE(dtype);
    Generator gen(82);
    const auto h = leaf(core::uniform({2, 64, 16}, -3, 3, gen, dtype));
    const auto w = leaf(core::uniform({16, 8}, -1, 1, gen, dtype)), b = leaf(core::uniform({8}, -1, 1, gen, dtype));
    const axiom::Tensor weights(core::uniform({2, 64, 8}, -1, 1, gen, dtype));
    auto gradients = [&](bool fused) {
      for (const auto& t : {h, w, b}) t.zero_grad();
      const int64_t before = core::allocation_stats().live_bytes;
      const axiom::Tensor out = fused ? activation_linear(Activation::gelu, h, w, b) : linear(gelu(h), w, b);
      const int64_t kept = core::allocation_stats().live_bytes - before;  // the output, and what backward needs
      sum(mul(out, weights)).backward();
      return std::make_tuple(axiom::test::values_of(core_tensor(out)), axiom::test::values_of(core_tensor(h.grad())),
                             axiom::test::values_of(core_tensor(w.grad())),
                             axiom::test::values_of(core_tensor(b.grad())), kept);
    };
    const auto [out, dh, dw, db, kept] = gradients(false);
    const auto [fused_out, fused_dh, fused_dw, fused_db, fused_kept] = gradients(true);
    CHECK(fused_out == out);
    CHECK(fused_dh == dh);
    CHECK(fused_dw == dw);
    CHECK(fused_db == db);
    // gelu(h), as big as h, is not kept
    CHECK(kept - fused_kept == static_cast<int64_t>(h.numel() * dtype_size(dtype)));
  }
}

TEST_CASE("layer_norm_linear: the bits of linear(layer_norm(x)), keeping x alone for backward") {
  for (Dtype dtype : {Dtype::float64, Dtype::float32}) {
    CAPTURE(dtype);
    Generator gen(88);
    auto param = [&](const Shape& shape) { return leaf(core::uniform(shape, -1, 1, gen, dtype)); };
    const auto x = param({2, 64, 16}), nw = param({16}), nb = param({16}), w = param({16, 8}), b = param({8});
    const axiom::Tensor weights(core::uniform({2, 64, 8}, -1, 1, gen, dtype));
    auto gradients = [&](bool fused) {
      for (const auto& t : {x, nw, nb, w, b}) t.zero_grad();
      const int64_t before = core::allocation_stats().live_bytes;
      const axiom::Tensor out =
          fused ? layer_norm_linear(x, nw, nb, 1e-5, w, b) : linear(layer_norm(x, nw, nb, 1e-5), w, b);
      const int64_t kept = core::allocation_stats().live_bytes - before;
      sum(mul(out, weights)).backward();
      std::vector<std::vector<double>> values{axiom::test::values_of(core_tensor(out))};
      for (const auto& t : {x, nw, nb, w, b}) values.push_back(axiom::test::values_of(core_tensor(t.grad())));
      return std::make_pair(values, kept);
    };
    const auto [plain, kept] = gradients(false);
    const auto [fused, fused_kept] = gradients(true);
    CHECK(fused == plain);
    CHECK(kept - fused_kept == static_cast<int64_t>(x.numel() * dtype_size(dtype)));  // layer_norm(x) is not kept
  }
}
