// Backward on the device: every case of the op table (op_table.h), computed with its inputs on
// Device::cuda(), gives the CPU's forward values, gradients and second derivatives. The device is
// core/cuda's own kernels on the CPU emulator (two thread orders), and the real GPU when there is
// one; so the backward rules' kernels (un-broadcasting sums, index_add and scatter_add, the layer
// norm and attention backward kernels, matmuls of transposed views) run here as they would on a
// GPU. The second derivatives are a Hessian-vector product of each case, through the graphs that
// create_graph records (fused ops through their composites). A checkpointed function and a custom
// op, which are not ops of the table, are compared too, and a custom op's forward-mode rule.
#include <functional>

#include "tests/autograd/op_table.h"
#include "tests/support/gradients.h"
#include "tests/support/emulated_cuda.h"
#include "autograd/internal.h"

using namespace axiom;
using test::Fn;
using test::OpCase;

namespace {

// Beyond the table: a checkpointed function between fused ops (forward and first derivatives;
// checkpoint's backward cannot be recorded, an Error tested in test_checkpoint.cpp).
OpCase checkpoint_case() {
  auto u = [](const core::Shape& shape, uint64_t seed) { return test::leaf(test::uniform64(shape, seed)); };
  return {
      "checkpoint",
      "between layer_norm_linear and activation_linear",
      {u({2, 3, 4}, 18), u({4}, 19), u({4}, 20), u({4, 5}, 21), u({5}, 22)},
      [](const std::vector<Tensor>& x) {
        const Tensor h = axiom::layer_norm_linear(x[0], x[1], x[2], 1e-5, x[3], x[4]);                      // [2, 3, 5]
        const Tensor y = axiom::activation_linear(axiom::Activation::gelu, h, x[3].transpose(0, 1), x[1]);  // [2, 3, 4]
        return axiom::checkpoint(
            [w = x[3], b = x[4]](const Tensor& in) { return axiom::relu(axiom::linear(in, w, b)); }, y, {x[3], x[4]});
      },
      "(not compared with PyTorch: a case of this file only)"};
}

// Beyond the table: a user's op (autograd/custom_op.h), softplus(x) * w with w [3] broadcast over
// x [2, 3]; its backward, in axiom's ops, returns w's gradient in the broadcast shape for the engine
// to sum on the device, and is differentiated again for the second derivatives.
const CustomOp& scaled_softplus() {
  static const CustomOp op(
      "device_scaled_softplus", [](const std::vector<Tensor>& x) { return mul(log(add(exp(x[0]), 1.0)), x[1]); },
      [](const BackwardContext& c) {  // dL/dx = g w sigmoid(x), dL/dw = g softplus(x) ([2, 3], summed to [3])
        return Grads{mul(mul(c.grad_output, c.inputs[1]), sigmoid(c.inputs[0])),
                     mul(c.grad_output, log(add(exp(c.inputs[0]), 1.0)))};
      });
  return op;
}

OpCase custom_op_case() {
  auto u = [](const core::Shape& shape, uint64_t seed) { return test::leaf(test::uniform64(shape, seed)); };
  return {"custom op",
          "softplus(x) * w, w broadcast",
          {u({2, 3}, 23), u({3}, 24)},
          [](const std::vector<Tensor>& x) { return scaled_softplus()(x); },
          "(not compared with PyTorch: a case of this file only)"};
}

// `x` on `device` with the same layout: its whole buffer moves, and the same view (shape, strides,
// offset) is made of the copy, so that a transposed or sliced leaf stays one on the device (to()
// alone would make it contiguous).
core::Tensor same_view_on(const core::Tensor& x, Device device) {
  const auto elements = static_cast<int64_t>(x.storage()->nbytes() / dtype_size(x.dtype()));
  const core::Tensor buffer = core::Tensor(x.storage(), {elements}, {1}, 0, x.dtype()).to(device);
  return core::Tensor(buffer.storage(), x.shape(), x.strides(), x.offset(), x.dtype());
}

// The case's inputs on `device`: the same numbers in the same layout, the same wish for a gradient.
std::vector<Tensor> inputs_on(const OpCase& c, Device device) {
  std::vector<Tensor> leaves;
  for (const Tensor& input : c.inputs) {
    leaves.emplace_back(same_view_on(core_tensor(input), device), input.requires_grad());
    REQUIRE(leaves.back().is_contiguous() == input.is_contiguous());
  }
  return leaves;
}

struct Result {
  core::Tensor output;
  std::vector<core::Tensor> grads;  // of the floating inputs
};

// f(inputs) on `device`, then backward from a fixed upstream gradient.
Result forward_backward(const OpCase& c, Device device) {
  const std::vector<Tensor> leaves = inputs_on(c, device);
  const Tensor y = c.f(leaves);
  Generator gen(77);
  y.backward(Tensor(core::randn(y.shape(), gen, Dtype::float64).to(device)));
  Result result{core_tensor(y).to(Device::cpu()), {}};
  for (const Tensor& leaf : leaves) {
    if (leaf.requires_grad()) result.grads.push_back(core_tensor(leaf.grad()).to(Device::cpu()));
  }
  return result;
}

// The second derivatives of f on `device`: d/dx <d<f, v>/dx, w> for fixed v and w (a Hessian-vector
// product), through a graph of the backward pass (fused ops through their composites).
std::vector<core::Tensor> second_derivatives(const OpCase& c, Device device) {
  const std::vector<Tensor> leaves = inputs_on(c, device);
  std::vector<Tensor> floating;
  for (const Tensor& leaf : leaves) {
    if (leaf.requires_grad()) floating.push_back(leaf);
  }
  const Tensor y = c.f(leaves);
  Generator gen(78);
  const Tensor v(core::randn(y.shape(), gen, Dtype::float64).to(device));
  const std::vector<Tensor> first = grad({y}, floating, {v}, {.create_graph = true, .allow_unused = true});
  Tensor projected;
  for (size_t i = 0; i < first.size(); ++i) {
    if (!first[i].defined() || !first[i].requires_grad()) continue;
    const Tensor w(core::randn(first[i].shape(), gen, Dtype::float64).to(device));
    const Tensor term = sum(mul(first[i], w));
    projected = projected.defined() ? add(projected, term) : term;
  }
  std::vector<core::Tensor> result;
  if (!projected.defined()) return result;  // f is linear in its inputs: no second derivatives
  for (const Tensor& g : grad({projected}, floating, {}, {.allow_unused = true})) {
    result.push_back(g.defined() ? core_tensor(g).to(Device::cpu()) : core::Tensor());
  }
  return result;
}

}  // namespace

TEST_SUITE("cuda-emulated") {
  TEST_CASE("second derivatives of every case of the op table on the device equal the CPU's") {
    std::vector<OpCase> cases = test::op_table();
    cases.push_back(custom_op_case());
    for (const OpCase& c : cases) {
      const std::string name = c.op + ": " + c.what;
      INFO(name);
      const std::vector<core::Tensor> expected = second_derivatives(c, Device::cpu());
      axiom::test::on_every_device([&] {
        const std::vector<core::Tensor> actual = second_derivatives(c, Device::cuda());
        REQUIRE(actual.size() == expected.size());
        for (size_t i = 0; i < actual.size(); ++i) {
          REQUIRE(actual[i].defined() == expected[i].defined());
          if (actual[i].defined()) {
            test::check_close(actual[i], test::values_of(expected[i]), 1e-9, 1e-10,
                              name + ": second derivative of input " + std::to_string(i));
          }
        }
      });
    }
  }

  TEST_CASE("forward and backward of every case of the op table on the device equal the CPU's") {
    std::vector<OpCase> cases = test::op_table();
    cases.push_back(checkpoint_case());
    cases.push_back(custom_op_case());
    for (const OpCase& c : cases) {
      const std::string name = c.op + ": " + c.what;
      INFO(name);
      const Result expected = forward_backward(c, Device::cpu());
      axiom::test::on_every_device([&] {
        const Result actual = forward_backward(c, Device::cuda());
        test::check_close(actual.output, test::values_of(expected.output), 1e-10, 1e-10, name + ": output");
        REQUIRE(actual.grads.size() == expected.grads.size());
        for (size_t i = 0; i < actual.grads.size(); ++i) {
          test::check_close(actual.grads[i], test::values_of(expected.grads[i]), 1e-10, 1e-10,
                            name + ": gradient of input " + std::to_string(i));
        }
      });
    }
  }

  TEST_CASE("a custom op on the device: forward mode through its jvp rule, and a gradient left on the CPU") {
    static const CustomOp opaque(
        "device_opaque_softplus", [](const std::vector<Tensor>& x) { return log(add(exp(x[0]), 1.0)); },
        [](const BackwardContext& c) { return Grads{mul(c.grad_output, sigmoid(c.inputs[0]))}; },
        {.once_differentiable = true,
         .jvp = [](const std::vector<Tensor>& x, const std::vector<Tensor>& u) { return mul(u[0], sigmoid(x[0])); }});
    static const CustomOp stays_on_cpu(
        "device_gradient_on_cpu", [](const std::vector<Tensor>& x) { return mul(x[0], 2.0); },
        [](const BackwardContext& c) { return Grads{mul(c.grad_output, 2.0).to(Device::cpu())}; });
    const core::Tensor x = test::uniform64({2, 3}, 25), u = test::uniform64({2, 3}, 26);
    const auto opaque_f = [](const std::vector<Tensor>& in) { return opaque(in); };
    const JvpResult expected = jvp(opaque_f, {Tensor(x)}, {Tensor(u)});
    axiom::test::on_every_device([&] {
      const JvpResult actual = jvp(opaque_f, {Tensor(x.to(Device::cuda()))}, {Tensor(u.to(Device::cuda()))});
      test::check_close(core_tensor(actual.tangent).to(Device::cpu()), test::values_of(core_tensor(expected.tangent)),
                        1e-12, 1e-12, "the jvp on the device");
      const Tensor leaf(x.to(Device::cuda()), /*requires_grad=*/true);
      CHECK(test::error_message([&] { sum(stays_on_cpu({leaf})).backward(); }) ==
            "[device_gradient_on_cpu] the backward's gradient for input 0 is on cpu; the input is on cuda:0");
    });
  }

}  // TEST_SUITE
