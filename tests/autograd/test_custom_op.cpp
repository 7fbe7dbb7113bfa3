// Custom ops (autograd/custom_op.h): a user's forward and backward, recorded under the user's name,
// checked to second order by gradcheck and gradgradcheck like any built-in op; a once_differentiable
// backward, with and without a forward-mode rule; and every misuse, each an Error with its exact
// message.
#include <string>
#include <vector>

#include "autograd/custom_op.h"
#include "core/launch.h"
#include "tests/support/gradients.h"

using namespace axiom;
using namespace axiom::test;

namespace {

using In = std::vector<Tensor>;

Tensor softplus_forward(const In& in) { return log(add(exp(in[0]), 1.0)); }  // log(1 + e^x)

// d softplus / dx = sigmoid(x):  dL/dx = g * sigmoid(x)
Grads softplus_backward(const BackwardContext& c) { return {mul(c.grad_output, sigmoid(c.inputs[0]))}; }

const CustomOp& softplus() {
  static const CustomOp op("test_softplus", softplus_forward, softplus_backward);
  return op;
}

// x * y with both gradients: two inputs, either of which may want none.
const CustomOp& product() {
  static const CustomOp op(
      "test_product", [](const In& in) { return mul(in[0], in[1]); },
      [](const BackwardContext& c) {
        return Grads{c.needs[0] ? mul(c.grad_output, c.inputs[1]) : Tensor(),
                     c.needs[1] ? mul(c.grad_output, c.inputs[0]) : Tensor()};
      });
  return op;
}

// A backward computed outside axiom's ops would be the usual reason; here it is the same formula
// marked once_differentiable.
const CustomOp& opaque_softplus() {
  static const CustomOp op("test_opaque_softplus", softplus_forward, softplus_backward, {.once_differentiable = true});
  return op;
}

// The same, with a forward-mode rule: J u = u * sigmoid(x).
Tensor softplus_jvp(const In& inputs, const In& tangents) { return mul(tangents[0], sigmoid(inputs[0])); }

const CustomOp& opaque_softplus_with_jvp() {
  static const CustomOp op("test_opaque_softplus_jvp", softplus_forward, softplus_backward,
                           {.once_differentiable = true, .jvp = softplus_jvp});
  return op;
}

// x * y, y broadcast along x's rows, once_differentiable, whose backward returns y's gradient in
// the broadcast shape [2, 3] (the engine sums it to [3]); J u = u_x * y + x * u_y.
const CustomOp& opaque_row_product() {
  static const CustomOp op(
      "test_opaque_row_product", [](const In& in) { return mul(in[0], in[1]); },
      [](const BackwardContext& c) {
        return Grads{mul(c.grad_output, c.inputs[1]), mul(c.grad_output, c.inputs[0])};
      },
      {.once_differentiable = true,
       .jvp = [](const In& in, const In& u) { return add(mul(u[0], in[1]), mul(in[0], u[1])); }});
  return op;
}

// An op whose backward returns `grads(c)`, for the misuse cases.
CustomOp op_returning(const std::string& name, std::function<Grads(const BackwardContext&)> grads) {
  return CustomOp(
      name, [](const In& in) { return mul(in[0], 2.0); }, std::move(grads));
}

Tensor first_gradient(const Tensor& y, const Tensor& x) { return grad({sum(y)}, {x})[0]; }

}  // namespace

TEST_CASE("a custom op computes its forward, records under its name and passes gradcheck and gradgradcheck") {
  const Tensor x = leaf(uniform64({2, 3}, 1));
  const Tensor y = softplus()({x});
  CHECK(y.grad_fn()->name == std::string("test_softplus"));
  check_close(core_tensor(y), core_tensor(log(add(exp(x), 1.0))).to_vector<double>(), 1e-12, 1e-12);
  check_grad("softplus", [](const In& in) { return softplus()(in); }, {x});
  check_grad("product, both inputs", [](const In& in) { return product()(in); }, {x, leaf(uniform64({3}, 2))});
  check_grad("product, one constant input", [](const In& in) { return product()(in); },
             {x, Tensor(uniform64({2, 3}, 3))});
}

TEST_CASE("a wrong backward fails gradcheck, which names the input and the element") {
  static const CustomOp wrong("test_wrong_softplus", softplus_forward, [](const BackwardContext& c) {
    return Grads{mul(c.grad_output, tanh(c.inputs[0]))};  // tanh instead of sigmoid
  });
  const GradcheckResult result = gradcheck([](const In& in) { return wrong(in); }, {leaf(uniform64({2, 3}, 4))});
  CHECK_FALSE(result.ok);
  CHECK(result.message.find("input 0") != std::string::npos);
  CHECK(result.message.find("numerical") != std::string::npos);
}

TEST_CASE("a custom op inside a graph: second derivatives through it, and a model's loss") {
  const Tensor x = leaf(uniform64({4}, 5));
  const Tensor dy = grad({sum(softplus()({x}))}, {x}, {}, {.create_graph = true})[0];  // sigmoid(x)
  const Tensor d2y = grad({sum(dy)}, {x})[0];                                          // sigmoid(x) (1 - sigmoid(x))
  const Tensor s = sigmoid(x);
  check_close(core_tensor(d2y), core_tensor(mul(s, sub(full({4}, 1.0, Dtype::float64), s))).to_vector<double>(), 1e-12,
              1e-12);
  // Between built-in ops, with a weight: the loss's gradient reaches the weight through the op.
  const Tensor w = leaf(uniform64({4, 3}, 6));
  check_grad("linear, softplus, sum", [](const In& in) { return sum(softplus()({matmul(in[0], in[1])})); },
             {leaf(uniform64({2, 4}, 7)), w});
}

TEST_CASE("a once_differentiable backward gives first derivatives, and its gradients cannot be differentiated") {
  const Tensor x = leaf(uniform64({2, 3}, 8));
  check_close(core_tensor(first_gradient(opaque_softplus()({x}), x)), core_tensor(sigmoid(x)).to_vector<double>(),
              1e-12, 1e-12);
  const GradcheckResult first = gradcheck([](const In& in) { return opaque_softplus()(in); }, {x});
  CHECK(first.ok);
  const Tensor dy = grad({sum(opaque_softplus()({x}))}, {x}, {}, {.create_graph = true})[0];
  CHECK(dy.requires_grad());
  CHECK(error_message([&] { (void)grad({sum(dy)}, {x}); }) ==
        "[test_opaque_softplus] the backward is once_differentiable: its gradients cannot be differentiated again");
}

TEST_CASE("a once_differentiable op with a jvp rule: forward mode through it, and no second derivative") {
  const Tensor x = leaf(uniform64({2, 3}, 11));
  const Tensor u = Tensor(uniform64({2, 3}, 12));
  const JvpResult through_rule = jvp([](const In& in) { return opaque_softplus_with_jvp()(in); }, {x}, {u});
  const JvpResult reference = jvp(softplus_forward, {x}, {u});
  check_close(core_tensor(through_rule.tangent), core_tensor(reference.tangent).to_vector<double>(), 1e-12, 1e-12);

  const Tensor y = leaf(uniform64({3}, 13));
  const Tensor uy = Tensor(uniform64({3}, 14));
  const JvpResult product_tangent = jvp([](const In& in) { return opaque_row_product()(in); }, {x, y}, {u, uy});
  const JvpResult product_reference = jvp([](const In& in) { return mul(in[0], in[1]); }, {x, y}, {u, uy});
  check_close(core_tensor(product_tangent.tangent), core_tensor(product_reference.tangent).to_vector<double>(), 1e-12,
              1e-12);
  CHECK(gradcheck([](const In& in) { return opaque_row_product()(in); }, {x, y}).ok);

  // Without a rule, forward mode cannot differentiate the backward; with one, a second derivative
  // with respect to the inputs is still refused.
  CHECK(error_message([&] { (void)jvp([](const In& in) { return opaque_softplus()(in); }, {x}, {u}); }) ==
        "[test_opaque_softplus] the backward is once_differentiable: its gradients cannot be differentiated again");
  CHECK(error_message([&] { (void)hvp([](const In& in) { return sum(opaque_softplus_with_jvp()(in)); }, {x}, {u}); }) ==
        "[test_opaque_softplus_jvp] the backward is once_differentiable: its gradients cannot be differentiated "
        "again");
}

TEST_CASE("misuse of a custom op: each is an Error with the op's name") {
  const Tensor x = leaf(uniform64({2, 3}, 9));
  SUBCASE("a backward returning the wrong count") {
    const CustomOp op = op_returning("test_two_gradients", [](const BackwardContext& c) {
      return Grads{c.grad_output, c.grad_output};
    });
    CHECK(error_message([&] { (void)first_gradient(op({x}), x); }) ==
          "[test_two_gradients] the backward returned 2 gradients for 1 inputs");
  }
  SUBCASE("no gradient for an input that needs one") {
    const CustomOp op = op_returning("test_no_gradient", [](const BackwardContext&) { return Grads{Tensor()}; });
    CHECK(error_message([&] { (void)first_gradient(op({x}), x); }) ==
          "[test_no_gradient] the backward returned no gradient for input 0, which needs one");
  }
  SUBCASE("a gradient of the wrong shape") {
    const CustomOp op =
        op_returning("test_wrong_shape", [](const BackwardContext& c) { return Grads{sum(c.grad_output, {0})}; });
    CHECK(error_message([&] { (void)first_gradient(op({x}), x); }) ==
          "[test_wrong_shape] the backward's gradient for input 0 has shape [3]; the input has [2, 3]");
  }
  SUBCASE("a gradient of the wrong dtype") {
    const CustomOp op = op_returning("test_wrong_dtype",
                                     [](const BackwardContext& c) { return Grads{c.grad_output.to(Dtype::float32)}; });
    CHECK(error_message([&] { (void)first_gradient(op({x}), x); }) ==
          "[test_wrong_dtype] the backward's gradient for input 0 is float32; the input is float64");
  }
  SUBCASE("an undefined input, an undefined output") {
    CHECK(error_message([&] { (void)softplus()({x, Tensor()}); }) == "[test_softplus] input 1 is undefined");
    const CustomOp nothing(
        "test_nothing", [](const In&) { return Tensor(); }, softplus_backward);
    CHECK(error_message([&] { (void)nothing({x}); }) == "[test_nothing] the forward returned an undefined tensor");
  }
  SUBCASE("a forward that calls its own op") {
    static CustomOp* self = nullptr;
    static CustomOp recursive(
        "test_recursive", [](const In& in) { return (*self)(in); }, softplus_backward);
    self = &recursive;
    CHECK(error_message([&] { (void)recursive({x}); }) == "[test_recursive] the forward calls the op itself");
    CHECK(error_message([&] { (void)recursive({x}); }) == "[test_recursive] the forward calls the op itself");
  }
  SUBCASE("a jvp rule on an op whose backward is differentiable, a jvp that returns the wrong shape") {
    CHECK(error_message([&] {
            CustomOp op("test_jvp_not_needed", softplus_forward, softplus_backward, {.jvp = softplus_jvp});
          }) ==
          "[test_jvp_not_needed] a jvp rule is for a once_differentiable op: forward mode differentiates this op's "
          "backward");
    static const CustomOp summing(
        "test_jvp_wrong_shape", softplus_forward, softplus_backward,
        {.once_differentiable = true, .jvp = [](const In&, const In& u) { return sum(u[0]); }});
    CHECK(error_message([&] { (void)jvp([](const In& in) { return summing(in); }, {x}, {x.detach()}); }) ==
          "[test_jvp_wrong_shape] the jvp returned [] float64 on cpu; the output is [2, 3] float64 on cpu");
  }
  SUBCASE("two ops of one name") {
    const CustomOp once("test_defined_twice", softplus_forward, softplus_backward);
    CHECK(error_message([&] { CustomOp again("test_defined_twice", softplus_forward, softplus_backward); }) ==
          "[test_defined_twice] a custom op of this name is defined already; define each op once");
  }
  SUBCASE("an input changed in place between the forward and the backward") {
    const Tensor input = leaf(uniform64({2, 3}, 10));
    const Tensor y = softplus()({input});
    core::copy_into(core::zeros_like(core_tensor(input)), core_tensor(input));
    CHECK(error_message([&] { (void)first_gradient(y, input); }) ==
          "[backward] a tensor used by test_softplus was modified after the forward pass (version 0, now 1); its "
          "gradient would be wrong");
  }
}
