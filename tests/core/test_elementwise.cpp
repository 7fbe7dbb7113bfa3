// Elementwise ops against std:: formulas evaluated in double: every unary op, every binary op on
// broadcast shape pairs (size-1, size-0 and rank-0 operands), in every memory layout, in float32
// and float64 (and int64 where the op allows it); scalar overloads, operators, where, masked_fill.
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "core/backend.h"
#include "tests/support/reference.h"

namespace core = axiom::core;
using namespace axiom::test;
using axiom::Device;
using axiom::core::Tensor;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

const std::vector<Shape> kUnaryShapes = {{}, {0}, {7}, {3, 4}, {2, 0, 3}, {2, 3, 4}, {1, 3, 1, 2}, {2, 2, 3, 2}};

std::vector<double> map(const std::vector<double>& values, const std::function<double(double)>& f) {
  std::vector<double> out;
  for (double v : values) out.push_back(f(v));
  return out;
}

// f(a, b) broadcast over the two operands, written as a loop over the output's elements.
std::vector<double> broadcast_map(const Tensor& a, const Tensor& b, const std::function<double(double, double)>& f) {
  const Shape out_shape = broadcast_reference(a.shape(), b.shape());
  const std::vector<double> va = values_of(a), vb = values_of(b);
  std::vector<double> out;
  for (int64_t flat = 0; flat < core::numel(out_shape); ++flat) {
    const auto index = unravel(flat, out_shape);
    out.push_back(f(va[broadcast_source(index, a.shape())], vb[broadcast_source(index, b.shape())]));
  }
  return out;
}

double sigmoid_ref(double x) { return 1 / (1 + std::exp(-x)); }
double gelu_ref(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }
double gelu_tanh_ref(double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }
double max_ref(double x, double y) { return std::isnan(x) || std::isnan(y) ? kNaN : (x > y ? x : y); }
double min_ref(double x, double y) { return std::isnan(x) || std::isnan(y) ? kNaN : (x < y ? x : y); }

struct UnaryCase {
  std::string name;
  std::function<Tensor(const Tensor&)> op;
  std::function<double(double)> ref;
  double low, high;  // input range
};

std::vector<UnaryCase> unary_cases() {
  return {
      {"neg", [](const Tensor& x) { return core::neg(x); }, [](double v) { return -v; }, -3, 3},
      {"abs", [](const Tensor& x) { return core::abs(x); }, [](double v) { return std::abs(v); }, -3, 3},
      {"exp", [](const Tensor& x) { return core::exp(x); }, [](double v) { return std::exp(v); }, -5, 5},
      {"log", [](const Tensor& x) { return core::log(x); }, [](double v) { return std::log(v); }, 0.01, 10},
      {"sqrt", [](const Tensor& x) { return core::sqrt(x); }, [](double v) { return std::sqrt(v); }, 0, 10},
      {"rsqrt", [](const Tensor& x) { return core::rsqrt(x); }, [](double v) { return 1 / std::sqrt(v); }, 0.01, 10},
      {"tanh", [](const Tensor& x) { return core::tanh(x); }, [](double v) { return std::tanh(v); }, -4, 4},
      {"sigmoid", [](const Tensor& x) { return core::sigmoid(x); }, sigmoid_ref, -8, 8},
      {"relu", [](const Tensor& x) { return core::relu(x); }, [](double v) { return v < 0 ? 0 : v; }, -3, 3},
      {"gelu", [](const Tensor& x) { return core::gelu(x); }, gelu_ref, -4, 4},
      {"gelu_tanh", [](const Tensor& x) { return core::gelu_tanh(x); }, gelu_tanh_ref, -4, 4},
      {"pow 2", [](const Tensor& x) { return core::pow(x, 2); }, [](double v) { return v * v; }, -3, 3},
      {"pow 3", [](const Tensor& x) { return core::pow(x, 3); }, [](double v) { return v * v * v; }, -3, 3},
      {"pow 0.5", [](const Tensor& x) { return core::pow(x, 0.5); }, [](double v) { return std::sqrt(v); }, 0, 9},
      {"pow -1.5", [](const Tensor& x) { return core::pow(x, -1.5); }, [](double v) { return std::pow(v, -1.5); }, 0.1,
       4},
      {"pow 0", [](const Tensor& x) { return core::pow(x, 0); }, [](double) { return 1.0; }, -3, 3},
  };
}

struct BinaryCase {
  std::string name;
  std::function<Tensor(const Tensor&, const Tensor&)> op;
  std::function<double(double, double)> ref;
  bool integers;  // also for int64
  bool positive_base;
};

#define BINARY(fn) [](const Tensor& a, const Tensor& b) { return core::fn(a, b); }

std::vector<BinaryCase> binary_cases() {
  auto cmp = [](auto f) { return [f](double x, double y) { return f(x, y) ? 1.0 : 0.0; }; };
  return {
      {"add", BINARY(add), [](double x, double y) { return x + y; }, true, false},
      {"sub", BINARY(sub), [](double x, double y) { return x - y; }, true, false},
      {"mul", BINARY(mul), [](double x, double y) { return x * y; }, true, false},
      {"div", BINARY(div), [](double x, double y) { return x / y; }, false, false},
      {"pow", BINARY(pow), [](double x, double y) { return std::pow(x, y); }, false, true},
      {"maximum", BINARY(maximum), max_ref, true, false},
      {"minimum", BINARY(minimum), min_ref, true, false},
      {"eq", BINARY(eq), cmp([](double x, double y) { return x == y; }), true, false},
      {"ne", BINARY(ne), cmp([](double x, double y) { return x != y; }), true, false},
      {"lt", BINARY(lt), cmp([](double x, double y) { return x < y; }), true, false},
      {"le", BINARY(le), cmp([](double x, double y) { return x <= y; }), true, false},
      {"gt", BINARY(gt), cmp([](double x, double y) { return x > y; }), true, false},
      {"ge", BINARY(ge), cmp([](double x, double y) { return x >= y; }), true, false},
  };
}

#undef BINARY

bool is_comparison(const std::string& name) {
  return name == "eq" || name == "ne" || name == "lt" || name == "le" || name == "gt" || name == "ge";
}

}  // namespace

// --- unary ---------------------------------------------------------------------------------------------

TEST_CASE("unary ops match std:: formulas in every layout") {
  Generator gen(11);
  for (const UnaryCase& c : unary_cases()) {
    for (Dtype dtype : {Dtype::float32, Dtype::float64}) {
      for (Layout layout : kAllLayouts) {
        for (const Shape& shape : kUnaryShapes) {
          CAPTURE(c.name);
          CAPTURE(dtype);
          CAPTURE(layout);
          CAPTURE(str(shape));
          const Tensor x = random_tensor(shape, dtype, gen, layout, c.low, c.high);
          const Tensor y = c.op(x);
          CHECK(str(y.shape()) == str(shape));
          CHECK(y.dtype() == dtype);
          CHECK(y.is_contiguous());
          check_close(y, map(values_of(x), c.ref), tolerance(dtype));
        }
      }
    }
  }
}

TEST_CASE("unary ops on special values") {
  for (Dtype dtype : {Dtype::float32, Dtype::float64}) {
    CAPTURE(dtype);
    const Tensor x = core::from_vector<double>({-kInf, -1, -0.0, 0, 1, kInf, kNaN}).to(dtype);
    check_close(core::exp(x), {0, std::exp(-1), 1, 1, std::exp(1), kInf, kNaN}, tolerance(dtype));
    check_close(core::log(x), {kNaN, kNaN, -kInf, -kInf, 0, kInf, kNaN}, tolerance(dtype));
    check_close(core::sqrt(x), {kNaN, kNaN, 0, 0, 1, kInf, kNaN}, tolerance(dtype));
    check_close(core::relu(x), {0, 0, 0, 0, 1, kInf, kNaN}, tolerance(dtype));
    check_close(core::tanh(x), {-1, std::tanh(-1), 0, 0, std::tanh(1), 1, kNaN}, tolerance(dtype));
    check_close(core::sigmoid(x), {0, sigmoid_ref(-1), 0.5, 0.5, sigmoid_ref(1), 1, kNaN}, tolerance(dtype));
  }
}

TEST_CASE("sigmoid is accurate and finite for large |x|") {
  const std::vector<double> v = {-1000, -100, -30, -20, 0, 20, 30, 100, 1000};
  for (Dtype dtype : {Dtype::float32, Dtype::float64}) {
    CAPTURE(dtype);
    check_close(core::sigmoid(core::from_vector<double>(v).to(dtype)), map(v, sigmoid_ref), tolerance(dtype));
  }
  // In float64 the tiny values for negative x keep their relative accuracy (no 1 - (1 - e) loss).
  const std::vector<double> negative = {-30, -100, -700};
  check_close(core::sigmoid(core::from_vector<double>(negative)),
              map(negative, [](double x) { return std::exp(x) / (1 + std::exp(x)); }), 1e-13, 0);
}

TEST_CASE("neg, abs and relu also take integers") {
  Generator gen(12);
  for (Layout layout : kAllLayouts) {
    CAPTURE(layout);
    const Tensor x = random_tensor({3, 5}, Dtype::int64, gen, layout, -6, 6);
    const std::vector<double> v = values_of(x);
    for (const UnaryCase& c : unary_cases()) {
      if (c.name != "neg" && c.name != "abs" && c.name != "relu") continue;
      CAPTURE(c.name);
      const Tensor y = c.op(x);
      CHECK(y.dtype() == Dtype::int64);
      check_equal(y, map(v, c.ref));
    }
  }
  check_error([] { (void)core::exp(core::zeros({2}, Dtype::int64)); }, {"[exp] dtype int64 is not supported"});
  check_error([] { (void)core::gelu(core::zeros({2}, Dtype::uint8)); }, {"[gelu] dtype uint8 is not supported"});
  check_equal(core::abs(core::from_vector<uint8_t>({0, 7, 255})), {0, 7, 255});
  check_equal(core::relu(core::from_vector<uint8_t>({0, 7, 255})), {0, 7, 255});
}

// --- binary --------------------------------------------------------------------------------------------

TEST_CASE("binary ops broadcast over random shape pairs, in every layout") {
  Generator gen(13);
  const auto pairs = broadcast_pairs();
  int layout_turn = 0;
  for (const BinaryCase& c : binary_cases()) {
    for (Dtype dtype : {Dtype::float32, Dtype::float64, Dtype::int64}) {
      if (dtype == Dtype::int64 && !c.integers) continue;
      for (const ShapePair& pair : pairs) {
        const Layout la = kAllLayouts[layout_turn % 4], lb = kAllLayouts[(layout_turn / 4 + 1) % 4];
        ++layout_turn;
        CAPTURE(c.name);
        CAPTURE(dtype);
        CAPTURE(pair);
        CAPTURE(la);
        CAPTURE(lb);
        // Whole numbers for comparisons, min and max (so that ties happen); positive bases for pow.
        const bool whole = is_comparison(c.name) || c.name == "maximum" || c.name == "minimum";
        const double low = c.positive_base ? 0.1 : -3;
        const Tensor a = random_tensor(pair.a, dtype, gen, la, low, 3, whole);
        const Tensor b = random_tensor(pair.b, dtype, gen, lb, -3, 3, whole);
        const Tensor out = c.op(a, b);
        CHECK(str(out.shape()) == str(broadcast_reference(pair.a, pair.b)));
        CHECK(out.dtype() == (is_comparison(c.name) ? Dtype::uint8 : dtype));
        CHECK(out.is_contiguous());
        check_close(out, broadcast_map(a, b, c.ref), tolerance(dtype));
      }
    }
  }
}

TEST_CASE("binary ops on operands whose steps differ across the inner axis") {
  // The kernel has fast branches for steps (1, 1), (1, 0) and (0, 1); a column vector against a
  // row vector hits the (0, 1) and (1, 0) ones, a transposed operand the general one.
  Generator gen(14);
  for (Dtype dtype : {Dtype::float32, Dtype::float64}) {
    CAPTURE(dtype);
    const Tensor col = random_tensor({5, 1}, dtype, gen), row = random_tensor({1, 6}, dtype, gen);
    const Tensor t = random_tensor({6, 5}, dtype, gen).transpose(0, 1);
    check_close(core::sub(col, row), broadcast_map(col, row, std::minus<double>()), tolerance(dtype));
    check_close(core::sub(row, col), broadcast_map(row, col, std::minus<double>()), tolerance(dtype));
    check_close(core::div(t, row), broadcast_map(t, row, std::divides<double>()), tolerance(dtype));
    check_close(core::sub(col, t), broadcast_map(col, t, std::minus<double>()), tolerance(dtype));
  }
}

TEST_CASE("large operands are split across threads without losing elements") {
  // 257 x 263 = 67591 elements: more than two chunks of the elementwise grain, and the chunk
  // boundaries fall in the middle of rows (263 is prime), so a run must start mid-row.
  Generator gen(15);
  for (Dtype dtype : {Dtype::float32, Dtype::float64}) {
    CAPTURE(dtype);
    const Tensor a = random_tensor({257, 263}, dtype, gen, Layout::permuted);
    const Tensor b = random_tensor({257, 263}, dtype, gen, Layout::sliced);
    const Tensor c = random_tensor({257, 1}, dtype, gen);
    check_close(core::add(a, b), broadcast_map(a, b, std::plus<double>()), tolerance(dtype));
    check_close(core::mul(a, c), broadcast_map(a, c, std::multiplies<double>()), tolerance(dtype));
    check_close(core::exp(b), map(values_of(b), [](double v) { return std::exp(v); }), tolerance(dtype));
    check_close(a.contiguous(), values_of(a), 0, 0);
  }
}

TEST_CASE("maximum and minimum propagate NaN from either side") {
  for (Dtype dtype : {Dtype::float32, Dtype::float64}) {
    CAPTURE(dtype);
    const Tensor a = core::from_vector<double>({1, kNaN, 3, kNaN, -kInf, 2}).to(dtype);
    const Tensor b = core::from_vector<double>({kNaN, 2, 1, kNaN, 0, kInf}).to(dtype);
    check_close(core::maximum(a, b), {kNaN, kNaN, 3, kNaN, 0, kInf}, 0, 0);
    check_close(core::minimum(a, b), {kNaN, kNaN, 1, kNaN, -kInf, 2}, 0, 0);
    check_close(core::maximum(b, a), {kNaN, kNaN, 3, kNaN, 0, kInf}, 0, 0);
    check_close(core::minimum(b, a), {kNaN, kNaN, 1, kNaN, -kInf, 2}, 0, 0);
    // Comparisons with NaN are false, except ne.
    check_equal(core::eq(a, a), {1, 0, 1, 0, 1, 1});
    check_equal(core::ne(a, a), {0, 1, 0, 1, 0, 0});
    check_equal(core::le(a, b), {0, 0, 0, 0, 1, 1});
  }
}

TEST_CASE("integer arithmetic is exact, and uint8 wraps modulo 256") {
  const Tensor a = core::from_vector<int64_t>({int64_t{1} << 53, -7, 9});
  const Tensor b = core::from_vector<int64_t>({1, 2, -4});
  CHECK(core::add(a, b).to_vector<int64_t>() == std::vector<int64_t>{(int64_t{1} << 53) + 1, -5, 5});
  CHECK(core::mul(a, b).to_vector<int64_t>() == std::vector<int64_t>{int64_t{1} << 53, -14, -36});
  const Tensor u = core::from_vector<uint8_t>({250, 3});
  CHECK(core::add(u, core::from_vector<uint8_t>({10, 4})).to_vector<uint8_t>() == std::vector<uint8_t>{4, 7});
  CHECK(core::gt(u, core::scalar(100, Dtype::uint8)).to_vector<uint8_t>() == std::vector<uint8_t>{1, 0});
}

TEST_CASE("scalar overloads take the scalar in the tensor's dtype") {
  Generator gen(16);
  for (Dtype dtype : {Dtype::float32, Dtype::float64}) {
    CAPTURE(dtype);
    const Tensor x = random_tensor({2, 3}, dtype, gen, Layout::permuted);
    const auto v = values_of(x);
    check_close(core::add(x, 2.5), map(v, [](double e) { return e + 2.5; }), tolerance(dtype));
    check_close(core::sub(x, 2.5), map(v, [](double e) { return e - 2.5; }), tolerance(dtype));
    check_close(core::mul(x, -3), map(v, [](double e) { return e * -3; }), tolerance(dtype));
    check_close(core::div(x, 4), map(v, [](double e) { return e / 4; }), tolerance(dtype));
  }
  const Tensor i = core::from_vector<int64_t>({1, -2, 3});
  check_equal(core::add(i, 2.9), {3, 0, 5});  // 2.9 becomes int64 2
  check_equal(core::mul(i, -2), {-2, 4, -6});
  CHECK(core::add(i, 1).dtype() == Dtype::int64);
  check_equal(core::add(core::scalar(1.5), 1), {2.5});
  CHECK(core::add(core::scalar(1.5), 1).dim() == 0);
}

TEST_CASE("operators are the named ops") {
  Generator gen(17);
  const Tensor a = random_tensor({3, 1, 4}, Dtype::float64, gen),
               b = random_tensor({2, 4}, Dtype::float64, gen, Layout::sliced);
  check_close(a + b, broadcast_map(a, b, std::plus<double>()), tolerance(Dtype::float64));
  check_close(a - b, broadcast_map(a, b, std::minus<double>()), tolerance(Dtype::float64));
  check_close(a * b, broadcast_map(a, b, std::multiplies<double>()), tolerance(Dtype::float64));
  check_close(a / b, broadcast_map(a, b, std::divides<double>()), tolerance(Dtype::float64));
  check_close(-b, map(values_of(b), [](double v) { return -v; }), tolerance(Dtype::float64));
  CHECK(str((a + b).shape()) == "[3, 2, 4]");
}

// --- where and masked_fill -----------------------------------------------------------------------------

TEST_CASE("where broadcasts condition and both branches") {
  Generator gen(18);
  struct Shapes {
    Shape cond, a, b;
  };
  const std::vector<Shapes> cases = {{{3, 4}, {3, 4}, {3, 4}},
                                     {{3, 1}, {1, 4}, {}},
                                     {{}, {2, 3}, {2, 1}},
                                     {{2, 1, 3}, {4, 1}, {3}},
                                     {{0, 2}, {1, 2}, {2}}};
  int turn = 0;
  for (Dtype dtype : {Dtype::float32, Dtype::float64, Dtype::int64}) {
    for (const Shapes& s : cases) {
      const Layout layout = kAllLayouts[turn++ % 4];
      CAPTURE(dtype);
      CAPTURE(layout);
      CAPTURE(str(s.cond));
      const Tensor cond = random_tensor(s.cond, Dtype::uint8, gen, layout, 0, 1);
      const Tensor a = random_tensor(s.a, dtype, gen, layout);
      const Tensor b = random_tensor(s.b, dtype, gen, Layout::contiguous);
      const Tensor out = core::where(cond, a, b);
      const Shape shape = broadcast_reference(s.cond, broadcast_reference(s.a, s.b));
      CHECK(str(out.shape()) == str(shape));
      CHECK(out.dtype() == dtype);
      const auto vc = values_of(cond), va = values_of(a), vb = values_of(b);
      std::vector<double> expected;
      for (int64_t flat = 0; flat < core::numel(shape); ++flat) {
        const auto index = unravel(flat, shape);
        expected.push_back(vc[broadcast_source(index, s.cond)] != 0 ? va[broadcast_source(index, s.a)]
                                                                    : vb[broadcast_source(index, s.b)]);
      }
      check_equal(out, expected);
    }
  }
  // A condition that is all 1 or all 0 picks one side entirely.
  const Tensor a = core::from_vector<float>({1, 2}), b = core::from_vector<float>({3, 4});
  check_equal(core::where(core::ones({2}, Dtype::uint8), a, b), {1, 2});
  check_equal(core::where(core::zeros({2}, Dtype::uint8), a, b), {3, 4});
}

TEST_CASE("masked_fill with broadcast masks") {
  Generator gen(19);
  for (Dtype dtype : {Dtype::float32, Dtype::float64}) {
    for (Layout layout : kAllLayouts) {
      for (const Shape& mask_shape : std::vector<Shape>{{2, 3, 4}, {3, 1}, {4}, {}, {1, 3, 4}}) {
        CAPTURE(dtype);
        CAPTURE(layout);
        CAPTURE(str(mask_shape));
        const Tensor x = random_tensor({2, 3, 4}, dtype, gen, layout);
        const Tensor mask = random_tensor(mask_shape, Dtype::uint8, gen, Layout::contiguous, 0, 1);
        const Tensor out = core::masked_fill(x, mask, -kInf);
        CHECK(str(out.shape()) == "[2, 3, 4]");
        const auto vx = values_of(x), vm = values_of(mask);
        std::vector<double> expected;
        for (int64_t flat = 0; flat < 24; ++flat) {
          expected.push_back(vm[broadcast_source(unravel(flat, {2, 3, 4}), mask_shape)] ? -kInf : vx[flat]);
        }
        check_close(out, expected, 0, 0);
      }
    }
  }
  const Tensor x = core::zeros({2, 2}, Dtype::int64);
  check_equal(core::masked_fill(x, core::from_vector<uint8_t>({0, 1}), 7), {0, 7, 0, 7});
}

TEST_CASE("mul_in_place gives mul's values in the target's own buffer, and refuses what it cannot do") {
  for (Dtype dtype : {Dtype::float32, Dtype::float64}) {
    Generator gen(41);
    const Tensor target = core::uniform({3, 4, 5}, -2, 2, gen, dtype),
                 factor = core::uniform({4, 1}, -2, 2, gen, dtype);
    const std::vector<double> expected = values_of(core::mul(target, factor));
    const void* buffer = target.raw_data();
    const uint64_t version = target.storage()->version();
    core::mul_in_place(target, factor);
    CHECK(values_of(target) == expected);
    CHECK(target.raw_data() == buffer);
    CHECK(target.storage()->version() > version);  // a write that autograd's version check sees
  }
  const Tensor t = core::zeros({3, 4});
  check_error([&] { core::mul_in_place(t.transpose(0, 1), core::ones({3})); },
              {"[mul_in_place] the target must be contiguous"});
  check_error(
      [&] {
        core::mul_in_place(t, core::ones({2, 3, 4}));
      },
      {"[mul_in_place] the factor's shape [2, 3, 4] does not broadcast"});
  check_error([&] { core::mul_in_place(t, core::ones({4}, Dtype::float64)); }, {"[mul_in_place]", "float64"});
}

TEST_CASE("activation_backward gives the activation and the gradient times its slope, the bits of the three ops") {
  using core::UnaryOp;
  for (Dtype dtype : {Dtype::float32, Dtype::float64}) {
    for (UnaryOp activation : {UnaryOp::gelu, UnaryOp::gelu_tanh, UnaryOp::relu}) {
      CAPTURE(dtype);
      CAPTURE(core::op_name(activation));
      Generator gen(43);
      // 70000 elements: more than one parallel chunk; h a transposed view, which the op copies first
      // (the expected values from a contiguous copy: float32 maps over strided runs use scalar code)
      const Tensor h_view = core::uniform({350, 200}, -6, 6, gen, dtype).transpose(0, 1), h = h_view.contiguous();
      const Tensor grad = core::uniform({200, 350}, -2, 2, gen, dtype);
      Tensor expected_activated, slope;
      switch (activation) {
        case UnaryOp::gelu: expected_activated = core::gelu(h), slope = core::gelu_derivative(h); break;
        case UnaryOp::gelu_tanh: expected_activated = core::gelu_tanh(h), slope = core::gelu_tanh_derivative(h); break;
        default: expected_activated = core::relu(h), slope = core::gt(h, core::scalar(0, dtype)).to(dtype); break;
      }
      const std::vector<double> expected_grad = values_of(core::mul(grad, slope));
      const void* buffer = grad.raw_data();
      const uint64_t version = grad.storage()->version();
      const Tensor activated = core::activation_backward(activation, h_view, grad);
      CHECK(values_of(activated) == values_of(expected_activated));
      CHECK(values_of(grad) == expected_grad);
      CHECK(grad.raw_data() == buffer);
      CHECK(grad.storage()->version() > version);
    }
  }
  const Tensor h = core::zeros({3, 4}), grad = core::zeros({3, 4});
  check_error([&] { core::activation_backward(core::UnaryOp::exp, h, grad); },
              {"[activation_backward] the activation must be gelu, gelu_tanh or relu, got exp"});
  check_error(
      [&] {
        core::activation_backward(core::UnaryOp::gelu, h, core::zeros({4, 3}));
      },
      {"[activation_backward] grad's shape [4, 3] differs from h's shape [3, 4]"});
  check_error(
      [&] {
        core::activation_backward(core::UnaryOp::gelu, h, core::zeros({4, 3}).transpose(0, 1));
      },
      {"[activation_backward] grad must be contiguous"});
  check_error(
      [&] {
        core::activation_backward(core::UnaryOp::gelu, h, core::zeros({3, 4}, Dtype::float64));
      },
      {"[activation_backward]", "float64"});
  check_error(
      [&] {
        core::activation_backward(core::UnaryOp::gelu, core::zeros({3, 4}, Dtype::int64), grad);
      },
      {"[activation_backward]", "int64"});
  check_error([&] { core::activation_backward(core::UnaryOp::gelu, Tensor(), grad); }, {"[activation_backward]"});
}
