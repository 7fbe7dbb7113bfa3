// Your own op: a forward and the backward you write for it, recorded under your name.
//
//   // softplus(x) = log(1 + e^x);  d/dx = sigmoid(x)
//   const axiom::CustomOp softplus(
//       "softplus",
//       [](const std::vector<Tensor>& in) { return log(add(exp(in[0]), 1.0)); },
//       [](const axiom::BackwardContext& c) { return Grads{mul(c.grad_output, sigmoid(c.inputs[0]))}; });
//   Tensor y = softplus({x});          // y.grad_fn()->name is "softplus"
//
// The forward runs with recording off: whatever it computes becomes one node of the graph, whose
// rule is your backward. Write the backward in axiom's ops (autograd/ops.h) and it is itself
// differentiable: gradgradcheck, Hessian-vector products and create_graph work through the op as
// through any built-in one. A backward that cannot be differentiated (it calls a library, or
// hand-written loops) is marked `once_differentiable`: first derivatives work, and differentiating
// its gradients again is an Error naming the op (PyTorch's torch.autograd.function.once_differentiable).
//
// What axiom checks, each an Error naming the op: the inputs are defined; the forward returns a
// defined tensor and does not call the op itself; the backward returns one gradient per input,
// defined where the input needs one, with the input's dtype and device and its shape (or a shape
// it broadcasts to: the engine sums the gradient back, as for a built-in op); the inputs and the
// output are not changed in place between the forward and the backward (the engine compares their
// storages' write counters); no two ops are defined under one name; a jvp rule is given only to a
// once_differentiable op and returns a tensor like the output.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tensor.h"

namespace axiom {

// What a custom op's backward is given.
struct BackwardContext {
  const std::vector<Tensor>& inputs;  // the op's inputs, as its forward saw them
  const Tensor& output;               // the op's output
  const Tensor& grad_output;          // dL/d(output), in the output's shape
  const Needs& needs;                 // needs[i]: whether input i wants a gradient
};

// A forward-mode rule: J u, the op's directional derivative at `inputs` along `tangents` (one per
// input, each in its input's shape; zeros for an input that does not move), in the output's shape.
using Jvp = std::function<Tensor(const std::vector<Tensor>& inputs, const std::vector<Tensor>& tangents)>;

struct CustomOpOptions {
  // The backward is not written in differentiable ops: its gradients cannot be differentiated
  // again (doing so is an Error naming the op).
  bool once_differentiable = false;
  // For a once_differentiable op, the rule that gives forward mode (axiom::jvp, which computes J u
  // as the derivative of J^T w with respect to w) what the backward cannot: the gradients are
  // linear in grad_output, and their derivative along c is J c. Differentiating them with respect
  // to the inputs stays an Error. (An op whose backward is differentiable needs no such rule.)
  Jvp jvp = {};
};

class CustomOp {
 public:
  using Forward = std::function<Tensor(const std::vector<Tensor>& inputs)>;
  // One gradient per input, in the input's shape or the shape it was broadcast to (undefined where
  // needs[i] is false).
  using Backward = std::function<Grads(const BackwardContext& context)>;

  // An Error if an op of this name exists already (a name means one op for the life of the
  // program: its graphs may outlive this object). Define each op once, as a global or a `static`.
  CustomOp(std::string name, Forward forward, Backward backward, CustomOpOptions options = {});

  Tensor operator()(const std::vector<Tensor>& inputs) const;
  const std::string& name() const;

  struct Definition;  // custom_op.cpp

 private:
  std::shared_ptr<const Definition> definition_;  // shared with the Nodes it records
};

}  // namespace axiom
