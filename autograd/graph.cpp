// to_dot (graph.h): one DOT statement per op (or per collapsed scope), per leaf and per edge, in the
// order a backward pass visits the ops.
#include "autograd/graph.h"

#include <map>
#include <set>
#include <sstream>

#include "core/error.h"

namespace axiom {

namespace {

constexpr size_t kLargeGraph = 200;  // boxes

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

// The first `depth` parts of an op's scope: "outer.3/attention" at depth 1 is "outer.3"; "" when
// the op is in no scope that deep (it is drawn alone).
std::string scope_at(const Node& node, int depth) {
  if (depth <= 0 || !node.scope) return "";
  const std::string& scope = *node.scope;
  size_t end = 0;
  for (int part = 0; part < depth; ++part) {
    if (end == std::string::npos) return "";  // fewer parts than `depth`
    end = scope.find('/', part == 0 ? 0 : end + 1);
  }
  return end == std::string::npos ? scope : scope.substr(0, end);
}

// A collapsed scope: one box for its ops, and for the leaves that only its ops use.
struct Group {
  std::string id, scope;
  bool in_backward_pass = false;
  int64_t ops = 0, parameters = 0;
};

class DotWriter {
 public:
  DotWriter(const TensorNames& names, DotOptions options) : options_(options) {
    if (options.collapse < 0) throw Error("to_dot", "collapse is a depth of scopes, 0 or more; got ", options.collapse);
    for (const auto& [name, tensor] : names) {
      if (tensor.defined()) names_[tensor.impl().get()] = name;
    }
  }

  std::string write(const std::vector<Tensor>& outputs) {
    const std::vector<std::shared_ptr<Node>> nodes = nodes_of(outputs);
    for (size_t i = 0; i < nodes.size(); ++i) ids_[nodes[i].get()] = box_of(*nodes[i], "op" + std::to_string(i));
    for (const Tensor& output : outputs) {
      if (output.defined() && output.grad_fn()) made_[output.grad_fn().get()] = {output.shape(), output.dtype()};
    }
    absorb_leaves_used_by_one_group(nodes);
    for (const auto& node : nodes) note_what_inputs_are(*node);
    out_ << "digraph axiom {\n  node [shape=box, fontname=\"Helvetica\", fontsize=11];\n";
    // dot's default layout of a large graph takes minutes (the graph of a tiny step's gradient, 743
    // ops: 163 s); fewer iterations of its network simplex lay it out in seconds (2.6 s).
    if (nodes.size() - grouped_.size() + groups_.size() > kLargeGraph) {
      out_ << "  graph [nslimit=1, nslimit1=1, mclimit=0.1, searchsize=10];\n";
    }
    for (const auto& node : nodes) {
      if (!grouped_.count(node.get())) write_op(*node);
    }
    for (const auto& [key, group] : groups_) write_group(group);
    for (const Tensor& output : outputs) {
      if (output.defined() && output.is_leaf() && output.requires_grad()) leaf_id(output.impl());
    }
    out_ << leaves_.str() << edges_.str() << "}\n";
    return out_.str();
  }

 private:
  // The id of the box that draws `node`: its collapsed scope's, or its own.
  std::string box_of(const Node& node, const std::string& own_id) {
    const std::string scope = scope_at(node, options_.collapse);
    if (scope.empty()) return own_id;
    const std::string key = scope + (node.in_backward_pass ? " (gradient)" : "");
    auto [it, added] = groups_.try_emplace(key);
    if (added) it->second = Group{"scope" + std::to_string(groups_.size() - 1), key, node.in_backward_pass};
    ++it->second.ops;
    grouped_.insert(&node);
    return it->second.id;
  }

  // A leaf whose every user is in one collapsed scope is drawn inside it (a block's parameters).
  void absorb_leaves_used_by_one_group(const std::vector<std::shared_ptr<Node>>& nodes) {
    std::map<const TensorImpl*, std::set<std::string>> users;
    for (const auto& node : nodes) {
      for (const Edge& input : node->inputs) {
        if (input.leaf) users[input.leaf.get()].insert(ids_.at(node.get()));
      }
    }
    std::map<std::string, Group*> by_id;
    for (auto& [key, group] : groups_) by_id[group.id] = &group;
    for (const auto& [leaf, boxes] : users) {
      if (boxes.size() != 1 || !by_id.count(*boxes.begin())) continue;
      absorbed_[leaf] = *boxes.begin();
      ++by_id.at(*boxes.begin())->parameters;
    }
  }

  // The shape and dtype of each op's output, as its users' Nodes recorded them; and the edges
  // (one per pair of boxes where a scope's box is one end; none inside a scope's box).
  void note_what_inputs_are(const Node& node) {
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const Edge& input = node.inputs[i];
      if (input.node) made_.try_emplace(input.node.get(), node.input_shapes[i], node.input_dtypes[i]);
      if (!input) continue;
      const std::string from = id_of(input), to = ids_.at(&node);
      if (from == to) continue;  // inside one scope's box
      const bool touches_a_scope = grouped_.count(&node) || (input.node && grouped_.count(input.node.get())) ||
                                   absorbed_.count(input.leaf.get());
      if (touches_a_scope && !edges_drawn_.insert({from, to}).second) continue;  // drawn already
      edges_ << "  " << from << " -> " << to << ";\n";
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

  // "outer.3\n7 ops, 12 parameters", grey (the forward's) or orange (a gradient's).
  void write_group(const Group& group) {
    std::string title = group.scope + "\\n" + std::to_string(group.ops) + (group.ops == 1 ? " op" : " ops");
    if (group.parameters > 0) {
      title += ", " + std::to_string(group.parameters) + (group.parameters == 1 ? " parameter" : " parameters");
    }
    out_ << "  " << group.id << " [shape=box3d, style=filled, fillcolor=\""
         << (group.in_backward_pass ? "#fdd0a2" : "#e5e5e5") << "\", label=" << quoted(title) << "];\n";
  }

  std::string id_of(const Edge& input) { return input.node ? ids_.at(input.node.get()) : leaf_id(input.leaf); }

  // A leaf's ellipse, written the first time the leaf is met (or the scope's box it is drawn in).
  std::string leaf_id(const std::shared_ptr<TensorImpl>& leaf) {
    if (const auto inside = absorbed_.find(leaf.get()); inside != absorbed_.end()) return inside->second;
    const auto [it, added] = leaf_ids_.try_emplace(leaf.get(), "leaf" + std::to_string(leaf_ids_.size()));
    if (added) {
      const auto name = names_.find(leaf.get());
      const std::string title = name == names_.end() ? "leaf" : name->second;
      leaves_ << "  " << it->second << " [shape=ellipse, style=filled, fillcolor=\"#c6dbef\", label="
              << quoted(describe(title, leaf->data.shape(), leaf->data.dtype()) + "\\nrequires_grad") << "];\n";
    }
    return it->second;
  }

  DotOptions options_;
  std::map<const TensorImpl*, std::string> names_;
  std::map<const Node*, std::string> ids_;  // the box that draws each op
  std::map<const TensorImpl*, std::string> leaf_ids_;
  std::map<const TensorImpl*, std::string> absorbed_;  // leaves drawn inside a scope's box
  std::map<const Node*, std::pair<Shape, Dtype>> made_;
  std::map<std::string, Group> groups_;                        // by scope, and whether it is a gradient's
  std::set<const Node*> grouped_;                              // the ops drawn inside a scope's box
  std::set<std::pair<std::string, std::string>> edges_drawn_;  // from or to a scope's box
  std::ostringstream out_, leaves_, edges_;  // the boxes, the leaves, the edges: written in that order
};

}  // namespace

std::string to_dot(const std::vector<Tensor>& outputs, const TensorNames& names, DotOptions options) {
  return DotWriter(names, options).write(outputs);
}

}  // namespace axiom
