// Your own op with its own backward (autograd/custom_op.h), checked like axiom's own ops:
//
//   1. softplus(x) = log(1 + e^x), whose derivative is sigmoid(x), with a backward that is wrong
//      on purpose (tanh instead of sigmoid): gradcheck catches it and says where.
//   2. The backward fixed: gradcheck (first derivatives) and gradgradcheck (second derivatives,
//      through the backward, which is written in axiom's ops and so differentiable itself) pass.
//   3. The same backward marked once_differentiable: first derivatives still work, and
//      differentiating its gradients again is an Error naming the op.
//   4. The op inside a model: a small network with softplus between its layers fits a curve.
//
// Run it: build/apps/custom_op_example   (under a second)
#include <cmath>
#include <cstdio>
#include <vector>

#include "axiom.h"  // a program outside this tree: #include <axiom/axiom.h>

using axiom::BackwardContext;
using axiom::CustomOp;
using axiom::Dtype;
using axiom::Grads;
using axiom::Tensor;
using Inputs = std::vector<Tensor>;

namespace {

Tensor softplus_forward(const Inputs& in) { return log(add(exp(in[0]), 1.0)); }  // x [...] -> [...]

// dL/dx = dL/dy * sigmoid(x)   (g and x [...])
Grads softplus_backward(const BackwardContext& c) { return {mul(c.grad_output, sigmoid(c.inputs[0]))}; }

// The mistake a tired person makes: tanh, not sigmoid.
Grads wrong_backward(const BackwardContext& c) { return {mul(c.grad_output, tanh(c.inputs[0]))}; }

const CustomOp softplus("softplus", softplus_forward, softplus_backward);
const CustomOp softplus_wrong("softplus_wrong", softplus_forward, wrong_backward);
const CustomOp softplus_opaque("softplus_opaque", softplus_forward, softplus_backward, {.once_differentiable = true});

void report(const char* what, const axiom::GradcheckResult& result) {
  std::printf("%-40s %s\n", what, result.ok ? "ok" : result.message.c_str());
}

// y = softplus(x W1 + b1) W2 + b2: x [N, 1] -> [N, 16] -> [N, 1]
struct Network {
  Tensor w1, b1, w2, b2;
  Tensor operator()(const Tensor& x) const { return linear(softplus({linear(x, w1, b1)}), w2, b2); }
};

}  // namespace

int main() {
  axiom::Generator gen(1);
  const Tensor x = axiom::uniform({3, 4}, -2, 2, gen, Dtype::float64).set_requires_grad(true);

  // 1. and 2.: the wrong backward, then the right one, against finite differences
  report("1. wrong backward, gradcheck:", axiom::gradcheck([](const Inputs& in) { return softplus_wrong(in); }, {x}));
  report("2. right backward, gradcheck:", axiom::gradcheck([](const Inputs& in) { return softplus(in); }, {x}));
  report("   right backward, gradgradcheck:", axiom::gradgradcheck([](const Inputs& in) { return softplus(in); }, {x}));

  // 3. once_differentiable: a gradient, and then no second derivative
  const Tensor dy = axiom::grad({sum(softplus_opaque({x}))}, {x}, {}, {.create_graph = true})[0];
  try {
    (void)axiom::grad({sum(dy)}, {x});
  } catch (const axiom::Error& e) {
    std::printf("3. once_differentiable, second derivative: %s\n", e.what());
  }

  // 4. fit y = sin(3x) on [-1, 1] with softplus between two layers, by Adam
  Network net{axiom::normal({1, 16}, 0, 1, gen, Dtype::float64).set_requires_grad(true),
              axiom::zeros({16}, Dtype::float64).set_requires_grad(true),
              axiom::normal({16, 1}, 0, 0.25, gen, Dtype::float64).set_requires_grad(true),
              axiom::zeros({1}, Dtype::float64).set_requires_grad(true)};
  axiom::optim::Adam optimizer({{"w1", net.w1}, {"b1", net.b1}, {"w2", net.w2}, {"b2", net.b2}}, {.lr = 0.01});
  const Tensor points = axiom::uniform({64, 1}, -1, 1, gen, Dtype::float64);  // [64, 1]
  std::vector<double> sines;
  for (double p : points.to_vector<double>()) sines.push_back(std::sin(3 * p));
  const Tensor targets = axiom::from_vector(sines, {64, 1});
  for (int step = 0; step <= 2000; ++step) {
    const Tensor error = sub(net(points), targets);
    const Tensor loss = mean(mul(error, error));
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
    if (step % 500 == 0)
      std::printf("4. a softplus network fitting sin(3x): step %3d   loss %.4f\n", step, loss.item());
  }
  return 0;
}
