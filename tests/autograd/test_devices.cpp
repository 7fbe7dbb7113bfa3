// Backward on the device: every differentiable op's forward and gradients, computed with its
// inputs on Device::cuda(), equal the same computation on the CPU. The device is core/cuda's own
// kernels on the CPU emulator (two thread orders), and the real GPU when there is one; so the
// backward rules' kernels (un-broadcasting sums, index_add and scatter_add, the layer norm and
// attention backward kernels, matmuls of transposed views) run here as they would on a GPU. Second
// derivatives too: a Hessian-vector product of each case, through the graphs that create_graph
// records (fused ops through their composites), equals the CPU's.
#include <functional>

#include "tests/autograd/helpers.h"
#include "tests/support/emulated_cuda.h"

using namespace axiom;
using agtest::Fn;
using core::Device;

namespace {

struct GradCase {
  std::string name;
  std::vector<core::Tensor> inputs;  // float64, on the CPU; integer inputs get no gradient
  Fn f;
};

std::vector<GradCase> grad_cases() {
  auto u = [](const core::Shape& shape, uint64_t seed) { return agtest::uniform64(shape, seed); };
  auto nz = [](const core::Shape& shape, uint64_t seed) { return agtest::away_from_zero(shape, seed); };
  const core::Tensor targets = core::from_vector<int64_t>({2, 0, 4, 4, 1, 3}, {2, 3});
  const core::Tensor tokens = core::from_vector<int64_t>({1, 3, 1, 0, 1}, {5});
  using T = std::vector<Tensor>;
  return {
      {"unary maps", {nz({3, 5}, 1)}, [](const T& x) {
         const Tensor t = x[0].transpose(0, 1);
         return axiom::neg(t) + axiom::abs(t) + axiom::exp(t) + axiom::log(axiom::abs(t)) + axiom::sqrt(axiom::abs(t)) + axiom::rsqrt(axiom::abs(t)) +
                axiom::tanh(t) + axiom::sigmoid(t) + axiom::relu(t) + axiom::gelu(t) + axiom::gelu_tanh(t) + axiom::pow(t, 3.0);
       }},
      {"binary maps with broadcasting (gradients summed back)", {u({4, 1, 3}, 2), nz({5, 1}, 3)}, [](const T& x) {
         const Tensor a = x[0], b = x[1];
         return axiom::add(a, b) + axiom::sub(a, b) * axiom::mul(a, b) + axiom::div(a, b) + axiom::pow(axiom::add(axiom::abs(a), 0.5), b) +
                axiom::maximum(a, b) + axiom::minimum(a, b);
       }},
      {"where and masked_fill", {u({3, 4}, 4), u({4}, 5)}, [](const T& x) {
         const Tensor cond = axiom::gt(x[0], x[1]);
         return axiom::where(cond, x[0], x[1]) + axiom::masked_fill(x[0], cond, 2.0);
       }},
      {"reductions", {u({3, 4, 5}, 6)}, [](const T& x) {
         const Tensor t = x[0].permute({2, 0, 1});
         return axiom::sum(t, {0}) + axiom::mean(t, {0}) + axiom::var(t, {0}) + axiom::max(t, {0}) + axiom::min(t, {0}) + axiom::sum(t);
       }},
      {"matmul and linear on views", {u({2, 3, 4}, 7), u({5, 4}, 8), u({5}, 9)}, [](const T& x) {
         return axiom::linear(x[0], x[1].transpose(0, 1), x[2]) + axiom::matmul(x[0], x[1].transpose(0, 1));
       }},
      {"the fused layer_norm_linear and activation_linear, and a checkpointed function", {u({2, 3, 4}, 18), u({4}, 19), u({4}, 20), u({4, 5}, 21), u({5}, 22)},
       [](const T& x) {
         const Tensor h = axiom::layer_norm_linear(x[0], x[1], x[2], 1e-5, x[3], x[4]);                  // [2, 3, 5]
         const Tensor y = axiom::activation_linear(axiom::Activation::gelu, h, x[3].transpose(0, 1), x[1]);  // [2, 3, 4]
         return axiom::checkpoint([w = x[3], b = x[4]](const Tensor& in) { return axiom::relu(axiom::linear(in, w, b)); }, y, {x[3], x[4]});
       }},
      {"the fused layer_norm_linear and activation_linear alone", {u({2, 3, 4}, 23), u({4}, 24), u({4}, 25), u({4, 5}, 26), u({5}, 27)},
       [](const T& x) {
         const Tensor h = axiom::layer_norm_linear(x[0], x[1], x[2], 1e-5, x[3], x[4]);  // [2, 3, 5]
         return axiom::activation_linear(axiom::Activation::gelu_tanh, h, x[3].transpose(0, 1), x[1]);
       }},
      {"softmax, log_softmax and layer norm", {u({2, 7, 6}, 10), u({6}, 11), u({6}, 12)}, [](const T& x) {
         return axiom::softmax(x[0], 1) + axiom::log_softmax(x[0], -1) + axiom::layer_norm(x[0].transpose(0, 1), x[1], x[2]).transpose(0, 1);
       }},
      {"attention along both axes, causal and not", {u({2, 3, 4, 12}, 13)}, [](const T& x) {
         return axiom::attention(x[0], 1, 2, true) + axiom::attention(x[0], 2, 4, false);
       }},
      {"embedding and cross-entropy", {u({4, 3}, 14), u({2, 3, 5}, 15), tokens, targets}, [](const T& x) {
         const Tensor e = axiom::embedding(x[0], x[2]);                        // [5, 3]
         const Tensor ce = axiom::cross_entropy(x[1], x[3], {.label_smoothing = 0.1, .reduction = Reduction::none});
         return axiom::sum(e, {1}) + axiom::sum(ce);
       }},
      {"gather, and a round trip to the CPU and back", {u({3, 4}, 17), core::from_vector<int64_t>({3, 0, 0, 1, 2, 2}, {3, 2})}, [](const T& x) {
         const Tensor picked = axiom::gather(x[0], 1, x[1]);  // [3, 2], column 0 picked twice in row 1
         return axiom::mul(picked, picked.to(core::Device::cpu()).to(x[0].device()));
       }},
      {"concat, pad, shift, expand and slices", {u({3, 4}, 16)}, [](const T& x) {
         const Tensor c = axiom::concat({x[0], x[0].slice(1, 0, 4, 2)}, 1);  // [3, 6]
         return axiom::pad(c, 0, 1, 0, -1.0) + axiom::shift(c, 1, 2).expand({4, 3, 6}).select(0, 1).narrow(0, 0, 1);
       }},
  };
}

struct Result {
  core::Tensor output;
  std::vector<core::Tensor> grads;  // of the floating inputs
};

// f(inputs) on `device`, then backward from a fixed upstream gradient.
Result forward_backward(const GradCase& c, Device device) {
  std::vector<Tensor> leaves;
  for (const core::Tensor& input : c.inputs) {
    leaves.emplace_back(input.to(device), /*requires_grad=*/input.dtype() == core::Dtype::float64);
  }
  const Tensor y = c.f(leaves);
  core::Generator gen(77);
  y.backward(core::randn(y.shape(), gen, core::Dtype::float64).to(device));
  Result result{y.data().to(Device::cpu()), {}};
  for (const Tensor& leaf : leaves) {
    if (leaf.requires_grad()) result.grads.push_back(leaf.grad().data().to(Device::cpu()));
  }
  return result;
}

// The second derivatives of f on `device`: d/dx <d<f, v>/dx, w> for fixed v and w (a Hessian-vector
// product), through a graph of the backward pass (fused ops through their composites).
std::vector<core::Tensor> second_derivatives(const GradCase& c, Device device) {
  std::vector<Tensor> leaves, floating;
  for (const core::Tensor& input : c.inputs) {
    leaves.emplace_back(input.to(device), /*requires_grad=*/input.dtype() == core::Dtype::float64);
    if (leaves.back().requires_grad()) floating.push_back(leaves.back());
  }
  const Tensor y = c.f(leaves);
  core::Generator gen(78);
  const Tensor v(core::randn(y.shape(), gen, core::Dtype::float64).to(device));
  const std::vector<Tensor> first = grad({y}, floating, {v}, {.create_graph = true, .allow_unused = true});
  Tensor projected;
  for (size_t i = 0; i < first.size(); ++i) {
    if (!first[i].defined() || !first[i].requires_grad()) continue;
    const Tensor w(core::randn(first[i].shape(), gen, core::Dtype::float64).to(device));
    const Tensor term = sum(mul(first[i], w));
    projected = projected.defined() ? add(projected, term) : term;
  }
  std::vector<core::Tensor> result;
  if (!projected.defined()) return result;  // f is linear in its inputs: no second derivatives
  for (const Tensor& g : grad({projected}, floating, {}, {.allow_unused = true})) {
    result.push_back(g.defined() ? g.data().to(Device::cpu()) : core::Tensor());
  }
  return result;
}

}  // namespace

TEST_SUITE("cuda-emulated") {

TEST_CASE("second derivatives of every differentiable op on the device equal the CPU's") {
  for (const GradCase& c : grad_cases()) {
    if (c.name.find("checkpoint") != std::string::npos) continue;  // checkpoint's backward cannot be recorded (an Error, tested in test_checkpoint.cpp)
    INFO(c.name);
    const std::vector<core::Tensor> expected = second_derivatives(c, Device::cpu());
    axiom::testing::on_every_device([&] {
      const std::vector<core::Tensor> actual = second_derivatives(c, Device::cuda());
      REQUIRE(actual.size() == expected.size());
      for (size_t i = 0; i < actual.size(); ++i) {
        REQUIRE(actual[i].defined() == expected[i].defined());
        if (actual[i].defined()) {
          test::check_close(actual[i], test::values_of(expected[i]), 1e-9, 1e-10, c.name + ": second derivative of input " + std::to_string(i));
        }
      }
    });
  }
}

TEST_CASE("forward and backward of every differentiable op on the device equal the CPU's") {
  for (const GradCase& c : grad_cases()) {
    INFO(c.name);
    const Result expected = forward_backward(c, Device::cpu());
    axiom::testing::on_every_device([&] {
      const Result actual = forward_backward(c, Device::cuda());
      test::check_close(actual.output, test::values_of(expected.output), 1e-10, 1e-10, c.name + ": output");
      REQUIRE(actual.grads.size() == expected.grads.size());
      for (size_t i = 0; i < actual.grads.size(); ++i) {
        test::check_close(actual.grads[i], test::values_of(expected.grads[i]), 1e-10, 1e-10, c.name + ": gradient of input " + std::to_string(i));
      }
    });
  }
}

}  // TEST_SUITE
