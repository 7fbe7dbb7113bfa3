// gradcheck must be able to fail. Ops recorded here with axiom::record carry deliberately wrong
// backward rules (exp whose rule uses x instead of y, a rule that is wrong at one chosen element,
// a rule that forgets an input); gradcheck must catch each one and say where: the input, the
// element, and the numerical and analytical values. The same ops with the right rule pass, so the
// failures come from the rules and nothing else.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "tests/support/gradients.h"
#include "autograd/internal.h"

namespace core = axiom::core;
using namespace axiom;
using namespace axiom::test;
using axiom::test::check_error;
using In = std::vector<axiom::Tensor>;
using Needs = std::vector<bool>;

namespace {

// exp with the right rule (dL/dx = g * y) or a planted wrong one (g * x).
axiom::Tensor planted_exp(const axiom::Tensor& x, bool wrong) {
  const core::Tensor y = core::exp(core_tensor(x));
  return record("exp", {x}, y, [x, y = axiom::Tensor(y), wrong](const axiom::Tensor& g, const Needs&) {
    return Grads{mul(g, wrong ? x : y)};
  });
}

// exp whose rule is right to first order, g * y, but uses y as a constant: its rule's own
// derivative (the second derivative of exp) is then missing. With the output as the engine hands
// it in (made by the exp Node), the rule is differentiable.
axiom::Tensor exp_with_constant_output(const axiom::Tensor& x, bool constant) {
  return record_keeping_output("exp", {x}, core::exp(core_tensor(x)),
                               [constant](const axiom::Tensor& g, const axiom::Tensor& y, const Needs&) {
                                 return Grads{mul(g, constant ? y.detach() : y)};
                               });
}

// mul whose gradient for b is off by `errors[k]` at the elements `at[k]` of b (b is [2, 3]).
axiom::Tensor mul_wrong_at(const axiom::Tensor& a, const axiom::Tensor& b, const std::vector<std::vector<int64_t>>& at,
                           const std::vector<double>& errors) {
  return record("mul", {a, b}, core::mul(core_tensor(a), core_tensor(b)),
                [a = core_tensor(a), b = core_tensor(b), at, errors](const axiom::Tensor& g, const Needs&) {
                  core::Tensor off = core::zeros(b.shape(), Dtype::float64);
                  for (size_t k = 0; k < at.size(); ++k) off.set(at[k], errors[k]);
                  return Grads{mul(g, axiom::Tensor(b)), mul(g, axiom::Tensor(core::add(a, off)))};
                });
}

// mul whose rule forgets b's gradient: returned undefined, or not returned at all.
axiom::Tensor mul_forgetting_b(const axiom::Tensor& a, const axiom::Tensor& b, bool short_list) {
  return record("mul", {a, b}, core::mul(core_tensor(a), core_tensor(b)),
                [b = axiom::Tensor(core_tensor(b)), short_list](const axiom::Tensor& g, const Needs&) {
                  if (short_list) return Grads{mul(g, b)};
                  return Grads{mul(g, b), axiom::Tensor()};
                });
}

// The number printed after `label` in a gradcheck message ("numerical 0.25, ...").
double number_after(const std::string& message, const std::string& label) {
  const size_t at = message.find(label + " ");
  REQUIRE(at != std::string::npos);
  return std::stod(message.substr(at + label.size() + 1));
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("the planted exp passes with the right rule, in both modes") {
  const auto x = leaf(uniform64({2, 3}, 1));
  const GradcheckResult full = gradcheck([](const In& in) { return planted_exp(in[0], false); }, {x});
  CHECK_MESSAGE(full.ok, full.message);
  CHECK(full.message.empty());
  CHECK(full.worst_error < 1e-6);
  GradcheckOptions projection;
  projection.full_jacobian = false;
  const GradcheckResult projected = gradcheck([](const In& in) { return planted_exp(in[0], false); }, {x}, projection);
  CHECK_MESSAGE(projected.ok, projected.message);
}

TEST_CASE("a wrong exp rule (g * x instead of g * y) fails, naming input, element, numerical and analytical") {
  const auto x = leaf(uniform64({2, 3}, 2));
  const GradcheckResult result = gradcheck([](const In& in) { return planted_exp(in[0], true); }, {x});
  CHECK_FALSE(result.ok);
  INFO(result.message);
  CHECK(contains(result.message, "Jacobian mismatch"));
  CHECK(contains(result.message, "input 0"));
  CHECK(contains(result.message, "element ["));
  CHECK(contains(result.message, "numerical"));
  CHECK(contains(result.message, "analytical"));
  CHECK(result.worst_error > 0.1);
  // The values reported are d exp(x) / dx = exp(x) (numerical) and x (the wrong rule) at the
  // element named.
  const std::string tail = result.message.substr(result.message.find("with respect to input 0 element "));
  const std::vector<double> xs = x.to_vector<double>();
  bool matched = false;
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 3; ++j) {
      if (!contains(tail, "element [" + std::to_string(i) + ", " + std::to_string(j) + "]")) continue;
      matched = true;
      const double xv = xs[static_cast<size_t>(i * 3 + j)];
      CHECK(number_after(result.message, "numerical") == doctest::Approx(std::exp(xv)).epsilon(1e-6));
      CHECK(number_after(result.message, "analytical") == doctest::Approx(xv).epsilon(1e-9));
    }
  }
  CHECK(matched);
}

TEST_CASE("the failure names the input and the element whose gradient is wrong, the worst one first") {
  const auto a = leaf(uniform64({2, 3}, 3)), b = leaf(uniform64({2, 3}, 4));
  const double a12 = a.at({1, 2});
  SUBCASE("one wrong element") {
    const GradcheckResult result = gradcheck(
        [](const In& in) {
          return mul_wrong_at(in[0], in[1], {{1, 2}}, {1.0});
        },
        {a, b});
    CHECK_FALSE(result.ok);
    INFO(result.message);
    CHECK(contains(result.message, "output element [1, 2] with respect to input 1 element [1, 2]"));
    CHECK(number_after(result.message, "numerical") == doctest::Approx(a12).epsilon(1e-6));
    CHECK(number_after(result.message, "analytical") == doctest::Approx(a12 + 1.0).epsilon(1e-9));
    CHECK(result.worst_error == doctest::Approx(1.0).epsilon(1e-6));
  }
  SUBCASE("two wrong elements: the worse one is reported") {
    const GradcheckResult result = gradcheck(
        [](const In& in) {
          return mul_wrong_at(in[0], in[1], {{0, 1}, {1, 2}}, {0.5, 2.0});
        },
        {a, b});
    CHECK_FALSE(result.ok);
    INFO(result.message);
    CHECK(contains(result.message, "with respect to input 1 element [1, 2]"));
    CHECK(result.worst_error == doctest::Approx(2.0).epsilon(1e-6));
  }
  SUBCASE("an error of 1% is above the default tolerance, and below a looser one") {
    const double small = 0.01 * std::abs(a12);
    const Fn fn = [small](const In& in) { return mul_wrong_at(in[0], in[1], {{1, 2}}, {small}); };
    const GradcheckResult strict = gradcheck(fn, {a, b});
    CHECK_FALSE(strict.ok);
    CHECK(contains(strict.message, "input 1 element [1, 2]"));
    GradcheckOptions loose;
    loose.rtol = 0.05;
    const GradcheckResult relaxed = gradcheck(fn, {a, b}, loose);
    CHECK_MESSAGE(relaxed.ok, relaxed.message);
  }
  SUBCASE("only the inputs that require a gradient are checked") {
    // b's gradient is wrong, but b is a constant here: nothing to report.
    const axiom::Tensor constant(core_tensor(b));
    const GradcheckResult result = gradcheck(
        [&](const In& in) {
          return mul_wrong_at(in[0], constant, {{1, 2}}, {1.0});
        },
        {a});
    CHECK_MESSAGE(result.ok, result.message);
  }
}

TEST_CASE("a wrong rule fails in projection mode too") {
  const auto x = leaf(uniform64({6, 7}, 5));
  GradcheckOptions options;
  options.full_jacobian = false;
  const GradcheckResult result = gradcheck([](const In& in) { return planted_exp(in[0], true); }, {x}, options);
  CHECK_FALSE(result.ok);
  INFO(result.message);
  CHECK(contains(result.message, "projection"));
  CHECK(contains(result.message, "numerical"));
  CHECK(contains(result.message, "analytical"));
  CHECK(result.worst_error > 0.1);

  // One wrong element among 12, on the second of two inputs, is still seen.
  const auto a = leaf(uniform64({2, 3}, 6)), b = leaf(uniform64({2, 3}, 7));
  const GradcheckResult one = gradcheck(
      [](const In& in) {
        return mul_wrong_at(in[0], in[1], {{0, 2}}, {1.0});
      },
      {a, b}, options);
  CHECK_FALSE(one.ok);
  CHECK(contains(one.message, "numerical"));
}

TEST_CASE("a rule that forgets an input's gradient fails, naming that input") {
  const auto a = leaf(uniform64({2, 3}, 8)), b = leaf(uniform64({2, 3}, 9));
  for (bool short_list : {false, true}) {
    CAPTURE(short_list);
    const GradcheckResult result =
        gradcheck([short_list](const In& in) { return mul_forgetting_b(in[0], in[1], short_list); }, {a, b});
    CHECK_FALSE(result.ok);
    INFO(result.message);
    CHECK(contains(result.message, "with respect to input 1"));
    CHECK(number_after(result.message, "analytical") == 0.0);
    GradcheckOptions options;
    options.full_jacobian = false;
    const GradcheckResult projected =
        gradcheck([short_list](const In& in) { return mul_forgetting_b(in[0], in[1], short_list); }, {a, b}, options);
    CHECK_FALSE(projected.ok);
  }
  // With a alone checked, the same op passes: a's gradient is right.
  const axiom::Tensor constant(core_tensor(b));
  const GradcheckResult only_a = gradcheck([&](const In& in) { return mul_forgetting_b(in[0], constant, false); }, {a});
  CHECK_MESSAGE(only_a.ok, only_a.message);
}

TEST_CASE("a rule that returns NaN fails") {
  const auto x = leaf(uniform64({3}, 10));
  const Fn fn = [](const In& in) {
    return record("nan_rule", {in[0]}, core::mul(core_tensor(in[0]), 2.0), [](const axiom::Tensor& g, const Needs&) {
      return Grads{mul(g, std::numeric_limits<double>::quiet_NaN())};
    });
  };
  const GradcheckResult result = gradcheck(fn, {x});
  CHECK_FALSE(result.ok);
  CHECK(contains(result.message, "nan"));
}

TEST_CASE("gradcheck's own errors") {
  const axiom::Tensor single(core::uniform({3}, 0, 1, default_generator(), Dtype::float32), true);
  check_error([&] { (void)gradcheck([](const In& in) { return in[0]; }, {single}); },
              {"[gradcheck]", "float32", "float64"});
  const axiom::Tensor constant(uniform64({3}, 11));
  check_error([&] { (void)gradcheck([](const In& in) { return exp(in[0]); }, {constant}); },
              {"[gradcheck]", "no input requires a gradient"});
  const auto x = leaf(uniform64({3}, 12));
  check_error([&] { (void)gradcheck([](const In& in) { return in[0].to(Dtype::float32); }, {x}); },
              {"[gradcheck]", "float64"});
}

TEST_CASE("gradcheck refuses options that would check nothing") {
  const auto x = leaf(uniform64({3}, 14));
  const auto f = [](const In& in) { return exp(in[0]); };
  GradcheckOptions no_projection;
  no_projection.full_jacobian = false;
  no_projection.projections = 0;
  check_error([&] { (void)gradcheck(f, {x}, no_projection); }, {"[gradcheck] projections must be at least 1, got 0"});
  check_error([&] { (void)gradgradcheck(f, {x}, no_projection); },
              {"[gradgradcheck] projections must be at least 1, got 0"});
  for (double eps : {0.0, -1e-6, std::numeric_limits<double>::quiet_NaN()}) {
    GradcheckOptions options;
    options.eps = eps;
    check_error([&] { (void)gradcheck(f, {x}, options); }, {"[gradcheck] eps must be finite and positive"});
  }
  GradcheckOptions negative_tolerance;
  negative_tolerance.atol = -1;
  check_error([&] { (void)gradcheck(f, {x}, negative_tolerance); },
              {"[gradcheck] atol and rtol must be finite and 0 or more"});
}

TEST_CASE("gradcheck leaves its inputs as it found them, in both modes, also when the function throws halfway") {
  const core::Tensor values = uniform64({2, 3}, 13);
  const std::vector<double> before = values.to_vector<double>();
  const auto x = leaf(values.clone());
  for (bool full : {true, false}) {
    CAPTURE(full);
    GradcheckOptions options;
    options.full_jacobian = full;
    const GradcheckResult result = gradcheck([](const In& in) { return tanh(in[0]); }, {x}, options);
    CHECK_MESSAGE(result.ok, result.message);
    CHECK(x.to_vector<double>() == before);
    CHECK_FALSE(x.grad().defined());
    int calls = 0;  // the third call comes while an input is moved by eps
    const auto fails_on_the_third_call = [&calls](const In& in) {
      if (++calls == 3) throw Error("test", "the function failed");
      return tanh(in[0]);
    };
    check_error([&] { (void)gradcheck(fails_on_the_third_call, {x}, options); }, {"[test] the function failed"});
    CHECK(x.to_vector<double>() == before);
    CHECK_FALSE(x.grad().defined());
  }
}

TEST_CASE("gradgradcheck catches a rule that is right to first order but not differentiable") {
  const auto x = leaf(uniform64({2, 3}, 12, -1, 1));
  const auto planted = [](const In& in) { return exp_with_constant_output(in[0], true); };
  const auto right = [](const In& in) { return exp_with_constant_output(in[0], false); };
  const GradcheckResult first = gradcheck(planted, {x});
  CHECK_MESSAGE(first.ok, first.message);  // first derivatives: right
  const GradcheckResult second = gradgradcheck(planted, {x});
  CHECK_FALSE(second.ok);
  CHECK(contains(second.message, "Jacobian mismatch"));
  const GradcheckResult fixed = gradgradcheck(right, {x});
  CHECK_MESSAGE(fixed.ok, fixed.message);
}
