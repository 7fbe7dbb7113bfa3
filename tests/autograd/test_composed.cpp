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

// The fused attention kernel (core/cpu/attention.cpp) copies a short line into scratch rows; a
// line too wide for that (its rows over 256 KiB) or too long (a product over 64^3 multiply-adds)
// runs on the tensors in place. Both, forward and backward, against the same attention in plain
// ops (a zero bias makes axiom::attention compose it).
TEST_CASE("fused attention on copied lines and on lines in place agrees with attention in plain ops") {
  struct Case {
    Shape shape;  // of qkv
    int64_t axis, heads;
  };
  // lines_in_cache: L^2 Dh <= 64^3 and (8 L D + L^2) values in 256 KiB. Every case's lines are
  // strided (an axis after the attended one); the second and third run in parallel chunks.
  const Case cases[] = {{{2, 3, 4, 12}, 1, 2},     // copied: 8 lines in one chunk
                        {{2, 28, 2, 384}, 1, 4},   // copied: 4 lines of 28, 2 a chunk (235,648 bytes in float64)
                        {{2, 16, 2, 3072}, 1, 4},  // wide, in place: 525,312 bytes in float32; 16 tasks, 4 a chunk
                        {{1, 130, 2, 48}, 1, 1}};  // long, in place, one task at a time: L^2 Dh = 270,400 > 64^3
  for (const Dtype dtype : {Dtype::float64, Dtype::float32}) {
    for (const Case& c : cases) {
      for (const bool causal : {false, true}) {
        CAPTURE(str(c.shape));
        CAPTURE(dtype);
        CAPTURE(causal);
        const core::AttentionMask mask = core::AttentionMask::causal_if(causal);
        const int64_t length = c.shape[c.axis];
        Generator gen(95);
        const core::Tensor qkv = core::randn(c.shape, gen, dtype);
        Shape out_shape = c.shape;
        out_shape.back() /= 3;
        const core::Tensor seed = core::randn(out_shape, gen, dtype);
        auto output_and_grad = [&](bool fused) {
          Tensor x(qkv.clone());
          x.set_requires_grad(true);
          const Tensor zero_bias(core::zeros({length, length}, dtype));
          const Tensor y = fused ? attention(x, c.axis, c.heads, mask) : attention(x, c.axis, c.heads, mask, zero_bias);
          y.backward(Tensor(seed));
          return std::pair{core_tensor(y), core_tensor(x.grad())};
        };
        const auto [fused_y, fused_grad] = output_and_grad(true);
        const auto [plain_y, plain_grad] = output_and_grad(false);
        check_close(fused_y, values_of(plain_y), matmul_tolerance(dtype, length), "output");
        check_close(fused_grad, values_of(plain_grad), matmul_tolerance(dtype, length), "d qkv");
      }
    }
  }
}
