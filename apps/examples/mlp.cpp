// A two-layer perceptron learns, by plain gradient descent, which points of the square
// [-1, 1]^2 lie inside a circle. Everything a training loop needs is on this page:
//
//   1. data:        points x [N, 2] and labels t [N] (1 inside the circle, 0 outside)
//   2. model:       logits = tanh(x @ W1 + b1) @ W2 + b2         [N, 2] -> [N, 16] -> [N, 2]
//   3. loss:        softmax cross-entropy of the logits against the labels
//   4. gradients:   loss.backward() fills W1.grad(), b1.grad(), ...
//   5. update:      every parameter p moves against its gradient: p <- p - lr * dL/dp
//
// Run it: build/apps/mlp_example   (the loss falls from about 0.69 = ln 2, a coin toss)
#include <cstdio>
#include <vector>

#include "autograd/autograd.h"
#include "core/core.h"

using axiom::Tensor;
namespace core = axiom::core;

int main() {
  core::Generator gen(7);

  // 1. data: 512 points, uniform in the square; label 1 when inside the circle of radius 0.6.
  const int64_t n = 512;
  const core::Tensor points = core::uniform({n, 2}, -1, 1, gen);
  const core::Tensor radius2 = core::sum(core::mul(points, points), {1});  // x^2 + y^2   [N]
  const Tensor x(points);
  const Tensor labels(core::lt(radius2, core::scalar(0.36f)).to(core::Dtype::int64));

  // 2. model: two layers, weights small and random, biases zero. requires_grad marks what we learn.
  const int64_t hidden = 16;
  Tensor w1(core::normal({2, hidden}, 0, 1.0, gen), true);
  Tensor b1(core::zeros({hidden}), true);
  Tensor w2(core::normal({hidden, 2}, 0, 0.3, gen), true);
  Tensor b2(core::zeros({2}), true);
  const std::vector<Tensor> parameters = {w1, b1, w2, b2};

  const double learning_rate = 0.5;
  for (int step = 0; step <= 1000; ++step) {
    // 3. forward: each op records how to send gradients back.
    const Tensor h = tanh(add(matmul(x, w1), b1));   // [N, 16]
    const Tensor logits = add(matmul(h, w2), b2);    // [N, 2]
    const Tensor loss = cross_entropy(logits, labels);  // a scalar, in nats

    // 4. backward: d loss / d p for every parameter p.
    for (const Tensor& p : parameters) p.zero_grad();
    loss.backward();

    // 5. gradient descent, outside the graph.
    for (const Tensor& p : parameters) {
      core::copy_into(core::sub(p.data(), core::mul(p.grad(), learning_rate)), p.data());
    }

    if (step % 100 == 0) {
      const core::Tensor predicted = core::argmax(logits.data(), 1);
      const double accuracy = core::mean(core::eq(predicted, labels.data()).to(core::Dtype::float32)).item();
      std::printf("step %4d   loss %.4f   accuracy %5.1f%%\n", step, loss.item(), 100 * accuracy);
    }
  }
  return 0;
}
