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

#include "axiom.h"  // a program outside this tree: #include <axiom/axiom.h>

using axiom::Dtype;
using axiom::Tensor;

int main() {
  axiom::Generator gen(7);

  // 1. data: 512 points, uniform in the square; label 1 when inside the circle of radius 0.6.
  const int64_t n = 512;
  const Tensor x = axiom::uniform({n, 2}, -1, 1, gen);                        // [N, 2]
  const Tensor radius2 = sum(mul(x, x), {1});                                 // x^2 + y^2   [N]
  const Tensor labels = lt(radius2, axiom::full({}, 0.36)).to(Dtype::int64);  // [N], no gradient

  // 2. model: two layers, weights small and random, biases zero. requires_grad marks what we learn.
  const int64_t hidden = 16;
  Tensor w1 = axiom::normal({2, hidden}, 0, 1.0, gen), b1 = axiom::zeros({hidden});
  Tensor w2 = axiom::normal({hidden, 2}, 0, 0.3, gen), b2 = axiom::zeros({2});
  const std::vector<Tensor> parameters = {w1.set_requires_grad(true), b1.set_requires_grad(true),
                                          w2.set_requires_grad(true), b2.set_requires_grad(true)};

  const double learning_rate = 0.5;
  for (int step = 0; step <= 1000; ++step) {
    // 3. forward: each op records how to send gradients back.
    const Tensor h = tanh(add(matmul(x, w1), b1));      // [N, 16]
    const Tensor logits = add(matmul(h, w2), b2);       // [N, 2]
    const Tensor loss = cross_entropy(logits, labels);  // a scalar, in nats

    // 4. backward: d loss / d p for every parameter p.
    for (const Tensor& p : parameters) p.zero_grad();
    loss.backward();

    // 5. gradient descent, outside the graph (NoGrad: the update records nothing), written into
    //    each parameter's own numbers (p.detach() shares them), as the optimizers in optim/ do.
    {
      const axiom::NoGrad updating;
      for (const Tensor& p : parameters) copy_into(sub(p, mul(p.grad(), learning_rate)), p.detach());
    }

    if (step % 100 == 0) {
      const Tensor predicted = argmax(logits, 1);
      const double accuracy = mean(eq(predicted, labels).to(Dtype::float32)).item();
      std::printf("step %4d   loss %.4f   accuracy %5.1f%%\n", step, loss.item(), 100 * accuracy);
    }
  }
  return 0;
}
