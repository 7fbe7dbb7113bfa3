#include "autograd/functional.h"

#include "autograd/ops.h"
#include "core/error.h"
#include "core/factory.h"
#include "autograd/internal.h"

namespace axiom {

namespace {

// Fresh leaves holding the inputs' numbers, each wanting a gradient.
std::vector<Tensor> fresh_leaves(const char* op, const std::vector<Tensor>& inputs) {
  if (inputs.empty()) throw Error(op, "no inputs given");
  std::vector<Tensor> leaves;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) throw Error(op, "input ", i, " is undefined");
    if (!is_floating(inputs[i].dtype()))
      throw Error(op, "input ", i, " is ", inputs[i].dtype(), "; derivatives need float32 or float64");
    leaves.emplace_back(core_tensor(inputs[i]), /*requires_grad=*/true);
  }
  return leaves;
}

// f on the leaves, with recording on (also inside a caller's NoGrad).
Tensor called(const char* op, const TensorFunction& f, const std::vector<Tensor>& leaves) {
  const EnableGrad recording;
  Tensor y = f(leaves);
  if (!y.defined()) throw Error(op, "the function returned an undefined tensor");
  return y;
}

Tensor zeros_like(const Tensor& t) { return Tensor(core::zeros(t.shape(), t.dtype(), t.device())); }

// The gradients of <y, v> (v undefined: y holds one element) with respect to the leaves, zeros for
// a leaf y does not depend on.
std::vector<Tensor> gradients(const Tensor& y, const std::vector<Tensor>& leaves, const Tensor& v, bool create_graph) {
  std::vector<Tensor> found(leaves.size());
  if (y.requires_grad()) {
    found = grad({y}, leaves, v.defined() ? std::vector<Tensor>{v} : std::vector<Tensor>{},
                 {.create_graph = create_graph, .retain_graph = true, .allow_unused = true});
  }
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (!found[i].defined()) found[i] = zeros_like(leaves[i]);
  }
  return found;
}

// sum over i of <a_i, b_i>, a one-element tensor
Tensor inner(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  Tensor total;
  for (size_t i = 0; i < a.size(); ++i) {
    const Tensor term = sum(mul(a[i], b[i]));
    total = total.defined() ? add(total, term) : term;
  }
  return total;
}

void check_like(const char* op, const char* what, const std::vector<Tensor>& given, const std::vector<Tensor>& inputs) {
  if (given.size() != inputs.size())
    throw Error(op, "got ", given.size(), " ", what, " for ", inputs.size(), " inputs");
  for (size_t i = 0; i < given.size(); ++i) {
    if (!given[i].defined() || given[i].shape() != inputs[i].shape() || given[i].dtype() != inputs[i].dtype()) {
      throw Error(op, what, " ", i, " must be ", inputs[i].dtype(), " ", inputs[i].shape(), ", got ",
                  given[i].defined() ? given[i].shape() : Shape{}, given[i].defined() ? "" : " (undefined)");
    }
  }
}

Tensor detached_unless(const Tensor& t, bool keep_graph) { return keep_graph ? t : t.detach(); }

}  // namespace

VjpResult vjp(const TensorFunction& f, const std::vector<Tensor>& inputs, const Tensor& v, bool create_graph) {
  const std::vector<Tensor> leaves = fresh_leaves("vjp", inputs);
  const Tensor y = called("vjp", f, leaves);
  if (!v.defined() || v.shape() != y.shape()) {
    throw Error("vjp", "v must have the output's shape ", y.shape(), ", got ", v.defined() ? v.shape() : Shape{});
  }
  std::vector<Tensor> grads = gradients(y, leaves, v, create_graph);
  for (Tensor& g : grads) g = detached_unless(g, create_graph);
  return {detached_unless(y, create_graph), grads};
}

JvpResult jvp(const TensorFunction& f, const std::vector<Tensor>& inputs, const std::vector<Tensor>& tangents,
              bool create_graph) {
  const std::vector<Tensor> leaves = fresh_leaves("jvp", inputs);
  check_like("jvp", "tangent", tangents, inputs);
  const Tensor y = called("jvp", f, leaves);
  if (!y.requires_grad()) return {y, zeros_like(y)};  // f does not depend on its inputs
  const Tensor w(core::zeros(y.shape(), y.dtype(), y.device()),
                 /*requires_grad=*/true);  // any value: J^T w is linear in w
  const std::vector<Tensor> transposed = gradients(y, leaves, w, /*create_graph=*/true);  // J^T w
  const EnableGrad recording;
  const Tensor projected = inner(transposed, tangents);  // <J^T w, u> = <w, J u>
  Tensor tangent = projected.requires_grad() ? gradients(projected, {w}, Tensor(), create_graph)[0] : zeros_like(y);
  return {detached_unless(y, create_graph), detached_unless(tangent, create_graph)};
}

std::vector<Tensor> hvp(const TensorFunction& f, const std::vector<Tensor>& inputs, const std::vector<Tensor>& v) {
  const std::vector<Tensor> leaves = fresh_leaves("hvp", inputs);
  check_like("hvp", "v", v, inputs);
  const Tensor y = called("hvp", f, leaves);
  if (y.numel() != 1) throw Error("hvp", "the function must return one element (a loss), got shape ", y.shape());
  const std::vector<Tensor> first = gradients(y, leaves, Tensor(), /*create_graph=*/true);
  const EnableGrad recording;
  const Tensor projected = inner(first, v);  // <grad f, v>
  if (!projected.requires_grad()) {          // f is at most linear: H = 0
    std::vector<Tensor> zeros;
    for (const Tensor& leaf : leaves) zeros.push_back(zeros_like(leaf));
    return zeros;
  }
  std::vector<Tensor> result = gradients(projected, leaves, Tensor(), /*create_graph=*/false);
  for (Tensor& r : result) r = r.detach();
  return result;
}

Tensor jacobian(const std::function<Tensor(const Tensor&)>& f, const Tensor& x) {
  const std::vector<Tensor> leaves = fresh_leaves("jacobian", {x});
  const Tensor y = called(
      "jacobian", [&](const std::vector<Tensor>& in) { return f(in[0]); }, leaves);
  Shape shape = y.shape();
  shape.insert(shape.end(), x.shape().begin(), x.shape().end());
  std::vector<Tensor> rows;
  for (int64_t j = 0; j < y.numel(); ++j) {  // row j: the gradient of y's element j
    core::Tensor seed = core::zeros({y.numel()}, y.dtype(), y.device());
    seed.set({j}, 1.0);
    rows.push_back(gradients(y, leaves, Tensor(seed.reshape(y.shape())), false)[0].detach().reshape({-1}));
  }
  if (rows.empty()) return Tensor(core::zeros(shape, x.dtype(), x.device()));
  return stack(rows, 0).reshape(shape);
}

Tensor hessian(const std::function<Tensor(const Tensor&)>& f, const Tensor& x) {
  return jacobian(
      [&](const Tensor& at) {
        const Tensor y = f(at);
        if (y.numel() != 1)
          throw Error("hessian", "the function must return one element (a loss), got shape ", y.shape());
        return gradients(y, {at}, Tensor(), /*create_graph=*/true)[0];
      },
      x);
}

}  // namespace axiom
