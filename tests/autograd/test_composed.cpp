// Ops composed into a network: a two-layer MLP with layer norm and softmax cross-entropy,
//   x[4, 3] -> @ W1[3, 5] + b1 -> layer_norm(gamma, beta) -> gelu or tanh -> @ W2[5, 3] + b2
//           -> cross_entropy against int64 targets [4]
// gradchecked with respect to every parameter (and the input) at once, then trained for a few
// steps of plain gradient descent: the gradient must point downhill.
#include <vector>

#include "tests/support/gradients.h"
#include "autograd/internal.h"

namespace core = axiom::core;
using namespace axiom;
using namespace axiom::test;
using In = std::vector<axiom::Tensor>;

namespace {

enum class Squash { gelu, tanh };

// in = {x, W1, b1, gamma, beta, W2, b2}
axiom::Tensor mlp_loss(const In& in, const axiom::Tensor& targets, Squash activation,
                       const CrossEntropyOptions& options = {}) {
  axiom::Tensor h = add(matmul(in[0], in[1]), in[2]);  // [..., 3] @ [3, 5] + [5] -> [..., 5]
  h = layer_norm(h, in[3], in[4]);
  h = activation == Squash::gelu ? gelu(h) : tanh(h);
  const axiom::Tensor logits = add(matmul(h, in[5]), in[6]);  // [..., 5] @ [5, 3] + [3] -> [..., 3]
  return cross_entropy(logits, targets, options);
}

struct Mlp {
  In params;  // x, W1, b1, gamma, beta, W2, b2
  axiom::Tensor targets;
};

Mlp make_mlp(const Shape& x_shape, const std::vector<int64_t>& targets, uint64_t seed) {
  Shape target_shape(x_shape.begin(), x_shape.end() - 1);
  return {{leaf(uniform64(x_shape, seed)), leaf(uniform64({3, 5}, seed + 1, -0.8, 0.8)),
           leaf(uniform64({5}, seed + 2, -0.5, 0.5)), leaf(uniform64({5}, seed + 3, 0.5, 1.5)),
           leaf(uniform64({5}, seed + 4, -0.5, 0.5)), leaf(uniform64({5, 3}, seed + 5, -0.8, 0.8)),
           leaf(uniform64({3}, seed + 6, -0.5, 0.5))},
          axiom::Tensor(int64s(targets, target_shape))};
}

const char* const kNames[] = {"x", "W1", "b1", "gamma", "beta", "W2", "b2"};

}  // namespace

TEST_CASE("a two-layer MLP with layer norm and cross-entropy passes gradcheck in every parameter") {
  const Mlp net = make_mlp({4, 3}, {2, 0, 1, 2}, 1);
  for (Squash activation : {Squash::gelu, Squash::tanh}) {
    CAPTURE(activation == Squash::gelu ? "gelu" : "tanh");
    check_grad(
        "mean loss", [&](const In& in) { return mlp_loss(in, net.targets, activation); }, net.params);
    check_grad(
        "label smoothing 0.1, summed",
        [&](const In& in) {
          return mlp_loss(in, net.targets, activation, {0.1, Reduction::sum});
        },
        net.params);
    check_grad(
        "per-example losses",
        [&](const In& in) {
          return mlp_loss(in, net.targets, activation, {0, Reduction::none});
        },
        net.params);
  }
  // The check is not vacuous: every parameter gets a gradient that is not zero.
  const axiom::Tensor loss = mlp_loss(net.params, net.targets, Squash::gelu);
  loss.backward();
  for (size_t i = 0; i < net.params.size(); ++i) {
    CAPTURE(kNames[i]);
    REQUIRE(net.params[i].grad().defined());
    CHECK(net.params[i].grad().shape() == net.params[i].shape());
    CHECK(core::sum(core::abs(core_tensor(net.params[i].grad()))).item() > 1e-3);
    net.params[i].zero_grad();
  }
}

TEST_CASE("the MLP on a batch of sequences: a 2x4x3 input through shared weights") {
  const Mlp net = make_mlp({2, 4, 3}, {2, 0, 1, 2, 1, 1, 0, 2}, 20);
  check_grad(
      "full Jacobian", [&](const In& in) { return mlp_loss(in, net.targets, Squash::tanh); }, net.params);
  GradcheckOptions projection;
  projection.full_jacobian = false;
  check_grad(
      "projections", [&](const In& in) { return mlp_loss(in, net.targets, Squash::gelu, {0.1}); }, net.params,
      projection);
}

TEST_CASE("gradient descent on the MLP lowers the loss") {
  const Mlp net = make_mlp({4, 3}, {2, 0, 1, 2}, 40);
  const In weights(net.params.begin() + 1, net.params.end());
  double previous = 0;
  for (int step = 0; step < 5; ++step) {
    const axiom::Tensor loss = mlp_loss(net.params, net.targets, Squash::gelu);
    if (step > 0) CHECK(loss.item() < previous);
    previous = loss.item();
    for (const axiom::Tensor& w : weights) w.zero_grad();
    loss.backward();
    NoGrad no_grad;
    for (const axiom::Tensor& w : weights)
      core::copy_into(core::sub(core_tensor(w), core::mul(core_tensor(w.grad()), 0.5)), core_tensor(w));
  }
}
