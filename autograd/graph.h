// The graph, drawn: the Nodes that made some tensors, as Graphviz's DOT text.
//
//   const Tensor loss = sum(tanh(matmul(x, w)));
//   std::cout << axiom::to_dot({loss}, {{"w", w}});     // then: dot -Tsvg graph.dot > graph.svg
//
// Boxes are ops (recorded Nodes), each with its name (a custom op's too), and the shape and dtype
// of what it made; ellipses are leaves that require a gradient, with their names where `names`
// gives them (a module's named_parameters()); arrows run from an op's inputs to the op, so the
// outputs are at the bottom. Constants (tensors that want no gradient) are not in the graph, as
// they are not in the engine's. The ops a backward pass recorded with create_graph (the graph of
// a gradient, which can be differentiated again) are filled orange; the forward's are white. A
// graph of over 200 ops asks dot for its quicker layout: seconds, not minutes.
//
// Large graphs: with {.collapse = 1}, every NameScope (tensor.h) at the top level is one box, its
// ops counted ("outer.3: 35 ops, 12 parameters"), the parameters that only it uses inside it, and
// the graph of its gradient a second, orange box; {.collapse = 2} draws "outer.3/attention" and
// its kind one box each, and so on. The models name each Transformer block ("outer.3").
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tensor.h"

namespace axiom {

using TensorNames = std::vector<std::pair<std::string, Tensor>>;

struct DotOptions {
  // Draw the ops of each NameScope this deep as one box (0: every op its own box).
  int collapse = 0;
};

std::string to_dot(const std::vector<Tensor>& outputs, const TensorNames& names = {}, DotOptions options = {});

}  // namespace axiom
