// Custom ops (custom_op.h): the forward run with recording off, one Node whose rule calls the user's
// backward and checks what it returns.
#include "autograd/custom_op.h"

#include <mutex>
#include <set>

#include "autograd/factory.h"
#include "autograd/internal.h"
#include "core/error.h"

namespace axiom {

namespace {

// Every custom op's name, for the life of the program: a Node keeps a pointer to its op's name.
const char* register_name(const std::string& name) {
  static std::mutex mutex;
  static std::set<std::string> names;
  const std::lock_guard lock(mutex);
  const auto [it, added] = names.insert(name);
  if (!added) throw Error(name, "a custom op of this name is defined already; define each op once");
  return it->c_str();
}

// The custom ops whose forward this thread is running: a forward that calls its own op would
// recurse until the stack overflows.
thread_local std::set<const void*> forwards_running;

class ForwardRunning {
 public:
  ForwardRunning(const void* op, const std::string& name) : op_(op) {
    if (!forwards_running.insert(op).second) throw Error(name, "the forward calls the op itself");
  }
  ~ForwardRunning() { forwards_running.erase(op_); }
  ForwardRunning(const ForwardRunning&) = delete;
  ForwardRunning& operator=(const ForwardRunning&) = delete;

 private:
  const void* op_;
};

// The rule of a gradient computed by a once_differentiable backward: there is none.
Rule no_second_derivative(const std::string& name) {
  return [name](const Tensor&, const Needs&) -> Grads {
    throw Error(name, "the backward is once_differentiable: its gradients cannot be differentiated again");
  };
}

// J u from the op's jvp rule, checked: a tensor like the output.
Tensor checked_jvp(const std::string& name, const Jvp& jvp, const std::vector<Tensor>& inputs,
                   const std::vector<Tensor>& tangents, const Tensor& output) {
  const Tensor tangent = jvp(inputs, tangents);
  if (!tangent.defined()) throw Error(name, "the jvp returned an undefined tensor");
  if (tangent.shape() != output.shape() || tangent.dtype() != output.dtype() || tangent.device() != output.device()) {
    throw Error(name, "the jvp returned ", core::shape_str(tangent.shape()), " ", tangent.dtype(), " on ",
                tangent.device(), "; the output is ", core::shape_str(output.shape()), " ", output.dtype(), " on ",
                output.device());
  }
  return tangent;
}

// The rule of gradient `i` (J_i^T g, in input i's shape) of a once_differentiable op with a jvp
// rule. Its sources are the op's inputs and g. It is linear in g, so its derivative along c is
// J_i c: the jvp with tangent c for input i and zeros for the others. Its derivative with respect
// to the inputs is not known.
Rule through_jvp(const std::string& name, const Jvp& jvp, const std::vector<Tensor>& inputs, const Tensor& output,
                 size_t i) {
  return [=](const Tensor& c, const Needs& needs) -> Grads {
    for (size_t j = 0; j < inputs.size(); ++j) {
      if (needs[j]) return no_second_derivative(name)(c, needs);
    }
    std::vector<Tensor> tangents;
    for (const Tensor& input : inputs) tangents.push_back(zeros_like(input));
    tangents[i] = c;
    Grads grads(inputs.size() + 1);
    grads.back() = checked_jvp(name, jvp, inputs, tangents, output);  // d(J_i^T g)/dg along c
    return grads;
  };
}

// A gradient in the input's shape, or in a shape the input broadcasts to (the engine sums it back
// to the input's shape, as for the built-in ops).
bool summable_to(const Shape& grad, const Shape& input) {
  if (grad == input) return true;
  try {
    return core::broadcast_shapes("", grad, input) == grad;
  } catch (const Error&) {
    return false;
  }
}

void check_gradients(const std::string& name, const Grads& grads, const std::vector<Tensor>& inputs,
                     const Needs& needs) {
  if (grads.size() != inputs.size()) {
    throw Error(name, "the backward returned ", grads.size(), " gradients for ", inputs.size(), " inputs");
  }
  for (size_t i = 0; i < grads.size(); ++i) {
    const Tensor& grad = grads[i];
    if (!grad.defined()) {
      if (needs[i]) throw Error(name, "the backward returned no gradient for input ", i, ", which needs one");
      continue;
    }
    const Tensor& input = inputs[i];
    if (!summable_to(grad.shape(), input.shape())) {
      throw Error(name, "the backward's gradient for input ", i, " has shape ", core::shape_str(grad.shape()),
                  "; the input has ", core::shape_str(input.shape()));
    }
    if (grad.dtype() != input.dtype()) {
      throw Error(name, "the backward's gradient for input ", i, " is ", grad.dtype(), "; the input is ",
                  input.dtype());
    }
    if (grad.device() != input.device()) {
      throw Error(name, "the backward's gradient for input ", i, " is on ", grad.device(), "; the input is on ",
                  input.device());
    }
  }
}

}  // namespace

struct CustomOp::Definition {
  std::string name;
  const char* recorded_name;  // the registry's copy, which every Node of the op points to
  Forward forward;
  Backward backward;
  CustomOpOptions options;

  // With recording on (a graph of the backward pass is wanted), a differentiable backward records
  // as it runs; a once_differentiable one runs with recording off, and each gradient it returns
  // is recorded as made by a rule that refuses to be differentiated.
  Grads gradients(const std::vector<Tensor>& inputs, const Tensor& output, const Tensor& grad_output,
                  const Needs& needs) const {
    if (!options.once_differentiable || !grad_enabled()) {
      Grads grads = backward({inputs, output, grad_output, needs});
      check_gradients(name, grads, inputs, needs);
      return grads;
    }
    Grads grads;
    {
      const NoGrad opaque;
      grads = backward({inputs, output.detach(), grad_output.detach(), needs});
    }
    check_gradients(name, grads, inputs, needs);
    std::vector<Tensor> sources = inputs;
    sources.push_back(grad_output);
    for (size_t i = 0; i < grads.size(); ++i) {
      if (!grads[i].defined()) continue;
      if (options.jvp) {
        const Tensor summed = sum_to_shape(grads[i], inputs[i].shape());  // numbers with no graph
        grads[i] = record(recorded_name, sources, core_tensor(summed),
                          through_jvp(name, options.jvp, inputs, output.detach(), i));
      } else {
        grads[i] = record(recorded_name, sources, core_tensor(grads[i]), no_second_derivative(name));
      }
    }
    return grads;
  }
};

CustomOp::CustomOp(std::string name, Forward forward, Backward backward, CustomOpOptions options) {
  if (name.empty()) throw Error("CustomOp", "a custom op needs a name");
  if (!forward || !backward) throw Error(name, "a custom op needs both a forward and a backward");
  if (options.jvp && !options.once_differentiable) {
    throw Error(name, "a jvp rule is for a once_differentiable op: forward mode differentiates this op's backward");
  }
  const char* recorded_name = register_name(name);
  definition_ = std::make_shared<const Definition>(
      Definition{std::move(name), recorded_name, std::move(forward), std::move(backward), options});
}

const std::string& CustomOp::name() const { return definition_->name; }

Tensor CustomOp::operator()(const std::vector<Tensor>& inputs) const {
  const std::string& name = definition_->name;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) throw Error(name, "input ", i, " is undefined");
  }
  const ProfiledSpan profiled(definition_->recorded_name, "op");  // its own ops nest inside it
  Tensor output;
  {
    const ForwardRunning running(definition_.get(), name);
    const NoGrad one_node;  // what the forward computes is one node: this op's
    output = definition_->forward(inputs);
  }
  if (!output.defined()) throw Error(name, "the forward returned an undefined tensor");
  return record_keeping_output(
      definition_->recorded_name, inputs, core_tensor(output),
      [definition = definition_, inputs](const Tensor& g, const Tensor& y, const Needs& needs) {
        return definition->gradients(inputs, y, g, needs);
      });
}

}  // namespace axiom
