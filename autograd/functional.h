// Derivatives of a function of tensors, returned as values: vector-Jacobian and Jacobian-vector
// products, Hessian-vector products, whole Jacobians and Hessians of small functions (PyTorch's
// torch.autograd.functional, JAX's vjp / jvp / hessian). Built on grad() (autograd/tensor.h).
//
//   auto f = [](const std::vector<Tensor>& x) { return sum(mul(x[0], mul(x[0], x[0]))); };  // sum x^3
//   std::vector<Tensor> hv = hvp(f, {x}, {v});   // 6 x * v
//
// The function is called on fresh leaves holding the inputs' numbers (they share memory, and
// the inputs' own graphs are not followed): what comes back is the derivative at those values.
// Unless create_graph is asked for, the results carry no graph.
#pragma once

#include <functional>
#include <vector>

#include "tensor.h"

namespace axiom {

using TensorFunction = std::function<Tensor(const std::vector<Tensor>& inputs)>;

struct VjpResult {
  Tensor output;              // f(x)
  std::vector<Tensor> grads;  // v^T J, one per input, in the inputs' shapes (zeros where f does not depend on it)
};
// f(x) and v^T df/dx at x; v has f(x)'s shape.
VjpResult vjp(const TensorFunction& f, const std::vector<Tensor>& inputs, const Tensor& v, bool create_graph = false);

struct JvpResult {
  Tensor output;   // f(x)
  Tensor tangent;  // J u = sum over inputs of df/dx_i u_i, in f(x)'s shape
};
// f(x) and the directional derivative J u at x (forward mode), one tangent per input. Computed by
// the double-vjp trick: J^T w is linear in w, so J u is the gradient of <J^T w, u> with respect to w.
JvpResult jvp(const TensorFunction& f, const std::vector<Tensor>& inputs, const std::vector<Tensor>& tangents,
              bool create_graph = false);

// H v for a function f with one-element output: the gradient of <grad f(x), v>, one per input.
std::vector<Tensor> hvp(const TensorFunction& f, const std::vector<Tensor>& inputs, const std::vector<Tensor>& v);

// For small functions of one tensor: df/dx in shape f(x).shape + x.shape (one backward pass per
// element of f(x)), and, for a one-element f, d2f/dx2 in shape x.shape + x.shape.
Tensor jacobian(const std::function<Tensor(const Tensor&)>& f, const Tensor& x);
Tensor hessian(const std::function<Tensor(const Tensor&)>& f, const Tensor& x);

}  // namespace axiom
