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
#include <utility>

#include "autograd/ops.h"
#include "autograd/internal.h"
#include "autograd/tensor.h"
#include "core/error.h"
#include "core/factory.h"
#include "core/launch.h"

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

const core::Tensor& Tensor::value() const { return value_of(impl_).data; }

const core::Tensor& core_tensor(const Tensor& x) { return value_of(x.impl()).data; }

Tensor& Tensor::set_requires_grad(bool wanted) {
  if (!is_leaf()) throw Error("set_requires_grad", "only a leaf can change requires_grad; use detach() first");
  if (wanted && !is_floating(dtype())) {
    throw Error("set_requires_grad", "only float32 and float64 tensors can require a gradient, not ", dtype());
  }
  impl_->requires_grad = wanted;
  return *this;
}

Tensor Tensor::grad() const { return value_of(impl_).grad; }
void Tensor::zero_grad() const { value_of(impl_).grad = Tensor(); }
const std::shared_ptr<Node>& Tensor::grad_fn() const { return value_of(impl_).grad_fn; }
Tensor Tensor::detach() const { return Tensor(value()); }

std::ostream& operator<<(std::ostream& out, const Tensor& tensor) { return out << tensor.to_string(); }

// --- grad mode -------------------------------------------------------------------------------------

namespace {
thread_local bool grad_mode = true;
}

bool grad_enabled() { return grad_mode; }
bool records_nothing() { return !grad_mode && !profiling(); }
NoGrad::NoGrad() : previous_(grad_mode) { grad_mode = false; }
NoGrad::~NoGrad() { grad_mode = previous_; }
EnableGrad::EnableGrad() : previous_(grad_mode) { grad_mode = true; }
EnableGrad::~EnableGrad() { grad_mode = previous_; }

// --- name scopes ------------------------------------------------------------------------------------

namespace {
thread_local std::shared_ptr<const std::string> name_scope;  // the innermost scope's whole name
}

NameScope::NameScope(const std::string& name) : previous_(name_scope) {
  if (name.empty() || name.find('/') != std::string::npos) {
    throw Error("NameScope", "a scope's name is not empty and has no '/' (scopes nest by \"/\"), got '", name, "'");
  }
  name_scope = std::make_shared<const std::string>(previous_ ? *previous_ + "/" + name : name);
}
NameScope::~NameScope() { name_scope = previous_; }
std::string current_name_scope() { return name_scope ? *name_scope : std::string(); }

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

namespace {
bool any_requires_grad(const std::vector<Tensor>& inputs) {
  return std::any_of(inputs.begin(), inputs.end(), [](const Tensor& t) { return t.requires_grad(); });
}

// Whether this thread is recording a backward pass (backward or grad with create_graph): the
// Nodes it records belong to the graph of a gradient (Node::in_backward_pass).
thread_local bool recording_backward_pass = false;

class RecordingBackwardPass {
 public:
  explicit RecordingBackwardPass(bool create_graph) : previous_(recording_backward_pass) {
    recording_backward_pass = previous_ || create_graph;
  }
  ~RecordingBackwardPass() { recording_backward_pass = previous_; }
  RecordingBackwardPass(const RecordingBackwardPass&) = delete;
  RecordingBackwardPass& operator=(const RecordingBackwardPass&) = delete;

 private:
  bool previous_;
};

// The output of a new Node for `output` made from `inputs` by `name` with `backward`.
Tensor recorded(const char* name, const std::vector<Tensor>& inputs, core::Tensor output, std::shared_ptr<Node> node) {
  node->name = name;
  node->in_backward_pass = recording_backward_pass;
  node->scope = name_scope;
  for (const Tensor& input : inputs) {
    node->inputs.push_back(edge_to(input));
    node->input_shapes.push_back(input.defined() ? input.shape() : Shape{});
    node->input_dtypes.push_back(input.defined() ? input.dtype() : Dtype::float32);
    if (input.defined()) remember_version(*node, core_tensor(input));
  }
  remember_version(*node, output);
  auto impl = std::make_shared<TensorImpl>();
  impl->data = std::move(output);
  impl->requires_grad = true;
  impl->grad_fn = std::move(node);
  return Tensor(std::move(impl));
}
}  // namespace

Tensor record(const char* name, const std::vector<Tensor>& inputs, core::Tensor output, Rule rule) {
  if (profiling()) profile_op(name, inputs, output);
  if (!grad_mode || !any_requires_grad(inputs)) return Tensor(std::move(output));
  auto node = std::make_shared<Node>();
  node->backward = [rule = std::move(rule)](const Tensor& g, const Tensor&, const Needs& needs) {
    return rule(g, needs);
  };
  return recorded(name, inputs, std::move(output), std::move(node));
}

Tensor record_keeping_output(const char* name, const std::vector<Tensor>& inputs, core::Tensor output,
                             Node::Backward rule) {
  if (profiling()) profile_op(name, inputs, output);
  if (!grad_mode || !any_requires_grad(inputs)) return Tensor(std::move(output));
  auto node = std::make_shared<Node>();
  node->backward = std::move(rule);
  node->output = output;
  return recorded(name, inputs, std::move(output), std::move(node));
}

Tensor record_fused(const char* name, const std::vector<Tensor>& inputs, core::Tensor output, Rule rule,
                    Node::Composite composite) {
  if (profiling()) profile_op(name, inputs, output);
  if (!grad_mode || !any_requires_grad(inputs)) return Tensor(std::move(output));
  auto node = std::make_shared<Node>();
  node->backward = [rule = std::move(rule)](const Tensor& g, const Tensor&, const Needs& needs) {
    return rule(g, needs);
  };
  node->composite = std::move(composite);
  node->saved_inputs = inputs;
  return recorded(name, inputs, std::move(output), std::move(node));
}

// A Node owns the Nodes that made its inputs: destroying the last handle of a long chain would
// recurse once per Node. Instead, each dying Node hands the Nodes only it kept alive to a local
// list, and those die one at a time, their own inputs already taken away.
Node::~Node() {
  std::vector<std::shared_ptr<Node>> pending;
  auto take_inputs = [&pending](Node& node) {
    // The rule's captured tensors first: they hold the Nodes that made this Node's inputs too, which
    // the edges still keep alive, so nothing dies here and the counts below see the edges alone.
    node.backward = nullptr;
    node.composite = nullptr;
    node.saved_inputs.clear();
    for (Edge& input : node.inputs) {
      // Only this Node keeps the maker alive? (An input used twice, as in mul(y, y), is held twice.)
      const auto uses =
          std::count_if(node.inputs.begin(), node.inputs.end(), [&](const Edge& e) { return e.node == input.node; });
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

// (internal.h) In differentiable ops, like the rules: a graph of the backward pass goes through it too.
Tensor sum_to_shape(Tensor grad, const Shape& shape) {
  if (grad.shape() == shape) return grad;
  const int64_t extra = grad.dim() - static_cast<int64_t>(shape.size());
  std::vector<int64_t> axes;
  for (int64_t axis = 0; axis < grad.dim(); ++axis) {
    if (axis < extra || (shape[axis - extra] == 1 && grad.size(axis) != 1)) axes.push_back(axis);
  }
  return sum(grad, axes, /*keepdim=*/true).reshape(shape);
}

namespace {

void accumulate(Tensor& slot, const Tensor& grad) { slot = slot.defined() ? add(slot, grad) : grad; }

// The numbers of a gradient that no one else holds, moved out (so that accumulate_leaf can see
// that the buffer is not shared, and keep it instead of copying it).
core::Tensor numbers_of(Tensor grad) {
  if (grad.impl().use_count() == 1) return std::move(grad.impl()->data);
  return core_tensor(grad);
}

// A leaf's gradient is what users (and optimizers, which may scale its numbers in place) read: it
// gets a contiguous buffer of its own, never one shared with another gradient (add hands the same g
// to both of its inputs). A fresh buffer that nothing else holds is kept as it is. With a graph
// (create_graph), the sum and the copy are ops, so that the gradient can be differentiated again.
void accumulate_leaf(Tensor& slot, Tensor grad, bool create_graph) {
  if (create_graph) {
    if (slot.defined()) {
      slot = add(slot, grad);
    } else {
      const bool exclusive =
          grad.impl().use_count() == 1 && grad.is_contiguous() && core_tensor(grad).storage().use_count() == 1;
      slot = exclusive ? std::move(grad) : mul(grad, 1.0);  // mul by 1: a copy that keeps the graph
    }
    return;
  }
  core::Tensor numbers = numbers_of(std::move(grad));
  if (slot.defined()) {
    slot = Tensor(core::add(core_tensor(slot), numbers));
  } else {
    const bool exclusive = numbers.is_contiguous() && numbers.storage().use_count() == 1;
    slot = Tensor(exclusive ? std::move(numbers) : numbers.clone());
  }
}

// Every Node reachable from the roots, each before the Nodes of its inputs (an iterative
// depth-first search: reversed post-order). Deep graphs need no deep stack.
std::vector<std::shared_ptr<Node>> topological_order(const std::vector<std::shared_ptr<Node>>& roots) {
  std::vector<std::shared_ptr<Node>> post_order;
  std::unordered_set<Node*> seen;
  for (const auto& root : roots) {
    if (!root || !seen.insert(root.get()).second) continue;
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
  }
  std::reverse(post_order.begin(), post_order.end());
  return post_order;
}

}  // namespace

std::vector<std::shared_ptr<Node>> nodes_of(const std::vector<Tensor>& outputs) {
  std::vector<std::shared_ptr<Node>> roots;
  for (const Tensor& output : outputs) {
    if (output.defined()) roots.push_back(output.grad_fn());
  }
  return topological_order(roots);
}

namespace {

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
                " was freed by an earlier backward(); pass {.retain_graph = true} to the first backward to go "
                "through it twice");
  }
}

void check_versions(const Node& node) {
  for (const auto& [storage, version] : node.versions) {
    const auto alive = storage.lock();
    if (alive && alive->version() != version) {
      throw Error("backward", "a tensor used by ", node.name, " was modified after the forward pass (version ", version,
                  ", now ", alive->version(), "); its gradient would be wrong");
    }
  }
}

// The output of `node`, made by it, for a rule that uses its output; undefined for other rules.
Tensor output_of(const std::shared_ptr<Node>& node) {
  if (!node->output.defined()) return Tensor();
  auto impl = std::make_shared<TensorImpl>();
  impl->data = node->output;
  impl->requires_grad = true;
  impl->grad_fn = node;
  return Tensor(std::move(impl));
}

// A fused op's gradients, differentiable: its composite definition run again on its inputs, and
// differentiated with a graph.
Grads composite_grads(const Node& node, const Tensor& g, const Needs& needs) {
  std::vector<Tensor> wanted;
  std::vector<size_t> slots;
  for (size_t i = 0; i < needs.size(); ++i) {
    if (needs[i]) wanted.push_back(node.saved_inputs[i]), slots.push_back(i);
  }
  const Tensor y = node.composite(node.saved_inputs);
  const std::vector<Tensor> found = grad({y}, wanted, {g}, {.create_graph = true, .allow_unused = true});
  Grads grads(needs.size());
  for (size_t k = 0; k < slots.size(); ++k) grads[slots[k]] = found[k];
  return grads;
}

// While it lives, ops record in the scope of `node` (whatever scope is current).
class InScopeOf {
 public:
  explicit InScopeOf(const Node& node) : previous_(std::exchange(name_scope, node.scope)) {}
  ~InScopeOf() { name_scope = previous_; }
  InScopeOf(const InScopeOf&) = delete;
  InScopeOf& operator=(const InScopeOf&) = delete;

 private:
  std::shared_ptr<const std::string> previous_;
};

// A Node's rule: with recording off for first derivatives, on (and, for a fused op, through its
// composite) when a graph of the backward pass is wanted.
Grads run_rule(const std::shared_ptr<Node>& node, const Tensor& grad_out, const Needs& needs, bool create_graph) {
  check_not_freed(*node);
  check_versions(*node);
  const ProfiledSpan profiled(node->name, "rule");
  if (!create_graph) {
    const NoGrad first_order;
    return node->backward(grad_out, output_of(node), needs);
  }
  const EnableGrad recording;
  const InScopeOf in_scope(*node);  // the gradient's ops are drawn with the op they differentiate
  if (node->composite) return composite_grads(*node, grad_out, needs);
  return node->backward(grad_out, output_of(node), needs);
}

// What grad() wants: the gradients of some inputs, leaves or not, found during the walk.
class Targets {
 public:
  explicit Targets(const std::vector<Tensor>& inputs) : found(inputs.size()) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      const void* key =
          inputs[i].is_leaf() ? static_cast<const void*>(inputs[i].impl().get()) : inputs[i].grad_fn().get();
      slots_[key].push_back(i);
    }
  }
  bool contains(const void* key) const { return slots_.count(key) > 0; }
  void add(const void* key, const Tensor& grad) {
    for (size_t i : slots_.at(key)) accumulate(found[i], grad);
  }
  std::vector<Tensor> found;

 private:
  std::unordered_map<const void*, std::vector<size_t>> slots_;  // a leaf's impl or a Node -> input indices
};

// Whether a gradient sent along `e` can reach a target: e is a target leaf, or ends at a Node that
// is a target or leads to one (`leading`).
bool reaches_target(const Edge& e, const Targets& targets, const std::unordered_set<Node*>& leading) {
  return (e.leaf && targets.contains(e.leaf.get())) ||
         (e.node && (targets.contains(e.node.get()) || leading.count(e.node.get()) > 0));
}

// The Nodes whose rules must run to reach a target: those with an input edge that reaches one.
std::unordered_set<Node*> nodes_leading_to(const std::vector<std::shared_ptr<Node>>& order, const Targets& targets) {
  std::unordered_set<Node*> leading;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {  // inputs before the Nodes that use them
    const auto& inputs = (*it)->inputs;
    if (std::any_of(inputs.begin(), inputs.end(), [&](const Edge& e) { return reaches_target(e, targets, leading); })) {
      leading.insert(it->get());
    }
  }
  return leading;
}

// Hands each input its share of a Node's gradients, summed back to the input's shape: to the Node
// that made it, to grad() of a leaf, or (grad()) to the targets.
void send_to_inputs(const Node& node, Grads input_grads, const Needs& needs, std::unordered_map<Node*, Tensor>& grads,
                    Targets* targets, bool create_graph) {
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (!needs[i] || i >= input_grads.size() || !input_grads[i].defined()) continue;
    Tensor grad = sum_to_shape(std::move(input_grads[i]), node.input_shapes[i]);
    if (grad.dtype() != node.input_dtypes[i]) {
      throw Error("backward", node.name, " returned a ", grad.dtype(), " gradient for a ", node.input_dtypes[i],
                  " input");
    }
    const Edge& input = node.inputs[i];
    if (input.node) {
      accumulate(grads[input.node.get()], grad);
    } else if (targets) {
      targets->add(input.leaf.get(), grad);
    } else {
      accumulate_leaf(input.leaf->grad, std::move(grad), create_graph);
    }
  }
}

// Frees what a Node kept for its backward pass: the rule (and what it saved) and the inputs' edges.
void free_node(Node& node) {
  node.backward = nullptr;
  node.composite = nullptr;
  node.saved_inputs.clear();
  node.output = core::Tensor();
  node.versions.clear();
  node.inputs.clear();
}

// One backward pass over `order`, from the gradients already in `grads`. Without targets,
// gradients reaching a leaf are added to its grad(); with targets, only the targets' gradients
// are collected, and only the Nodes that lead to one run.
void walk(const std::vector<std::shared_ptr<Node>>& order, std::unordered_map<Node*, Tensor>& grads, Targets* targets,
          bool create_graph, bool retain_graph, LeafCountdown* countdown) {
  const RecordingBackwardPass marking(create_graph);
  const InBackwardWalk profiled_as_backward;
  std::unordered_set<Node*> leading;
  if (targets) leading = nodes_leading_to(order, *targets);
  for (const auto& node : order) {
    auto found = grads.find(node.get());
    if (found == grads.end()) {  // nothing flowed here
      if (countdown) countdown->node_done(*node);
      continue;
    }
    const Tensor grad_out = std::move(found->second);
    grads.erase(found);
    check_not_freed(*node);  // (a freed Node has no inputs left: without this, grad() would call its inputs unused)
    if (targets && targets->contains(node.get())) targets->add(node.get(), grad_out);
    if (targets && !leading.count(node.get())) continue;
    Needs needs(node->inputs.size());
    for (size_t i = 0; i < needs.size(); ++i) {
      const Edge& e = node->inputs[i];
      needs[i] = static_cast<bool>(e) && (!targets || reaches_target(e, *targets, leading));
    }
    send_to_inputs(*node, run_rule(node, grad_out, needs, create_graph), needs, grads, targets, create_graph);
    if (countdown) countdown->node_done(*node);
    if (!retain_graph) free_node(*node);  // `order` keeps the Nodes themselves alive until the loop ends
  }
}

// The gradient that starts a pass at `output`: `seed`, checked, or 1 for a one-element output.
Tensor seed_for(const char* op, const Tensor& output, const Tensor& seed) {
  if (!seed.defined()) {
    if (output.numel() != 1) {
      throw Error(op, "needs a gradient argument for a tensor of shape ", output.shape(),
                  "; without one it works on a single element (a loss)");
    }
    return Tensor(core::ones(output.shape(), output.dtype(), output.device()));
  }
  if (seed.shape() != output.shape() || seed.dtype() != output.dtype() || seed.device() != output.device()) {
    throw Error(op, "the gradient is ", seed.dtype(), " ", seed.shape(), " on ", seed.device(), "; expected ",
                output.dtype(), " ", output.shape(), " on ", output.device());
  }
  return seed;
}

}  // namespace

void Tensor::backward(const Tensor& grad, const BackwardOptions& options) const {
  if (!requires_grad()) {
    throw Error("backward", "this tensor does not require a gradient (no input of the ops that made it did)");
  }
  const Tensor seed = seed_for("backward", *this, grad);
  if (is_leaf()) {
    accumulate_leaf(impl_->grad, seed, options.create_graph);
    if (innermost_hook) notify_gradient_ready(impl_);
    return;
  }
  const std::vector<std::shared_ptr<Node>> order = topological_order({impl_->grad_fn});
  std::optional<LeafCountdown> countdown;
  if (innermost_hook) countdown.emplace(order);
  std::unordered_map<Node*, Tensor> grads{{impl_->grad_fn.get(), seed}};
  walk(order, grads, nullptr, options.create_graph, options.retain_graph || options.create_graph,
       countdown ? &*countdown : nullptr);
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, const GradOptions& options) {
  if (outputs.empty()) throw Error("grad", "no outputs given");
  if (!grad_outputs.empty() && grad_outputs.size() != outputs.size()) {
    throw Error("grad", "got ", grad_outputs.size(), " grad_outputs for ", outputs.size(), " outputs");
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].requires_grad()) throw Error("grad", "input ", i, " does not require a gradient");
  }
  Targets targets(inputs);
  std::unordered_map<Node*, Tensor> grads;
  std::vector<std::shared_ptr<Node>> roots;
  for (size_t k = 0; k < outputs.size(); ++k) {
    const Tensor& output = outputs[k];
    if (!output.requires_grad()) {
      throw Error("grad", "output ", k, " does not require a gradient (no input of the ops that made it did)");
    }
    const Tensor seed = seed_for("grad", output, grad_outputs.empty() ? Tensor() : grad_outputs[k]);
    if (output.is_leaf()) {
      if (targets.contains(output.impl().get())) targets.add(output.impl().get(), seed);
      continue;
    }
    accumulate(grads[output.grad_fn().get()], seed);
    roots.push_back(output.grad_fn());
  }
  walk(topological_order(roots), grads, &targets, options.create_graph, options.retain_graph || options.create_graph,
       nullptr);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!targets.found[i].defined() && !options.allow_unused) {
      throw Error("grad", "input ", i,
                  " is not used by the outputs (pass allow_unused = true to get an undefined gradient)");
    }
  }
  return std::move(targets.found);
}

}  // namespace axiom
