// The engine: gradients add up where a value is used more than once and across backward() calls;
// broadcast gradients are summed back to the input's shape; backward with and without a seed;
// grad mode; graphs freed after backward; tensors changed in place after the forward pass;
// detach and requires_grad; 100,000-op graphs (backward and teardown without deep recursion);
// and memory: what stays alive after backward.
#include <algorithm>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/gradients.h"
#include "autograd/internal.h"

namespace core = axiom::core;
using namespace axiom;
using namespace axiom::test;
using axiom::test::check_close;
using axiom::test::check_error;
using axiom::test::values_of;

namespace {

core::Tensor doubles(const std::vector<double>& values, const Shape& shape) {
  return core::from_vector<double>(values, shape);
}

std::vector<double> map(const std::vector<double>& xs, double (*f)(double)) {
  std::vector<double> out;
  for (double x : xs) out.push_back(f(x));
  return out;
}

}  // namespace

// --- accumulation -------------------------------------------------------------------------------------

TEST_CASE("a value feeding several ops gets the sum of their gradients") {
  const auto x = leaf(doubles({0.5, -1, 2}, {3}));
  // x feeds mul, exp and add: d/dx sum(2x + exp(x) + x) = 2 + exp(x) + 1
  const axiom::Tensor y = sum(add(add(mul(x, 2.0), exp(x)), x));
  y.backward();
  std::vector<double> expected;
  for (double v : {0.5, -1.0, 2.0}) expected.push_back(3 + std::exp(v));
  check_close(core_tensor(x.grad()), expected, 1e-12, 1e-12, "dy/dx");

  // A non-leaf used twice: h = tanh(x), z = sum(h * exp(h)), dz/dx = (exp(h) + h exp(h)) (1 - h^2).
  const auto w = leaf(doubles({0.3, -0.7}, {2}));
  const axiom::Tensor h = tanh(w);
  sum(mul(h, exp(h))).backward();
  std::vector<double> expected_w;
  for (double v : {0.3, -0.7}) {
    const double t = std::tanh(v);
    expected_w.push_back((std::exp(t) + t * std::exp(t)) * (1 - t * t));
  }
  check_close(core_tensor(w.grad()), expected_w, 1e-12, 1e-12, "dz/dw");
}

TEST_CASE("backward twice with retain_graph doubles the gradient, and zero_grad resets it") {
  const auto x = leaf(doubles({0.5, -1, 2}, {3}));
  const std::vector<double> once = map({0.5, -1, 2}, [](double v) { return std::exp(v) + 2 * v; });
  const axiom::Tensor y = sum(add(exp(x), mul(x, x)));
  y.backward({}, {.retain_graph = true});
  check_close(core_tensor(x.grad()), once, 1e-12, 1e-12, "after one backward");
  y.backward();
  std::vector<double> twice;
  for (double v : once) twice.push_back(2 * v);
  check_close(core_tensor(x.grad()), twice, 1e-12, 1e-12, "after two");
  x.zero_grad();
  CHECK_FALSE(x.grad().defined());
  sum(exp(x)).backward();
  check_close(core_tensor(x.grad()), map({0.5, -1, 2}, [](double v) { return std::exp(v); }), 1e-12, 1e-12,
              "after zero_grad");
}

TEST_CASE("backward adds to the gradient that is already there") {
  const auto x = leaf(doubles({1, 2}, {2}));
  sum(mul(x, 3.0)).backward();
  sum(mul(x, x)).backward();  // a different loss: 3 + 2x
  check_close(core_tensor(x.grad()), {5, 7}, 1e-12, 1e-12);
}

// --- un-broadcasting ----------------------------------------------------------------------------------

TEST_CASE("a 3x1 input broadcast against a 2x3x4 one gets a 3x1 gradient") {
  const auto a = leaf(doubles({1, 2, 3}, {3, 1}));
  const auto b = leaf(uniform64({2, 3, 4}, 1));
  const axiom::Tensor y = mul(a, b);
  REQUIRE(y.shape() == Shape{2, 3, 4});
  const axiom::Tensor seed(core::arange(1, 25, 1, Dtype::float64).reshape({2, 3, 4}));
  y.backward(seed);
  REQUIRE(a.grad().shape() == Shape{3, 1});
  REQUIRE(b.grad().shape() == Shape{2, 3, 4});
  const std::vector<double> bs = values_of(core_tensor(b)), seeds = values_of(core_tensor(seed));
  std::vector<double> da(3, 0.0), db(24);
  for (int n = 0; n < 2; ++n) {
    for (int i = 0; i < 3; ++i) {
      for (int k = 0; k < 4; ++k) {
        const int at = (n * 3 + i) * 4 + k;
        da[i] += seeds[at] * bs[at];
        db[at] = seeds[at] * (i + 1);
      }
    }
  }
  check_close(core_tensor(a.grad()), da, 1e-12, 1e-12, "da");
  check_close(core_tensor(b.grad()), db, 1e-12, 1e-12, "db");

  // add: the gradient of the [3, 1] input is the seed summed over axes 0 and 2.
  const auto c = leaf(doubles({1, 2, 3}, {3, 1}));
  add(c, axiom::Tensor(uniform64({2, 3, 4}, 2))).backward(seed);
  REQUIRE(c.grad().shape() == Shape{3, 1});
  check_close(
      core_tensor(c.grad()),
      {1 + 2 + 3 + 4 + 13 + 14 + 15 + 16, 5 + 6 + 7 + 8 + 17 + 18 + 19 + 20, 9 + 10 + 11 + 12 + 21 + 22 + 23 + 24},
      1e-12, 1e-12, "dc");
}

// --- backward and its seed -----------------------------------------------------------------------------

TEST_CASE("backward(grad) on a non-scalar tensor") {
  const auto x = leaf(uniform64({2, 3}, 3));
  const core::Tensor c = uniform64({2, 3}, 4);
  const axiom::Tensor y = mul(x, axiom::Tensor(c));
  const axiom::Tensor seed(uniform64({2, 3}, 5));
  y.backward(seed);
  const std::vector<double> cs = values_of(c), seeds = values_of(core_tensor(seed));
  std::vector<double> expected;
  for (size_t i = 0; i < cs.size(); ++i) expected.push_back(cs[i] * seeds[i]);
  check_close(core_tensor(x.grad()), expected, 1e-12, 1e-12);

  // backward on a leaf adds the seed itself.
  const auto z = leaf(uniform64({2}, 6));
  z.backward(axiom::Tensor(doubles({1.5, -2}, {2})));
  check_close(core_tensor(z.grad()), {1.5, -2}, 0, 0);
}

TEST_CASE("backward needs a seed for a non-scalar, of the right shape and dtype") {
  const auto x = leaf(uniform64({2, 3}, 7));
  const axiom::Tensor y = exp(x);
  check_error([&] { y.backward(); }, {"[backward]", "[2, 3]", "gradient"});
  check_error([&] { y.backward(axiom::ones({3, 2}, Dtype::float64)); }, {"[backward]", "[3, 2]", "[2, 3]"});
  check_error([&] { y.backward(axiom::ones({2, 3}, Dtype::float32)); }, {"[backward]", "float32", "float64"});
  CHECK_FALSE(x.grad().defined());
  y.backward(axiom::ones({2, 3}, Dtype::float64));  // the graph is still there after those errors
  CHECK(x.grad().defined());
  // A one-element tensor of any rank needs no seed.
  const auto s = leaf(uniform64({1, 1}, 8));
  exp(s).backward();
  check_close(core_tensor(s.grad()), {std::exp(s.item())}, 1e-12, 1e-12);
}

TEST_CASE("backward on a tensor that does not require a gradient is an error") {
  const axiom::Tensor plain(uniform64({2}, 9));
  check_error([&] { sum(exp(plain)).backward(); }, {"[backward]", "does not require a gradient"});
  check_error([&] { plain.backward(axiom::ones({2}, Dtype::float64)); }, {"[backward]"});
}

// --- grad mode ------------------------------------------------------------------------------------------

TEST_CASE("NoGrad scopes record nothing and restore the mode afterwards") {
  const auto x = leaf(uniform64({2, 3}, 10));
  REQUIRE(grad_enabled());
  {
    NoGrad no_grad;
    CHECK_FALSE(grad_enabled());
    for (const axiom::Tensor& y : {mul(x, x), exp(x), sum(x), matmul(x, x.transpose(0, 1)), x.transpose(0, 1),
                                   x.reshape({6}), x.slice(1, 0, 2), softmax(x), concat({x, x}, 0)}) {
      CHECK_FALSE(y.requires_grad());
      CHECK(y.grad_fn() == nullptr);
      CHECK(y.is_leaf());
    }
    {
      NoGrad nested;
      CHECK_FALSE(grad_enabled());
    }
    CHECK_FALSE(grad_enabled());  // the inner scope restores "off", not "on"
    // Another thread has its own mode.
    bool other_thread = false;
    std::thread([&] { other_thread = grad_enabled(); }).join();
    CHECK(other_thread);
  }
  CHECK(grad_enabled());
  const axiom::Tensor y = mul(x, x);
  CHECK(y.requires_grad());
  REQUIRE(y.grad_fn() != nullptr);
  CHECK(std::string(y.grad_fn()->name) == "mul");

  // The mode comes back when the scope is left by an exception, too.
  try {
    NoGrad no_grad;
    throw std::runtime_error("leaving");
  } catch (const std::runtime_error&) {
  }
  CHECK(grad_enabled());
}

// --- freed graphs ---------------------------------------------------------------------------------------

TEST_CASE("a second backward without retain_graph is an error that mentions retain_graph") {
  const auto x = leaf(uniform64({3}, 11));
  const axiom::Tensor y = sum(exp(x));
  y.backward();
  const core::Tensor first = core_tensor(x.grad());
  check_error([&] { y.backward(); }, {"[backward]", "retain_graph"});
  check_close(core_tensor(x.grad()), values_of(first), 0, 0, "the gradient is unchanged by the failed call");

  // Two losses sharing a subgraph: the first backward frees it.
  const axiom::Tensor h = tanh(x);
  const axiom::Tensor y1 = sum(h), y2 = sum(mul(h, 2.0));
  y1.backward();
  check_error([&] { y2.backward(); }, {"[backward]", "tanh", "retain_graph"});

  // With retain_graph the graph survives exactly one more pass without it.
  const axiom::Tensor z = sum(exp(x));
  z.backward({}, {.retain_graph = true});
  z.backward({}, {.retain_graph = true});
  z.backward();
  check_error([&] { z.backward(); }, {"retain_graph"});
}

// --- changes made in place after the forward pass -------------------------------------------------------

TEST_CASE("a tensor saved for backward and modified afterwards makes backward throw, naming the op") {
  SUBCASE("set on an input of mul") {
    const auto x = leaf(uniform64({3}, 12));
    const axiom::Tensor w(uniform64({3}, 13));
    const axiom::Tensor y = mul(x, w);
    core_tensor(x).set({0}, 5.0);
    check_error([&] { y.backward(axiom::ones({3}, Dtype::float64)); }, {"[backward]", "mul", "modified"});
    CHECK_FALSE(x.grad().defined());
  }
  SUBCASE("copy_into the constant operand of mul, under a sum") {
    const auto x = leaf(uniform64({3}, 14));
    const axiom::Tensor w(uniform64({3}, 15));
    const axiom::Tensor y = sum(mul(x, w));
    core::copy_into(core::zeros({3}, Dtype::float64), core_tensor(w));
    check_error([&] { y.backward(); }, {"[backward]", "mul", "modified"});
  }
  SUBCASE("a write through another view of the same memory") {
    const core::Tensor base = uniform64({2, 3}, 16);
    const auto x = leaf(base.select(0, 0));
    const axiom::Tensor y = sum(mul(x, x));
    core::copy_into(core::ones({2}, Dtype::float64), base.select(1, 0));  // a column: x[0] and an element of row 1
    check_error([&] { y.backward(); }, {"mul", "modified"});
  }
  SUBCASE("the saved output of exp") {
    const auto x = leaf(uniform64({3}, 17));
    const axiom::Tensor y = exp(x);
    core_tensor(y).set({1}, 0.0);
    check_error([&] { y.backward(axiom::ones({3}, Dtype::float64)); }, {"[backward]", "exp", "modified"});
  }
  SUBCASE("axiom::copy_into a tensor the graph saw") {
    const auto x = leaf(uniform64({3}, 20));
    const axiom::Tensor w(uniform64({3}, 21));
    const axiom::Tensor y = sum(mul(x, w));
    axiom::copy_into(axiom::Tensor(core::zeros({3}, Dtype::float64)), w);
    check_error([&] { y.backward(); }, {"[backward]", "mul", "modified"});
    check_error([&] { axiom::copy_into(w, x); }, {"[copy_into] the destination requires a gradient"});
  }
  SUBCASE("changes after backward, or to tensors outside the graph, are fine") {
    const auto x = leaf(uniform64({3}, 18));
    const core::Tensor outside = uniform64({3}, 19);
    const axiom::Tensor y = sum(exp(x));
    outside.set({0}, 1.0);
    y.backward();
    core_tensor(x).set({0}, 1.0);
    CHECK(x.grad().defined());
  }
}

// --- detach and requires_grad ---------------------------------------------------------------------------

TEST_CASE("detach gives the same numbers without history") {
  const auto x = leaf(doubles({0.5, -1}, {2}));
  const axiom::Tensor y = exp(x);
  const axiom::Tensor d = y.detach();
  CHECK_FALSE(d.requires_grad());
  CHECK(d.is_leaf());
  CHECK(d.grad_fn() == nullptr);
  CHECK(core_tensor(d).storage() == core_tensor(y).storage());
  // z = sum(d * x): dz/dx = d = exp(x) (the path through d is cut: not exp(x) + x exp(x)).
  sum(mul(d, x)).backward();
  check_close(core_tensor(x.grad()), {std::exp(0.5), std::exp(-1.0)}, 1e-12, 1e-12);
  CHECK_FALSE(d.grad().defined());
}

TEST_CASE("requires_grad: leaves only, floating dtypes only") {
  const auto x = leaf(uniform64({2}, 20));
  CHECK(x.requires_grad());
  CHECK(x.is_leaf());
  axiom::Tensor y = exp(x);
  CHECK(y.requires_grad());
  CHECK_FALSE(y.is_leaf());
  check_error([&] { y.set_requires_grad(false); }, {"[set_requires_grad]", "leaf"});
  CHECK(y.requires_grad());
  axiom::Tensor indices(core::zeros({2}, Dtype::int64));
  check_error([&] { indices.set_requires_grad(true); }, {"[set_requires_grad]", "int64"});
  CHECK_FALSE(indices.requires_grad());
  check_error([] { axiom::Tensor(core::zeros({2}, Dtype::uint8), true); }, {"[set_requires_grad]", "uint8"});
  axiom::Tensor f(core::zeros({2}, Dtype::float32));
  f.set_requires_grad(true);
  CHECK(f.requires_grad());
  f.set_requires_grad(false);
  CHECK_FALSE(f.requires_grad());
  // Converting to an integer dtype ends the graph: rounding passes no gradient.
  const axiom::Tensor rounded = x.to(Dtype::int64);
  CHECK(rounded.dtype() == Dtype::int64);
  CHECK_FALSE(rounded.requires_grad());
  CHECK(rounded.grad_fn() == nullptr);
  CHECK(x.to(Dtype::float32).requires_grad());
  // An op on tensors none of which requires a gradient records nothing.
  const axiom::Tensor plain = exp(axiom::Tensor(uniform64({2}, 21)));
  CHECK_FALSE(plain.requires_grad());
  CHECK(plain.grad_fn() == nullptr);
}

// --- deep graphs ----------------------------------------------------------------------------------------

TEST_CASE("a chain of 100,000 ops: backward and teardown without deep recursion") {
  constexpr int kDepth = 100000;
  const auto x = leaf(core::scalar(0.5, Dtype::float64));
  const int64_t start = live_buffers();
  SUBCASE("backward") {
    axiom::Tensor y = x;
    for (int i = 0; i < kDepth; ++i) y = add(y, 1.0);
    CHECK(y.item() == doctest::Approx(kDepth + 0.5));
    y.backward();
    REQUIRE(x.grad().defined());
    CHECK(x.grad().item() == 1.0);
  }
  SUBCASE("backward with retain_graph, then teardown") {
    axiom::Tensor y = x;
    for (int i = 0; i < kDepth; ++i) y = mul(add(y, 1.0), 1.0);
    y.backward({}, {.retain_graph = true});
    CHECK(x.grad().item() == 1.0);
  }
  SUBCASE("teardown of a chain of squares, each value used twice by the next op") {
    {
      axiom::Tensor y = x;
      for (int i = 0; i < kDepth; ++i) y = mul(y, y);
    }
    CHECK_FALSE(x.grad().defined());
  }
  SUBCASE("teardown of a chain never backwarded") {
    {
      axiom::Tensor y = x;
      for (int i = 0; i < kDepth; ++i) y = tanh(y);  // each rule keeps its output: the graph holds every value
      CHECK(live_buffers() >= start + kDepth);
    }
    CHECK_FALSE(x.grad().defined());
  }
  x.zero_grad();
  CHECK(live_buffers() == start);
}

// --- memory ------------------------------------------------------------------------------------------------

TEST_CASE("memory: an op's output that no backward rule keeps is freed with its last handle") {
  const auto x = leaf(uniform64({4096}, 34));
  const int64_t bytes = 4096 * 8, before = core::allocation_stats().live_bytes;
  axiom::Tensor y, z;
  {
    const axiom::Tensor a = add(x, x);  // add's rule keeps nothing: a lives only while its handle does
    y = add(a, x);
    z = tanh(y);  // tanh keeps its output z, and y (its input) for the rule too
  }
  CHECK(core::allocation_stats().live_bytes - before == 2 * bytes);  // y and z; a is gone
  sum(z).backward();
  CHECK(x.grad().defined());
}

namespace {

struct Net {
  core::Tensor input = uniform64({4, 3}, 30);
  axiom::Tensor w1 = leaf(uniform64({3, 5}, 31)), b1 = leaf(uniform64({5}, 32)), w2 = leaf(uniform64({5, 2}, 33));
  std::vector<axiom::Tensor> leaves() const { return {w1, b1, w2}; }
  void zero_grad() const {
    for (const axiom::Tensor& t : leaves()) t.zero_grad();
  }
  // Only the loss leaves this function: every intermediate lives in the graph alone.
  axiom::Tensor loss() const {
    const axiom::Tensor h = tanh(add(matmul(axiom::Tensor(input), w1), b1));
    const axiom::Tensor p = softmax(matmul(layer_norm(h, axiom::Tensor(), axiom::Tensor()), w2));
    return mean(mul(p, p));
  }
};

}  // namespace

TEST_CASE("memory: after backward and dropping the outputs, only leaves and their gradients remain") {
  const Net net;
  net.loss().backward();  // once first, so that nothing allocated on first use is counted
  net.zero_grad();
  const int64_t start = live_buffers();
  {
    const axiom::Tensor loss = net.loss();
    loss.backward();
  }
  const int64_t grads = grad_buffers(net.leaves());
  CHECK(grads == 3);
  CHECK(live_buffers() == start + grads);
  net.zero_grad();
  CHECK(live_buffers() == start);
  {  // a graph never backwarded is freed with its output, too
    const axiom::Tensor loss = net.loss();
  }
  CHECK(live_buffers() == start);
  {  // and one kept by retain_graph
    const axiom::Tensor loss = net.loss();
    loss.backward({}, {.retain_graph = true});
  }
  CHECK(live_buffers() == start + grad_buffers(net.leaves()));
  net.zero_grad();
}

TEST_CASE("memory: backward without retain_graph frees the intermediates while the loss is alive") {
  const Net net;
  net.loss().backward();
  net.zero_grad();
  const int64_t start = live_buffers();

  const axiom::Tensor loss = net.loss();
  const int64_t before = live_buffers();
  loss.backward();
  const int64_t after = live_buffers();
  CHECK(after < before);
  CHECK(after == start + grad_buffers(net.leaves()) + 1);  // + the loss's own value

  net.zero_grad();
  const axiom::Tensor kept = net.loss();
  kept.backward({}, {.retain_graph = true});
  CHECK(live_buffers() > after + 1);  // with retain_graph the intermediates stay
}

TEST_CASE("gradient-ready hook: each leaf once, when its gradient is complete, before backward returns") {
  // y = sum(a * b + a) * c: `a` is used twice, so it is ready only after both uses; `unused`
  // is not in the graph and is never reported.
  const Tensor a = leaf(uniform64({3}, 1)), b = leaf(uniform64({3}, 2)), c = leaf(uniform64({}, 3));
  const Tensor unused = leaf(uniform64({2}, 4));
  const Tensor y = mul(sum(add(mul(a, b), a)), c);
  std::vector<std::pair<const TensorImpl*, std::vector<double>>> reports;  // leaf, its gradient when reported
  {
    const GradientReadyHook hook(
        [&](const Tensor& ready) { reports.emplace_back(ready.impl().get(), values_of(core_tensor(ready.grad()))); });
    y.backward();
  }
  REQUIRE(reports.size() == 3);
  for (const Tensor& t : {a, b, c}) {
    const auto found =
        std::find_if(reports.begin(), reports.end(), [&](const auto& r) { return r.first == t.impl().get(); });
    REQUIRE(found != reports.end());
    CHECK(found->second == values_of(core_tensor(t.grad())));  // complete when reported: nothing was added after
  }
  CHECK(std::none_of(reports.begin(), reports.end(), [&](const auto& r) { return r.first == unused.impl().get(); }));
  CHECK(reports.front().first == c.impl().get());  // the last op's leaf is ready first

  // Hooks nest (both are told), and a dead hook is told nothing.
  int inner = 0, outer = 0;
  {
    const GradientReadyHook outer_hook([&](const Tensor&) { ++outer; });
    {
      const GradientReadyHook inner_hook([&](const Tensor&) { ++inner; });
      sum(mul(a, b)).backward();
    }
    sum(mul(a, b)).backward();
  }
  sum(mul(a, b)).backward();
  CHECK(inner == 2);
  CHECK(outer == 4);
}
