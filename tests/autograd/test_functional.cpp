// Second derivatives and the functional interface: grad() with create_graph, vjp, jvp, hvp,
// jacobian and hessian, each against closed forms or finite differences in float64, and their errors.
#include <cmath>
#include <vector>

#include "tests/support/gradients.h"
#include "autograd/internal.h"

namespace core = axiom::core;
using namespace axiom;
using namespace axiom::test;
using In = std::vector<axiom::Tensor>;

namespace {
std::vector<double> numbers(const axiom::Tensor& t) { return t.to_vector<double>(); }

void check_close(const axiom::Tensor& got, const core::Tensor& expected, double tolerance = 1e-9) {
  REQUIRE(got.shape() == expected.shape());
  const std::vector<double> a = numbers(got), b = expected.to_vector<double>();
  for (size_t i = 0; i < a.size(); ++i) CHECK(a[i] == doctest::Approx(b[i]).epsilon(tolerance).scale(1));
}
}  // namespace

TEST_CASE("d2/dx2 tanh(x) = -2 tanh(x) (1 - tanh(x)^2), from grad() of grad()") {
  const axiom::Tensor x(uniform64({5}, 1), /*requires_grad=*/true);
  const axiom::Tensor y = sum(tanh(x));
  const axiom::Tensor dy = grad({y}, {x}, {}, {.create_graph = true})[0];  // 1 - tanh(x)^2, with a graph
  const axiom::Tensor d2y = grad({sum(dy)}, {x})[0];
  const core::Tensor t = core::tanh(core_tensor(x));
  check_close(dy, core::sub(core::full({5}, 1.0, Dtype::float64), core::mul(t, t)));
  check_close(d2y, core::mul(core::mul(t, -2.0), core::sub(core::full({5}, 1.0, Dtype::float64), core::mul(t, t))));
  CHECK_FALSE(x.grad().defined());  // grad() returns gradients; it does not add them to grad()
}

TEST_CASE("grad() of an intermediate tensor, of several outputs, and third derivatives") {
  const axiom::Tensor x(uniform64({3}, 2), /*requires_grad=*/true);
  const axiom::Tensor u = mul(x, 3.0);
  const axiom::Tensor y = sum(mul(u, u));
  check_close(grad({y}, {u})[0], core::mul(core_tensor(u), 2.0));  // d/du sum(u^2) = 2u, the walk stops at u
  // two outputs: d/dx (sum(x^2) + sum(3x)) = 2x + 3
  const std::vector<axiom::Tensor> both = grad({sum(mul(x, x)), sum(mul(x, 3.0))}, {x});
  check_close(both[0], core::add(core::mul(core_tensor(x), 2.0), 3.0));
  // d3/dx3 of x^4 = 24 x
  const axiom::Tensor first = grad({sum(pow(x, 4.0))}, {x}, {}, {.create_graph = true})[0];
  const axiom::Tensor second = grad({sum(first)}, {x}, {}, {.create_graph = true})[0];
  check_close(grad({sum(second)}, {x})[0], core::mul(core_tensor(x), 24.0));
}

TEST_CASE("grad() errors: unused inputs, no gradient wanted, freed graphs, shapes") {
  const axiom::Tensor x(uniform64({3}, 3), true), unused(uniform64({3}, 4), true), constant(uniform64({3}, 5));
  const axiom::Tensor y = sum(exp(x));
  test::check_error([&] { (void)grad({y}, {unused}, {}, {.retain_graph = true}); },
                    {"[grad]", "input 0 is not used", "allow_unused"});
  CHECK_FALSE(grad({y}, {x, unused}, {}, {.retain_graph = true, .allow_unused = true})[1].defined());
  test::check_error([&] { (void)grad({y}, {constant}); }, {"[grad]", "input 0 does not require a gradient"});
  test::check_error([&] { (void)grad({sum(constant)}, {x}); }, {"[grad]", "output 0 does not require a gradient"});
  test::check_error([&] { (void)grad({exp(x)}, {x}); }, {"[grad]", "needs a gradient argument", "[3]"});
  test::check_error([&] { (void)grad({y}, {x}, {axiom::Tensor(uniform64({2}, 6))}); },
                    {"[grad]", "the gradient is float64 [2]"});
  (void)grad({y}, {x});  // frees the graph
  test::check_error([&] { (void)grad({y}, {x}); }, {"[backward]", "was freed", "retain_graph"});
  const axiom::Tensor integers(core::arange(3));
  test::check_error([&] { (void)hvp([](const In& in) { return sum(in[0]); }, {integers}, {integers}); },
                    {"[hvp]", "int64", "float32 or float64"});
}

TEST_CASE("jacobian and hessian against closed forms") {
  const core::Tensor a = uniform64({3}, 7);
  // f(x) = x * x (elementwise): J = diag(2x)
  const axiom::Tensor j = jacobian([](const axiom::Tensor& x) { return mul(x, x); }, axiom::Tensor(a));
  core::Tensor expected = core::zeros({3, 3}, Dtype::float64);
  for (int64_t i = 0; i < 3; ++i) expected.set({i, i}, 2 * a.at({i}));
  check_close(j, expected);
  // f(x) = x^T A x: H = A + A^T
  const core::Tensor m = uniform64({3, 3}, 8);
  const axiom::Tensor matrix(m);
  const axiom::Tensor h =
      hessian([&](const axiom::Tensor& x) { return sum(mul(x, matmul(matrix, x))); }, axiom::Tensor(a));
  check_close(h, core::add(m, m.transpose(0, 1)));
}

TEST_CASE("vjp, jvp and hvp agree with the Jacobian and the Hessian") {
  const core::Tensor a = uniform64({4}, 9), u = uniform64({4}, 10), v = uniform64({4}, 11);
  const auto f = [](const axiom::Tensor& x) { return mul(sigmoid(x), sum(mul(x, x))); };  // R^4 -> R^4
  const axiom::Tensor j = jacobian(f, axiom::Tensor(a));                                  // [4, 4]
  const auto on_inputs = [&](const In& in) { return f(in[0]); };
  const VjpResult back = vjp(on_inputs, {axiom::Tensor(a)}, axiom::Tensor(v));
  check_close(back.grads[0], core::matmul(v.unsqueeze(0), core_tensor(j)).squeeze(0));  // v^T J
  const JvpResult forward = jvp(on_inputs, {axiom::Tensor(a)}, {axiom::Tensor(u)});
  check_close(forward.tangent, core::matmul(core_tensor(j), u.unsqueeze(1)).squeeze(1));  // J u
  check_close(forward.output, core_tensor(f(axiom::Tensor(a))));
  const auto loss = [](const axiom::Tensor& x) { return sum(tanh(mul(x, exp(x)))); };
  const axiom::Tensor h = hessian(loss, axiom::Tensor(a));
  const std::vector<axiom::Tensor> hv =
      hvp([&](const In& in) { return loss(in[0]); }, {axiom::Tensor(a)}, {axiom::Tensor(v)});
  check_close(hv[0], core::matmul(core_tensor(h), v.unsqueeze(1)).squeeze(1));
}

TEST_CASE("backward with create_graph leaves gradients that can be differentiated again") {
  const axiom::Tensor x(uniform64({4}, 12), /*requires_grad=*/true);
  sum(pow(x, 3.0)).backward({}, {.create_graph = true});  // x.grad() = 3 x^2, with a graph
  const axiom::Tensor first = x.grad();
  REQUIRE(first.requires_grad());
  check_close(first, core::mul(core::mul(core_tensor(x), core_tensor(x)), 3.0));
  x.zero_grad();
  sum(first).backward();  // d/dx sum(3 x^2) = 6 x, added to the fresh grad()
  check_close(x.grad(), core::mul(core_tensor(x), 6.0));
  CHECK_FALSE(x.grad().requires_grad());  // without create_graph: numbers only
  // A gradient used twice (add gives the same g to both inputs) is copied, also with a graph, so
  // that an optimizer scaling one leaf's gradient in place leaves the other's alone.
  const axiom::Tensor a(uniform64({3}, 13), true), b(uniform64({3}, 14), true);
  add(a, b).backward(axiom::Tensor(core::ones({3}, Dtype::float64)), {.create_graph = true});
  CHECK(core_tensor(a.grad()).storage() != core_tensor(b.grad()).storage());
}
