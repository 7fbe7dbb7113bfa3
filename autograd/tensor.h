// axiom::Tensor — the differentiable value that users hold.
//
// It wraps a core::Tensor (the numbers) and adds what reverse mode needs: whether a gradient is
// wanted (`requires_grad`), the gradient once computed (`grad`), and the Node that produced it
// (`grad_fn`, empty for a leaf: a tensor you made yourself, such as a parameter).
//
// Copying a Tensor copies a handle: both copies see the same value, gradient and history.
// Every op on Tensors (autograd/ops.h) computes its result with core and, when an input requires
// a gradient, records a Node holding the rule that sends the output's gradient to the inputs.
// backward() walks those Nodes from the output back to the leaves (autograd/engine.cpp).
#pragma once

#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "../core/tensor.h"

namespace axiom {

using core::Shape;

struct Node;
struct TensorImpl;  // what a Tensor handle points to (below)

// How a backward pass runs: keep the graph for another pass; record the pass itself, so that the
// gradients it leaves in grad() can be differentiated again (second derivatives).
struct BackwardOptions {
  bool retain_graph = false;
  bool create_graph = false;  // implies retain_graph
};

class Tensor {
 public:
  Tensor() = default;  // undefined
  // A leaf holding `data`. Pass requires_grad = true for a value you want the gradient of.
  // Explicit: a core value becomes a user value only where the code says so.
  explicit Tensor(core::Tensor data, bool requires_grad = false);

  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const { return value().shape(); }
  int64_t dim() const { return value().dim(); }
  int64_t size(int64_t axis) const { return value().size(axis); }
  int64_t numel() const { return value().numel(); }
  Dtype dtype() const { return value().dtype(); }
  Device device() const { return value().device(); }
  double item() const { return value().item(); }
  double at(const std::vector<int64_t>& index) const { return value().at(index); }  // one element, as double
  template <typename T>
  std::vector<T> to_vector() const {
    return value().to_vector<T>();
  }  // all elements, row-major, converted to T
  std::string to_string() const { return value().to_string(); }
  const core::Strides& strides() const { return value().strides(); }  // in elements
  bool is_contiguous() const { return value().is_contiguous(); }

  // --- gradients ------------------------------------------------------------------------------
  bool requires_grad() const;
  bool is_leaf() const;
  Tensor& set_requires_grad(bool wanted);  // leaves only
  // d(output)/d(this) summed over every backward() so far; undefined if none reached this tensor.
  // Its numbers are a buffer of its own: an optimizer may scale them in place. After a
  // backward() with create_graph it has a graph, and can be differentiated again.
  Tensor grad() const;
  void zero_grad() const;  // forgets the gradient (the next backward starts from 0)
  const std::shared_ptr<Node>& grad_fn() const;
  Tensor detach() const;  // same numbers, no history, no gradient

  // Computes the gradient of this tensor with respect to every leaf that requires one and adds it to
  // the leaf's grad(). With no argument the tensor must hold one element (a loss); otherwise `grad`
  // has this tensor's shape. The graph is freed afterwards unless options.retain_graph.
  //   loss.backward();   y.backward(g, {.retain_graph = true});   loss.backward({}, {.create_graph = true});
  void backward(const Tensor& grad = {}, const BackwardOptions& options = {}) const;

  // --- differentiable views --------------------------------------------------------------------
  Tensor reshape(Shape shape) const;
  Tensor permute(const std::vector<int64_t>& order) const;
  Tensor transpose(int64_t axis0, int64_t axis1) const;
  Tensor movedim(int64_t from, int64_t to) const;
  Tensor slice(int64_t axis, int64_t start, int64_t stop, int64_t step = 1) const;
  Tensor narrow(int64_t axis, int64_t start, int64_t length) const;
  Tensor select(int64_t axis, int64_t index) const;
  Tensor expand(const Shape& shape) const;
  Tensor squeeze(int64_t axis) const;
  Tensor unsqueeze(int64_t axis) const;
  Tensor flatten() const { return reshape({-1}); }
  Tensor contiguous() const;
  Tensor to(Dtype dtype) const;
  Tensor to(Device device) const;  // the gradient moves back to this device

  // For the engine and the op recorder.
  const std::shared_ptr<TensorImpl>& impl() const { return impl_; }
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

 private:
  const core::Tensor& value() const;  // the numbers; an Error for an undefined tensor
  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& out, const Tensor& tensor);

// What a Tensor handle points to.
struct TensorImpl {
  core::Tensor data;
  bool requires_grad = false;
  Tensor grad;                    // undefined until a backward pass reaches this tensor (leaves only)
  std::shared_ptr<Node> grad_fn;  // the op that made this tensor; null for leaves
};

inline bool Tensor::requires_grad() const { return impl_ && impl_->requires_grad; }
inline bool Tensor::is_leaf() const { return !impl_ || !impl_->grad_fn; }

// One recorded op. Its rule gets the gradient of the op's output and which inputs need a
// gradient, and returns one gradient per input (undefined where not needed), each either in the
// input's shape or in the broadcast shape the op worked in: the engine sums it back to the input.
// Rules are written in the ops of autograd/ops.h, on Tensors: during an ordinary backward pass
// they run with recording off (first derivatives, at the speed of the kernels they call); when a
// graph of the backward pass is wanted (grad() with create_graph), they record, and what they
// return can be differentiated again.
using Grads = std::vector<Tensor>;
using Needs = std::vector<bool>;

// Where an input's gradient goes: to the Node that made the input (an op's output), or to the
// input itself (a leaf, which keeps its gradient); neither where the input needs no gradient.
// A Node holds what made its inputs, never their values: an op's output that no backward rule
// saved is freed as soon as nothing else holds it.
struct Edge {
  std::shared_ptr<Node> node;
  std::shared_ptr<TensorImpl> leaf;
  explicit operator bool() const { return node || leaf; }
};

struct Node {
  // The rule: (g = dL/d output, the output, needs) -> one gradient per input. The output is
  // handed in by the engine (rebuilt from `output` with this Node as its maker), so that a rule
  // that uses it, such as exp's (g * y), stays differentiable without the Node owning a handle
  // to its own output (which would keep it alive forever).
  using Backward = std::function<Grads(const Tensor& grad_out, const Tensor& output, const Needs& needs)>;
  // A fused op's definition in smaller differentiable ops, on its inputs: what the engine
  // differentiates instead of the fused rule when a graph of the backward pass is wanted.
  using Composite = std::function<Tensor(const std::vector<Tensor>& inputs)>;

  const char* name = "";
  std::vector<Edge> inputs;  // one per input
  std::vector<Shape> input_shapes;
  std::vector<Dtype> input_dtypes;
  Backward backward;                 // emptied when the graph is freed
  core::Tensor output;               // kept only for rules that use the output (record_keeping_output)
  Composite composite;               // fused ops only (record_fused)
  std::vector<Tensor> saved_inputs;  // what the composite runs on (fused ops only)
  // Every input's and the output's storage with its write version when recorded: a backward
  // rule must see the values the forward pass saw.
  std::vector<std::pair<std::weak_ptr<core::Storage>, uint64_t>> versions;
  bool in_backward_pass = false;  // recorded by a backward pass with create_graph (a gradient's graph)
  // The NameScope it was recorded in ("outer.3/attention"; null: none). A rule run with
  // create_graph records its ops in its own Node's scope.
  std::shared_ptr<const std::string> scope;

  Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  ~Node();  // iterative: a chain of 100,000 nodes must not overflow the stack
};

// --- grad mode --------------------------------------------------------------------------------------
// While a NoGrad is alive (on this thread), ops record nothing: for evaluation and optimizer steps.
class NoGrad {
 public:
  NoGrad();
  ~NoGrad();
  NoGrad(const NoGrad&) = delete;
  NoGrad& operator=(const NoGrad&) = delete;

 private:
  bool previous_;
};
bool grad_enabled();

// While an EnableGrad is alive (on this thread), ops record again, even inside a NoGrad: for a
// forward pass that a backward rule runs again (autograd/checkpoint.h).
class EnableGrad {
 public:
  EnableGrad();
  ~EnableGrad();
  EnableGrad(const EnableGrad&) = delete;
  EnableGrad& operator=(const EnableGrad&) = delete;

 private:
  bool previous_;
};

// --- name scopes -------------------------------------------------------------------------------------
// While a NameScope is alive (on this thread), the ops recorded carry its name, joined with the
// scopes around it by "/": "outer.3/attention". to_dot (graph.h) can draw each scope as one box;
// the models name every Transformer block by its module name ("outer.3"), PyTorch's
// record_function and JAX's named_scope do the same. An Error for an empty name or one with "/".
class NameScope {
 public:
  explicit NameScope(const std::string& name);
  ~NameScope();
  NameScope(const NameScope&) = delete;
  NameScope& operator=(const NameScope&) = delete;

 private:
  std::shared_ptr<const std::string> previous_;
};
std::string current_name_scope();  // "" outside every scope

// --- gradient-ready hooks -----------------------------------------------------------------------
// While a GradientReadyHook is alive (on this thread), backward() calls it with each leaf whose
// gradient has just become complete: every Node of the graph that uses the leaf has run, so
// nothing more will be added to leaf.grad() in this pass. Data parallelism uses it to send a
// bucket of gradients to the other processes while backward goes on with the layers below
// (PyTorch's post-accumulate-grad hook). A leaf that the graph does not reach is not reported.
class GradientReadyHook {
 public:
  using Callback = std::function<void(const Tensor& leaf)>;
  explicit GradientReadyHook(Callback callback);
  ~GradientReadyHook();
  GradientReadyHook(const GradientReadyHook&) = delete;
  GradientReadyHook& operator=(const GradientReadyHook&) = delete;

 private:
  friend void notify_gradient_ready(const std::shared_ptr<TensorImpl>& leaf);  // engine.cpp
  Callback callback_;
  GradientReadyHook* previous_;  // hooks nest: an inner one is called too, then the outer
};

// While a GradientReadyHooksPaused is alive (on this thread), no hook is called: a backward pass
// nested inside another one's rule (autograd/checkpoint.h) hands its gradients to the outer pass,
// which tells the hooks once they are complete.
class GradientReadyHooksPaused {
 public:
  GradientReadyHooksPaused();
  ~GradientReadyHooksPaused();
  GradientReadyHooksPaused(const GradientReadyHooksPaused&) = delete;
  GradientReadyHooksPaused& operator=(const GradientReadyHooksPaused&) = delete;

 private:
  GradientReadyHook* paused_;
};

// Records `output` as made by the op `name` from `inputs` (used by every op in autograd/ops_*.cpp).
// Returns a plain tensor when no input requires a gradient or grad mode is off.
//   record:                rule(g, needs)
//   record_keeping_output: rule(g, y, needs), for rules that use the output y (exp: g * y)
//   record_fused:          rule(g, needs) in fused kernels, for first derivatives; and the op's
//                          composite definition, differentiated instead when a graph of the
//                          backward pass is wanted (as MLX's fast ops do)
using Rule = std::function<Grads(const Tensor& grad_out, const Needs& needs)>;
Tensor record(const char* name, const std::vector<Tensor>& inputs, core::Tensor output, Rule rule);
Tensor record_keeping_output(const char* name, const std::vector<Tensor>& inputs, core::Tensor output,
                             Node::Backward rule);
Tensor record_fused(const char* name, const std::vector<Tensor>& inputs, core::Tensor output, Rule rule,
                    Node::Composite composite);

// The same three for a list of inputs written in place ({x, w}) and rules as lambdas: with grad
// mode off and no profiler running (inference, sampling), only the output is wrapped, and neither
// the inputs' list nor the rule is stored (no heap allocation for them).
bool records_nothing();  // grad mode off and no profiler
template <typename RuleFn>
Tensor record(const char* name, std::initializer_list<Tensor> inputs, core::Tensor output, RuleFn&& rule) {
  if (records_nothing()) return Tensor(std::move(output));
  return record(name, std::vector<Tensor>(inputs), std::move(output), Rule(std::forward<RuleFn>(rule)));
}
template <typename RuleFn>
Tensor record_keeping_output(const char* name, std::initializer_list<Tensor> inputs, core::Tensor output,
                             RuleFn&& rule) {
  if (records_nothing()) return Tensor(std::move(output));
  return record_keeping_output(name, std::vector<Tensor>(inputs), std::move(output),
                               Node::Backward(std::forward<RuleFn>(rule)));
}
template <typename RuleFn, typename CompositeFn>
Tensor record_fused(const char* name, std::initializer_list<Tensor> inputs, core::Tensor output, RuleFn&& rule,
                    CompositeFn&& composite) {
  if (records_nothing()) return Tensor(std::move(output));
  return record_fused(name, std::vector<Tensor>(inputs), std::move(output), Rule(std::forward<RuleFn>(rule)),
                      Node::Composite(std::forward<CompositeFn>(composite)));
}

// Every Node that made `outputs`, each before the Nodes of its inputs: the order in which a
// backward pass visits them (autograd/graph.h draws them).
std::vector<std::shared_ptr<Node>> nodes_of(const std::vector<Tensor>& outputs);

// --- gradients as values ----------------------------------------------------------------------------
struct GradOptions {
  bool create_graph = false;  // record the backward pass, so that its results can be differentiated again
  bool retain_graph = false;  // keep the graph for another pass (always kept with create_graph)
  bool allow_unused = false;  // an input the outputs do not depend on gets an undefined Tensor, not an Error
};

// The gradients of sum_k <outputs[k], grad_outputs[k]> with respect to each of `inputs` (any
// tensors of the graph, leaves or not), returned, not added to grad(): PyTorch's
// torch.autograd.grad. grad_outputs may be empty when every output holds one element. With
// create_graph the gradients are themselves differentiable: a second grad() of them gives second
// derivatives (Hessian-vector products, gradient penalties, the derivatives a physics-informed
// loss holds).
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {}, const GradOptions& options = {});

}  // namespace axiom
