// to_dot (graph.h): one DOT statement per op, per leaf and per edge, in the order a backward pass
// visits the ops.
#include "autograd/graph.h"

#include <map>
#include <sstream>

namespace axiom {

namespace {

constexpr size_t kLargeGraph = 200;  // ops

// "mul\n[2, 3] float64": what a box or an ellipse says.
std::string describe(const std::string& title, const Shape& shape, Dtype dtype) {
  return title + "\\n" + core::shape_str(shape) + " " + std::string(dtype_name(dtype));
}

// Quotes for DOT: the label's own quotes and backslashes escaped (a "\n" made by describe stays).
std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (size_t i = 0; i < text.size(); ++i) {
    const bool line_break = text[i] == '\\' && i + 1 < text.size() && text[i + 1] == 'n';
    if (text[i] == '"' || (text[i] == '\\' && !line_break)) out += '\\';
    out += text[i];
  }
  return out + "\"";
}

class DotWriter {
 public:
  explicit DotWriter(const TensorNames& names) {
    for (const auto& [name, tensor] : names) {
      if (tensor.defined()) names_[tensor.impl().get()] = name;
    }
  }

  std::string write(const std::vector<Tensor>& outputs) {
    const std::vector<std::shared_ptr<Node>> nodes = nodes_of(outputs);
    for (size_t i = 0; i < nodes.size(); ++i) ids_[nodes[i].get()] = "op" + std::to_string(i);
    for (const Tensor& output : outputs) {
      if (output.defined() && output.grad_fn()) made_[output.grad_fn().get()] = {output.shape(), output.dtype()};
    }
    for (const auto& node : nodes) note_what_inputs_are(*node);
    out_ << "digraph axiom {\n  node [shape=box, fontname=\"Helvetica\", fontsize=11];\n";
    // dot's default layout of a large graph takes minutes (the graph of a tiny step's gradient, 743
    // ops: 163 s); fewer iterations of its network simplex lay it out in seconds (2.6 s).
    if (nodes.size() > kLargeGraph) out_ << "  graph [nslimit=1, nslimit1=1, mclimit=0.1, searchsize=10];\n";
    for (const auto& node : nodes) write_op(*node);
    for (const Tensor& output : outputs) {
      if (output.defined() && output.is_leaf() && output.requires_grad()) leaf_id(output.impl());
    }
    out_ << leaves_.str() << edges_.str() << "}\n";
    return out_.str();
  }

 private:
  // The shape and dtype of each op's output, as its users' Nodes recorded them.
  void note_what_inputs_are(const Node& node) {
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const Edge& input = node.inputs[i];
      if (input.node) made_.try_emplace(input.node.get(), node.input_shapes[i], node.input_dtypes[i]);
      if (input.leaf) leaf_id(input.leaf);
      if (input) edges_ << "  " << id_of(input) << " -> " << ids_.at(&node) << ";\n";
    }
  }

  void write_op(const Node& node) {
    const auto found = made_.find(&node);
    const std::string title =
        found == made_.end() ? node.name : describe(node.name, found->second.first, found->second.second);
    out_ << "  " << ids_.at(&node) << " [label=" << quoted(title);
    if (node.in_backward_pass) out_ << ", style=filled, fillcolor=\"#fdd0a2\"";
    out_ << "];\n";
  }

  std::string id_of(const Edge& input) { return input.node ? ids_.at(input.node.get()) : leaf_id(input.leaf); }

  // A leaf's ellipse, written the first time the leaf is met.
  std::string leaf_id(const std::shared_ptr<TensorImpl>& leaf) {
    const auto [it, added] = leaf_ids_.try_emplace(leaf.get(), "leaf" + std::to_string(leaf_ids_.size()));
    if (added) {
      const auto name = names_.find(leaf.get());
      const std::string title = name == names_.end() ? "leaf" : name->second;
      leaves_ << "  " << it->second << " [shape=ellipse, style=filled, fillcolor=\"#c6dbef\", label="
              << quoted(describe(title, leaf->data.shape(), leaf->data.dtype()) + "\\nrequires_grad") << "];\n";
    }
    return it->second;
  }

  std::map<const TensorImpl*, std::string> names_;
  std::map<const Node*, std::string> ids_;
  std::map<const TensorImpl*, std::string> leaf_ids_;
  std::map<const Node*, std::pair<Shape, Dtype>> made_;
  std::ostringstream out_, leaves_, edges_;  // the ops, the leaves, the edges: written in that order
};

}  // namespace

std::string to_dot(const std::vector<Tensor>& outputs, const TensorNames& names) {
  return DotWriter(names).write(outputs);
}

}  // namespace axiom
