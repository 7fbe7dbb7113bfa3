// A physics-informed network (Raissi, Perdikaris & Karniadakis, 2019) learns the solution of a
// differential equation from the equation alone: no solution values are ever shown to it.
//
//   the equation:   u''(x) + pi^2 u(x) = 0  on [0, 1],   u(0) = 0,  u'(0) = pi   (an oscillator, set going)
//   its solution:   u(x) = sin(pi x)            (used only to measure the error at the end)
//
//   1. model:      u(x) = tanh-MLP(x)                          [N, 1] -> [N, 32] -> [N, 32] -> [N, 1]
//   2. derivatives of the model's output with respect to its input, as tensors with a graph:
//                  du/dx   = grad(u, x, create_graph)          [N, 1]
//                  d2u/dx2 = grad(du/dx, x, create_graph)      [N, 1]
//   3. loss:       mean((d2u/dx2 + pi^2 u)^2) at random points + u(0)^2 + (u'(0) - pi)^2
//   4. gradients:  loss.backward() goes through the graph of the two derivatives above: third
//                  derivatives, mixed in x and the weights, that no rule was written for
//   5. update:     Adam, its step shrinking linearly to 0
//
// Run it: build/apps/pinn_example [steps]   (default 3000, about 2 s: largest error 3.3e-3 against
// sin(pi x); 10000 steps: 2.2e-4)
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numbers>
#include <vector>

#include "axiom.h"  // a program outside this tree: #include <axiom/axiom.h>

using axiom::Dtype;
using axiom::Tensor;

namespace {

struct Layer {
  Tensor weight, bias;  // [in, out], [out]
};

Layer layer(int64_t in, int64_t out, axiom::Generator& gen) {
  const double scale = 1 / std::sqrt(static_cast<double>(in));  // keeps tanh out of saturation
  return {axiom::normal({in, out}, 0, scale, gen, Dtype::float64).set_requires_grad(true),
          axiom::zeros({out}, Dtype::float64).set_requires_grad(true)};
}

// u(x) for x [N, 1] -> [N, 1]
Tensor network(const std::vector<Layer>& layers, const Tensor& x) {
  Tensor h = x;
  for (size_t i = 0; i + 1 < layers.size(); ++i) h = tanh(linear(h, layers[i].weight, layers[i].bias));
  return linear(h, layers.back().weight, layers.back().bias);
}

// d(out)/d(x) for outputs that depend on their own row of x only: [N, 1], differentiable again.
Tensor derivative(const Tensor& out, const Tensor& x) {
  const Tensor ones = axiom::full(out.shape(), 1.0, Dtype::float64);  // sum over rows: row i's own derivative
  return axiom::grad({out}, {x}, {ones}, {.create_graph = true})[0];
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 3000;
  const double pi = std::numbers::pi;
  axiom::Generator gen(3);

  // 1. the model: 1 -> 32 -> 32 -> 1, tanh between (smooth, so its second derivative is too)
  const std::vector<Layer> layers = {layer(1, 32, gen), layer(32, 32, gen), layer(32, 1, gen)};
  axiom::optim::NamedParameters parameters;
  for (size_t i = 0; i < layers.size(); ++i) {
    parameters.emplace_back("weight" + std::to_string(i), layers[i].weight);
    parameters.emplace_back("bias" + std::to_string(i), layers[i].bias);
  }
  axiom::optim::Adam optimizer(parameters, {.lr = 0.005});
  const Tensor start = axiom::zeros({1, 1}, Dtype::float64).set_requires_grad(true);  // x = 0, where u and u' are given

  for (int step = 0; step <= steps; ++step) {
    // 64 random collocation points in [0, 1]; x requires a gradient because the loss holds d/dx
    const Tensor x = axiom::uniform({64, 1}, 0, 1, gen, Dtype::float64).set_requires_grad(true);
    const Tensor u = network(layers, x);
    const Tensor u_xx = derivative(derivative(u, x), x);   // 2. [N, 1]
    const Tensor residual = add(u_xx, mul(u, pi * pi));    //    u'' + pi^2 u: 0 for the solution
    const Tensor u0 = network(layers, start);              //    u(0), to be 0
    const Tensor slope0 = sub(derivative(u0, start), pi);  //    u'(0) - pi, to be 0
    const Tensor loss = add(mean(mul(residual, residual)), add(sum(mul(u0, u0)), sum(mul(slope0, slope0))));  // 3.

    optimizer.zero_grad();
    loss.backward();                                       // 4.
    optimizer.set_lr(0.005 * (1 - step / (steps + 1.0)));  // 5. (the step shrinking to 0: the noise of
    optimizer.step();                                      //     random points dies down)
    if (step % 500 == 0) std::printf("step %5d   loss %.3e\n", step, loss.item());
  }

  // The error against the solution, on 101 evenly spaced points (never used in training).
  const axiom::NoGrad evaluating;
  std::vector<double> points, solution;
  for (int i = 0; i <= 100; ++i) points.push_back(i / 100.0), solution.push_back(std::sin(pi * i / 100.0));
  const Tensor x = axiom::from_vector(points, {101, 1});
  const Tensor exact = axiom::from_vector(solution, {101, 1});
  const Tensor error = abs(sub(network(layers, x), exact));
  std::printf("largest |u(x) - sin(pi x)| on 101 points of [0, 1]: %.2e (the solution's largest value is 1)\n",
              max(error).item());
  return 0;
}
