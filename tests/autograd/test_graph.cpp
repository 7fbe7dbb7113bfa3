// The graph, drawn (autograd/graph.h): the DOT text has one box per Node the engine recorded, one
// ellipse per leaf that requires a gradient and one arrow per edge, counted here by a walk of our
// own over grad_fn() and Node::inputs; Graphviz's `dot` reads it; a custom op appears under its
// name; the graph of a gradient (create_graph) marks the Nodes its backward pass recorded; name
// scopes nest, and collapse draws each as one box.
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "autograd/custom_op.h"
#include "autograd/graph.h"
#include "tests/support/files.h"
#include "tests/support/gradients.h"

using namespace axiom;
using namespace axiom::test;

namespace {

struct Counts {
  size_t ops = 0, leaves = 0, edges = 0, backward_ops = 0;
};

// What the DOT text declares: boxes ("opN [label=..."), ellipses ("leafN [..."), arrows.
Counts counted_in(const std::string& dot) {
  Counts counts;
  std::istringstream lines(dot);
  for (std::string line; std::getline(lines, line);) {
    if (std::regex_search(line, std::regex(R"(^  op\d+ \[)"))) counts.ops++;
    if (std::regex_search(line, std::regex(R"(^  leaf\d+ \[)"))) counts.leaves++;
    if (std::regex_search(line, std::regex(R"(^  \w+ -> op\d+;$)"))) counts.edges++;
    if (line.find("fillcolor=\"#fdd0a2\"") != std::string::npos) counts.backward_ops++;
  }
  return counts;
}

// The same, found by walking the graph from the outputs: distinct Nodes, distinct leaves, edges.
Counts walked_from(const std::vector<Tensor>& outputs) {
  Counts counts;
  std::set<const Node*> seen;
  std::set<const TensorImpl*> leaves;
  std::vector<std::shared_ptr<Node>> to_visit;
  for (const Tensor& output : outputs) {
    if (output.grad_fn()) to_visit.push_back(output.grad_fn());
  }
  while (!to_visit.empty()) {
    const std::shared_ptr<Node> node = to_visit.back();
    to_visit.pop_back();
    if (!seen.insert(node.get()).second) continue;
    counts.ops++;
    counts.backward_ops += node->in_backward_pass;
    for (const Edge& input : node->inputs) {
      if (!input) continue;
      counts.edges++;
      if (input.leaf) leaves.insert(input.leaf.get());
      if (input.node) to_visit.push_back(input.node);
    }
  }
  counts.leaves = leaves.size();
  return counts;
}

void check_counts(const std::vector<Tensor>& outputs, const std::string& dot) {
  const Counts drawn = counted_in(dot), walked = walked_from(outputs);
  CHECK(drawn.ops == walked.ops);
  CHECK(drawn.ops == nodes_of(outputs).size());
  CHECK(drawn.leaves == walked.leaves);
  CHECK(drawn.edges == walked.edges);
  CHECK(drawn.backward_ops == walked.backward_ops);
}

// Graphviz's `dot` reads the text and draws an SVG.
void check_dot_reads(const std::string& dot) {
  const ScratchDir dir;
  const std::string path = dir.file("graph.dot"), svg = dir.file("graph.svg");
  std::ofstream(path) << dot;
  REQUIRE(std::system(("dot -Tsvg " + path + " -o " + svg + " 2>" + dir.file("errors")).c_str()) == 0);
  std::ifstream drawn(svg);
  const std::string text((std::istreambuf_iterator<char>(drawn)), std::istreambuf_iterator<char>());
  CHECK(text.find("<svg") != std::string::npos);
}

// The id of the box that draws `scope` ("scope3").
std::string box_of_scope(const std::string& dot, const std::string& scope) {
  std::smatch found;
  REQUIRE(std::regex_search(dot, found, std::regex(R"(  (scope\d+) \[[^\n]*label=")" + scope + R"(\\n)")));
  return found[1];
}

}  // namespace

TEST_CASE("to_dot draws every Node, leaf and edge of a first-order graph, and dot reads it") {
  const Tensor x = leaf(uniform64({2, 3}, 1)), w = leaf(uniform64({3, 4}, 2));
  const Tensor loss = sum(mul(tanh(matmul(x, w)), add(w.select(0, 1), 1.0)));  // w used twice
  const std::string dot = to_dot({loss}, {{"x", x}, {"w", w}});
  check_counts({loss}, dot);
  CHECK(counted_in(dot).ops == 6);  // matmul, tanh, select, add, mul, sum
  CHECK(dot.find("label=\"matmul\\n[2, 4] float64\"") != std::string::npos);
  CHECK(dot.find("label=\"w\\n[3, 4] float64\\nrequires_grad\"") != std::string::npos);
  check_dot_reads(dot);
}

TEST_CASE("a custom op is drawn under its name") {
  static const CustomOp twice(
      "graph_test_twice", [](const std::vector<Tensor>& in) { return mul(in[0], 2.0); },
      [](const BackwardContext& c) { return Grads{mul(c.grad_output, 2.0)}; });
  const Tensor x = leaf(uniform64({3}, 3));
  const Tensor y = sum(twice({x}));
  const std::string dot = to_dot({y});
  CHECK(dot.find("label=\"graph_test_twice\\n[3] float64\"") != std::string::npos);
  check_counts({y}, dot);
  check_dot_reads(dot);
}

TEST_CASE("the graph of a gradient marks the Nodes its backward pass recorded") {
  const Tensor x = leaf(uniform64({4}, 4));
  const Tensor y = sum(mul(tanh(x), x));
  const Tensor dx = grad({y}, {x}, {}, {.create_graph = true})[0];  // a graph of its own, differentiable
  const std::string dot = to_dot({dx}, {{"x", x}});
  check_counts({dx}, dot);
  CHECK(counted_in(dot).backward_ops > 0);
  CHECK(counted_in(dot).backward_ops < counted_in(dot).ops);  // it reaches into the forward's tanh
  check_dot_reads(dot);
  // The forward alone has none.
  CHECK(counted_in(to_dot({y})).backward_ops == 0);
}

TEST_CASE("quotes and backslashes in names are escaped") {
  const Tensor x = leaf(uniform64({2}, 5));
  const std::string dot = to_dot({sum(x)}, {{"say \"hi\" \\o/", x}});
  CHECK(dot.find("say \\\"hi\\\" \\\\o/") != std::string::npos);
  check_dot_reads(dot);
}

TEST_CASE("name scopes nest, a gradient's ops take the scope of the op they differentiate, bad names are refused") {
  const Tensor x = leaf(uniform64({3}, 6));
  Tensor y;
  {
    const NameScope block("block.0");
    {
      const NameScope inner("attention");
      CHECK(current_name_scope() == "block.0/attention");
      y = tanh(x);
    }
    CHECK(current_name_scope() == "block.0");
  }
  CHECK(current_name_scope().empty());
  REQUIRE(y.grad_fn()->scope);
  CHECK(*y.grad_fn()->scope == "block.0/attention");
  const Tensor dx = grad({sum(y)}, {x}, {}, {.create_graph = true})[0];  // recorded by tanh's rule
  REQUIRE(dx.grad_fn()->scope);
  CHECK(*dx.grad_fn()->scope == "block.0/attention");
  CHECK(dx.grad_fn()->in_backward_pass);
  CHECK(error_message([] { NameScope empty(""); }) ==
        "[NameScope] a scope's name is not empty and has no '/' (scopes nest by \"/\"), got ''");
  CHECK(error_message([] { NameScope slash("a/b"); }) ==
        "[NameScope] a scope's name is not empty and has no '/' (scopes nest by \"/\"), got 'a/b'");
}

TEST_CASE("collapse draws each scope as one box, with the parameters that only it uses") {
  const Tensor x(uniform64({2, 3}, 7));  // a constant: not drawn
  std::vector<Tensor> weights;
  Tensor h = x;
  for (int i = 0; i < 3; ++i) {
    weights.push_back(leaf(uniform64({3, 3}, 8 + i)));
    const NameScope block("block." + std::to_string(i));
    h = add(tanh(matmul(h, weights.back())), h);  // 3 ops
  }
  const Tensor loss = sum(h);
  const std::string dot = to_dot({loss}, {}, {.collapse = 1});
  CHECK(counted_in(dot).ops == 1);     // sum, outside every scope
  CHECK(counted_in(dot).leaves == 0);  // each weight inside its block's box
  for (int i = 0; i < 3; ++i) {
    CHECK(dot.find("label=\"block." + std::to_string(i) + "\\n3 ops, 1 parameter\"") != std::string::npos);
  }
  // One arrow between two blocks (h goes to both matmul and add), and from the last to the sum.
  CHECK(dot.find(box_of_scope(dot, "block.0") + " -> " + box_of_scope(dot, "block.1") + ";") != std::string::npos);
  CHECK(dot.find(box_of_scope(dot, "block.1") + " -> " + box_of_scope(dot, "block.2") + ";") != std::string::npos);
  CHECK(std::regex_search(dot, std::regex(box_of_scope(dot, "block.2") + R"( -> op\d+;)")));
  CHECK(std::count(dot.begin(), dot.end(), '>') == 3);  // the three arrows: none inside a box
  check_dot_reads(dot);
  // Deeper than any scope: every op its own box again, as without collapse.
  check_counts({loss}, to_dot({loss}, {}, {.collapse = 2}));
  CHECK(error_message([&] { (void)to_dot({loss}, {}, {.collapse = -1}); }) ==
        "[to_dot] collapse is a depth of scopes, 0 or more; got -1");
}
