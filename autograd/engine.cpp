// The reverse-mode engine: recording ops into a graph, and walking it backwards.
//
//   forward:  every op computes its output with core, and record() attaches a Node that remembers
//             the inputs and a backward rule (autograd/ops_*.cpp).
//   backward: sort the Nodes reachable from the output so that each comes before the Nodes of its
//             inputs, then visit them in that order: a Node's gradient is complete once every Node
//             that used its output has been visited. Each rule turns the output's gradient into
//             its inputs' gradients; the engine sums them back to the input's shape (undoing
//             broadcasting, in one place) and adds them up where a value was used more than once.
#include <algorithm>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "autograd/tensor.h"
#include "core/error.h"
#include "core/factory.h"
#include "core/ops.h"

namespace axiom {

// --- Tensor basics ---------------------------------------------------------------------------------

Tensor::Tensor(core::Tensor data, bool requires_grad) : impl_(std::make_shared<TensorImpl>()) {
  if (!data.defined()) throw Error("Tensor", "cannot wrap an undefined core tensor");
  impl_->data = std::move(data);
  set_requires_grad(requires_grad);
}

namespace {
// The value behind a Tensor; an undefined Tensor (default-constructed) has none.
TensorImpl& value_of(const std::shared_ptr<TensorImpl>& impl) {
  if (!impl) throw Error("Tensor", "the tensor is undefined");
  return *impl;
}
}  // namespace

const core::Tensor& Tensor::data() const { return value_of(impl_).data; }

Tensor& Tensor::set_requires_grad(bool wanted) {
  if (!is_leaf()) throw Error("set_requires_grad", "only a leaf can change requires_grad; use detach() first");
  if (wanted && !core::is_floating(dtype())) {
    throw Error("set_requires_grad", "only float32 and float64 tensors can require a gradient, not ", dtype());
  }
  impl_->requires_grad = wanted;
  return *this;
}

const core::Tensor& Tensor::grad() const { return value_of(impl_).grad; }
void Tensor::zero_grad() const { value_of(impl_).grad = core::Tensor(); }
const std::shared_ptr<Node>& Tensor::grad_fn() const { return value_of(impl_).grad_fn; }
Tensor Tensor::detach() const { return Tensor(data()); }

std::ostream& operator<<(std::ostream& out, const Tensor& tensor) { return out << tensor.to_string(); }

// --- grad mode -------------------------------------------------------------------------------------

namespace {
thread_local bool grad_mode = true;
}

bool grad_enabled() { return grad_mode; }
NoGrad::NoGrad() : previous_(grad_mode) { grad_mode = false; }
NoGrad::~NoGrad() { grad_mode = previous_; }
EnableGrad::EnableGrad() : previous_(grad_mode) { grad_mode = true; }
EnableGrad::~EnableGrad() { grad_mode = previous_; }

// --- gradient-ready hooks -----------------------------------------------------------------------

namespace {
thread_local GradientReadyHook* innermost_hook = nullptr;
}

GradientReadyHook::GradientReadyHook(Callback callback) : callback_(std::move(callback)), previous_(innermost_hook) {
  if (!callback_) throw Error("GradientReadyHook", "the callback is empty");
  innermost_hook = this;
}

GradientReadyHook::~GradientReadyHook() { innermost_hook = previous_; }

GradientReadyHooksPaused::GradientReadyHooksPaused() : paused_(innermost_hook) { innermost_hook = nullptr; }
GradientReadyHooksPaused::~GradientReadyHooksPaused() { innermost_hook = paused_; }

// Tells every live hook that `leaf`'s gradient is complete.
void notify_gradient_ready(const std::shared_ptr<TensorImpl>& leaf) {
  for (GradientReadyHook* hook = innermost_hook; hook != nullptr; hook = hook->previous_) hook->callback_(Tensor(leaf));
}

// --- recording -------------------------------------------------------------------------------------

namespace {
Edge edge_to(const Tensor& input) {
  if (!input.requires_grad()) return {};
  if (input.is_leaf()) return {.node = nullptr, .leaf = input.impl()};
  return {.node = input.grad_fn(), .leaf = nullptr};
}

void remember_version(Node& node, const core::Tensor& t) {
  if (t.defined()) node.versions.emplace_back(t.storage(), t.storage()->version());
}
}  // namespace

Tensor record(const char* name, const std::vector<Tensor>& inputs, core::Tensor output, Node::Backward backward) {
  const bool wanted = grad_mode && std::any_of(inputs.begin(), inputs.end(),
                                               [](const Tensor& t) { return t.requires_grad(); });
  if (!wanted) return Tensor(std::move(output));
  auto node = std::make_shared<Node>();
  node->name = name;
  node->backward = std::move(backward);
  for (const Tensor& input : inputs) {
    node->inputs.push_back(edge_to(input));
    node->input_shapes.push_back(input.defined() ? input.shape() : Shape{});
    node->input_dtypes.push_back(input.defined() ? input.dtype() : Dtype::float32);
    if (input.defined()) remember_version(*node, input.data());
  }
  remember_version(*node, output);
  auto impl = std::make_shared<TensorImpl>();
  impl->data = std::move(output);
  impl->requires_grad = true;
  impl->grad_fn = std::move(node);
  return Tensor(std::move(impl));
}

// A Node owns the Nodes that made its inputs: destroying the last handle of a long chain would
// recurse once per Node. Instead, each dying Node hands the Nodes only it kept alive to a local
// list, and those die one at a time, their own inputs already taken away.
Node::~Node() {
  std::vector<std::shared_ptr<Node>> pending;
  auto take_inputs = [&pending](Node& node) {
    for (Edge& input : node.inputs) {
      // Only this Node keeps the maker alive? (An input used twice, as in mul(y, y), is held twice.)
      const auto uses = std::count_if(node.inputs.begin(), node.inputs.end(), [&](const Edge& e) { return e.node == input.node; });
      if (input.node && input.node.use_count() == uses) pending.push_back(std::move(input.node));
    }
    node.inputs.clear();
  };
  take_inputs(*this);
  while (!pending.empty()) {
    std::shared_ptr<Node> node = std::move(pending.back());
    pending.pop_back();
    if (node.use_count() == 1) take_inputs(*node);
  }  // `node` dies here with no inputs left to recurse into
}

// --- backward --------------------------------------------------------------------------------------

namespace {

// Sums a gradient over the axes that broadcasting added or stretched, back to `shape`.
//   [4, 5, 3] -> [5, 1]: sum over axis 0 (added) and axis 2 (stretched from 1)
core::Tensor sum_to_shape(core::Tensor grad, const Shape& shape) {
  if (grad.shape() == shape) return grad;
  const int64_t extra = grad.dim() - static_cast<int64_t>(shape.size());
  std::vector<int64_t> axes;
  for (int64_t axis = 0; axis < grad.dim(); ++axis) {
    if (axis < extra || (shape[axis - extra] == 1 && grad.size(axis) != 1)) axes.push_back(axis);
  }
  return core::sum(grad, axes, /*keepdim=*/true).reshape(shape);
}

void accumulate(core::Tensor& slot, const core::Tensor& grad) {
  slot = slot.defined() ? core::add(slot, grad) : grad;
}

// A leaf's gradient is what users (and optimizers, which may scale it in place) read: it gets a
// contiguous buffer of its own, never one shared with another gradient (add hands the same g to
// both of its inputs). A fresh buffer that nothing else holds is kept as it is.
void accumulate_leaf(core::Tensor& slot, core::Tensor grad) {
  if (slot.defined()) {
    slot = core::add(slot, grad);
  } else {
    const bool exclusive = grad.is_contiguous() && grad.storage().use_count() == 1;
    slot = exclusive ? std::move(grad) : grad.clone();
  }
}

// Every Node reachable from `root`, each before the Nodes of its inputs (an iterative depth-first
// search: reversed post-order). Deep graphs need no deep stack.
std::vector<std::shared_ptr<Node>> topological_order(const std::shared_ptr<Node>& root) {
  std::vector<std::shared_ptr<Node>> post_order;
  std::unordered_set<Node*> seen{root.get()};
  std::vector<std::pair<std::shared_ptr<Node>, size_t>> stack{{root, 0}};  // (node, next input to visit)
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    if (next < node->inputs.size()) {
      const Edge& input = node->inputs[next++];
      if (input.node && seen.insert(input.node.get()).second) stack.emplace_back(input.node, 0);
    } else {
      post_order.push_back(std::move(node));
      stack.pop_back();
    }
  }
  std::reverse(post_order.begin(), post_order.end());
  return post_order;
}

// How many uses of each leaf are still to run, among the Nodes of one backward pass; a leaf
// whose count reaches zero has its whole gradient (hooks are told). Only kept when a hook lives.
class LeafCountdown {
 public:
  explicit LeafCountdown(const std::vector<std::shared_ptr<Node>>& order) {
    for (const auto& node : order) {
      for (const Edge& input : node->inputs) {
        if (input.leaf) ++uses_left_[input.leaf.get()];
      }
    }
  }
  // `node` has run (or nothing flowed into it, so it never will): its leaves have one use fewer.
  void node_done(const Node& node) {
    for (const Edge& input : node.inputs) {
      if (input.leaf && --uses_left_[input.leaf.get()] == 0) notify_gradient_ready(input.leaf);
    }
  }

 private:
  std::unordered_map<TensorImpl*, int64_t> uses_left_;
};

void check_not_freed(const Node& node) {
  if (!node.backward) {
    throw Error("backward", "the graph through ", node.name,
                " was freed by an earlier backward(); pass retain_graph = true to the first backward to go "
                "through it twice");
  }
}

void check_versions(const Node& node) {
  for (const auto& [storage, version] : node.versions) {
    const auto alive = storage.lock();
    if (alive && alive->version() != version) {
      throw Error("backward", "a tensor used by ", node.name, " was modified after the forward pass (version ",
                  version, ", now ", alive->version(), "); its gradient would be wrong");
    }
  }
}

// Runs one Node's rule and hands each input its share, summed back to the input's shape.
void run_node(Node& node, const core::Tensor& grad_out, std::unordered_map<Node*, core::Tensor>& grads) {
  check_not_freed(node);
  check_versions(node);
  std::vector<bool> needs(node.inputs.size());
  for (size_t i = 0; i < needs.size(); ++i) needs[i] = static_cast<bool>(node.inputs[i]);
  std::vector<core::Tensor> input_grads = node.backward(grad_out, needs);
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (!needs[i] || i >= input_grads.size() || !input_grads[i].defined()) continue;
    core::Tensor grad = sum_to_shape(std::move(input_grads[i]), node.input_shapes[i]);
    if (grad.dtype() != node.input_dtypes[i]) {
      throw Error("backward", node.name, " returned a ", grad.dtype(), " gradient for a ", node.input_dtypes[i],
                  " input");
    }
    const Edge& input = node.inputs[i];
    if (input.node) {
      accumulate(grads[input.node.get()], grad);
    } else {
      accumulate_leaf(input.leaf->grad, std::move(grad));
    }
  }
}

}  // namespace

void Tensor::backward(const core::Tensor& grad, bool retain_graph) const {
  if (!requires_grad()) {
    throw Error("backward", "this tensor does not require a gradient (no input of the ops that made it did)");
  }
  core::Tensor seed = grad;
  if (!seed.defined()) {
    if (numel() != 1) {
      throw Error("backward", "backward() needs a gradient argument for a tensor of shape ", shape(),
                  "; without one it works on a single element (a loss)");
    }
    seed = core::ones(shape(), dtype(), device());
  } else if (seed.shape() != shape() || seed.dtype() != dtype() || seed.device() != device()) {
    throw Error("backward", "the gradient is ", seed.dtype(), " ", seed.shape(), " on ", seed.device(),
                "; expected ", dtype(), " ", shape(), " on ", device());
  }
  if (is_leaf()) {
    accumulate_leaf(impl_->grad, std::move(seed));
    if (innermost_hook) notify_gradient_ready(impl_);
    return;
  }
  const std::vector<std::shared_ptr<Node>> order = topological_order(impl_->grad_fn);
  std::optional<LeafCountdown> countdown;
  if (innermost_hook) countdown.emplace(order);
  std::unordered_map<Node*, core::Tensor> grads{{impl_->grad_fn.get(), seed}};
  for (const auto& node : order) {
    auto found = grads.find(node.get());
    if (found == grads.end()) {  // nothing flowed here
      if (countdown) countdown->node_done(*node);
      continue;
    }
    const core::Tensor grad_out = std::move(found->second);
    grads.erase(found);
    run_node(*node, grad_out, grads);
    if (countdown) countdown->node_done(*node);
    if (!retain_graph) {  // free the graph: what the rule saved, and the inputs' values
      node->backward = nullptr;
      node->versions.clear();
      node->inputs.clear();  // `order` keeps the Nodes themselves alive until the loop ends
    }
  }
}

}  // namespace axiom
