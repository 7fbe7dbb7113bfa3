// Newton's method without ever forming the Hessian: Hessian-vector products from a graph of the
// gradient, and conjugate gradients on H p = -g, against plain gradient descent, on a logistic
// regression whose two features differ in scale by a factor of 30 (an ill-conditioned problem:
// gradient descent must take steps small enough for the steep direction and crawls along the flat one).
//
//   loss(w)   = mean(log(1 + exp(-y (x . w)))) + 1e-3 |w|^2      x [N, 3] (two features and a 1), y = +-1
//   gradient  g = grad(loss, w, create_graph)     a tensor with a graph: it can be differentiated again
//   H v       = grad(<g, v>, w)                    one backward pass through that graph, for any v
//   Newton    w <- w + p, with H p = -g solved by conjugate gradients (H v products only)
//
// Run it: build/apps/newton_example   (gradient descent: loss 0.227 after 1000 steps; Newton-CG:
// 0.1768920096, the minimum to 10 digits, after 7 steps of 1 gradient and 3 H v products each)
#include <cmath>
#include <cstdio>
#include <functional>
#include <vector>

#include "axiom.h"  // a program outside this tree: #include <axiom/axiom.h>

using axiom::Dtype;
using axiom::Tensor;

namespace {

// <a, b> for two vectors, as a number
double dot(const Tensor& a, const Tensor& b) { return sum(mul(a, b)).item(); }

struct Problem {
  Tensor x, y;  // [N, 3], [N] (+1 or -1)

  // loss(w) for w [3]: a one-element tensor, recorded when w requires a gradient
  Tensor loss(const Tensor& w) const {
    const Tensor margins = mul(y, matmul(x, w));               // y (x . w)   [N]
    const Tensor logistic = neg(mean(log(sigmoid(margins))));  // mean log(1 + exp(-margin))
    return add(logistic, mul(sum(mul(w, w)), 1e-3));
  }
};

Problem make_problem(axiom::Generator& gen) {
  const int64_t n = 400;
  // features: the second 30 times as large as the first; labels from a noisy linear rule
  const Tensor a = axiom::normal({n, 1}, 0, 1, gen, Dtype::float64),
               b = axiom::normal({n, 1}, 0, 30, gen, Dtype::float64);
  const Tensor x = axiom::concat({a, b, axiom::full({n, 1}, 1.0, Dtype::float64)}, 1);  // [N, 3]
  const Tensor score =
      add(add(mul(a.reshape({n}), 2.0), mul(b.reshape({n}), -0.05)), axiom::normal({n}, 0, 0.5, gen, Dtype::float64));
  const Tensor y = sub(mul(gt(score, axiom::full({}, 0.0, Dtype::float64)).to(Dtype::float64), 2.0), 1.0);
  return {x, y};
}

// A new leaf holding w's numbers (shared: nothing here writes to them), without w's history.
Tensor leaf_copy(const Tensor& w) {
  Tensor leaf = w.detach();
  leaf.set_requires_grad(true);
  return leaf;
}

// Conjugate gradients for H p = rhs, with H given only through products H v: at most `iterations`.
Tensor conjugate_gradients(const std::function<Tensor(const Tensor&)>& hessian_times, const Tensor& rhs,
                           int iterations) {
  Tensor p = mul(rhs, 0.0), r = rhs, d = rhs;  // p = 0, residual r = rhs - H p, direction d
  double rr = dot(r, r);
  for (int i = 0; i < iterations && rr > 1e-30; ++i) {
    const Tensor hd = hessian_times(d);
    const double alpha = rr / dot(d, hd);
    p = add(p, mul(d, alpha));
    r = sub(r, mul(hd, alpha));
    const double next = dot(r, r);
    d = add(r, mul(d, next / rr));
    rr = next;
  }
  return p;
}

}  // namespace

int main() {
  axiom::Generator gen(5);
  const Problem problem = make_problem(gen);
  const Tensor start = axiom::zeros({3}, Dtype::float64);

  // Plain gradient descent with a fixed step: lr 0.02, the largest of 0.004, 0.008, 0.012, 0.02,
  // 0.04, 0.08 and 0.16 whose loss fell at every printed step (0.04 first climbs to 1.1, then
  // reaches 0.194 after 1000 steps; larger steps diverge on the steep feature).
  std::printf("gradient descent (lr 0.02)\n");
  Tensor w = start;
  for (int step = 0; step <= 1000; ++step) {
    const Tensor at = leaf_copy(w);
    const Tensor loss = problem.loss(at);
    const Tensor g = axiom::grad({loss}, {at})[0];
    if (step == 0 || step == 10 || step == 100 || step == 1000)
      std::printf("  step %4d   loss %.10f\n", step, loss.item());
    w = sub(w, mul(g, 0.02));
  }

  // Newton-CG: each step one gradient with a graph, then up to 3 Hessian-vector products.
  std::printf("Newton-CG (3 conjugate-gradient iterations a step)\n");
  w = start;
  for (int step = 0; step <= 8; ++step) {
    const Tensor at = leaf_copy(w);
    const Tensor loss = problem.loss(at);
    const Tensor g = axiom::grad({loss}, {at}, {}, {.create_graph = true})[0];  // [3], with a graph
    std::printf("  step %4d   loss %.10f   |g| %.2e\n", step, loss.item(), std::sqrt(dot(g, g)));
    const auto hessian_times = [&](const Tensor& v) {  // H v = d<g, v>/dw, the graph kept for the next v
      return axiom::grad({sum(mul(g, v.detach()))}, {at}, {}, {.retain_graph = true})[0];
    };
    w = add(w, conjugate_gradients(hessian_times, neg(g.detach()), 3));
  }
  return 0;
}
