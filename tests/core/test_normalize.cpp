// softmax / log_softmax, layer_norm and cross_entropy against loops in double, in every layout;
// categorical against an inverse-CDF loop, and against the frequencies it must draw.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "tests/support/reference.h"

namespace core = axiom::core;
using namespace axiom::test;
using axiom::core::Tensor;

namespace {

const double kInf = std::numeric_limits<double>::infinity();

std::vector<double> softmax_reference(const Tensor& x, int64_t axis, bool log) {
  const Shape& shape = x.shape();
  const int64_t a = axis < 0 ? axis + x.dim() : axis;
  const std::vector<double> v = values_of(x);
  std::vector<double> out(v.size());
  for (int64_t flat = 0; flat < x.numel(); ++flat) {
    auto index = unravel(flat, shape);
    if (index[a] != 0) continue;  // visit each row once, from its first element
    std::vector<int64_t> row;
    for (int64_t i = 0; i < shape[a]; ++i) {
      index[a] = i;
      row.push_back(ravel(index, shape));
    }
    double max = -kInf, total = 0;
    for (int64_t p : row) max = std::max(max, v[p]);
    for (int64_t p : row) total += std::exp(v[p] - max);
    for (int64_t p : row) out[p] = log ? v[p] - max - std::log(total) : std::exp(v[p] - max) / total;
  }
  return out;
}

struct LayerNormExpected {
  std::vector<double> output, mean, rstd;
};

LayerNormExpected layer_norm_reference(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
  const int64_t d = x.size(-1), rows = x.numel() / d;
  const std::vector<double> v = values_of(x);
  const std::vector<double> w = weight.defined() ? values_of(weight) : std::vector<double>(d, 1.0);
  const std::vector<double> b = bias.defined() ? values_of(bias) : std::vector<double>(d, 0.0);
  LayerNormExpected e;
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < d; ++i) mean += v[r * d + i] / d;
    for (int64_t i = 0; i < d; ++i) var += (v[r * d + i] - mean) * (v[r * d + i] - mean) / d;
    const double rstd = 1 / std::sqrt(var + eps);
    for (int64_t i = 0; i < d; ++i) e.output.push_back((v[r * d + i] - mean) * rstd * w[i] + b[i]);
    e.mean.push_back(mean);
    e.rstd.push_back(rstd);
  }
  return e;
}

// a @ b with NumPy's rules (1-D operands, broadcast batch axes), as a triple loop in double.

}  // namespace

// --- softmax -------------------------------------------------------------------------------------------

TEST_CASE("softmax and log_softmax along every axis, in every layout") {
  Generator gen(31);
  for (Dtype dtype : {Dtype::float32, Dtype::float64}) {
    for (Layout layout : kAllLayouts) {
      const Tensor x = random_tensor({3, 4, 5}, dtype, gen, layout, -4, 4);
      for (int64_t axis = -3; axis < 3; ++axis) {
        for (bool log : {false, true}) {
          CAPTURE(dtype);
          CAPTURE(layout);
          CAPTURE(axis);
          CAPTURE(log);
          const Tensor y = log ? core::log_softmax(x, axis) : core::softmax(x, axis);
          CHECK(str(y.shape()) == "[3, 4, 5]");
          CHECK(y.dtype() == dtype);
          check_close(y, softmax_reference(x, axis, log),
                      dtype == Dtype::float32 ? Tolerance{1e-5, 1e-6} : Tolerance{1e-13, 1e-14});
        }
      }
    }
  }
}

TEST_CASE("softmax with -inf entries gives them probability 0") {
  for (Dtype dtype : {Dtype::float32, Dtype::float64}) {
    CAPTURE(dtype);
    Generator gen(32);
    const Tensor x = random_tensor({4, 6}, dtype, gen);
    x.set({0, 0}, -kInf);
    x.set({0, 5}, -kInf);
    x.set({2, 1}, -kInf);
    for (int i = 0; i < 5; ++i) x.set({3, i}, -kInf);  // one finite entry left: probability 1
    for (int64_t axis : {0, 1}) {
      CAPTURE(axis);
      const Tensor p = core::softmax(x, axis), lp = core::log_softmax(x, axis);
      check_close(p, softmax_reference(x, axis, false), 1e-5, 1e-6);
      check_close(lp, softmax_reference(x, axis, true), 1e-5, 1e-6);
    }
    CHECK(core::softmax(x, 1).at({0, 0}) == 0);
    CHECK(core::softmax(x, 1).at({3, 5}) == 1);
    CHECK(core::log_softmax(x, 1).at({2, 1}) == -kInf);
  }
}

TEST_CASE("softmax is stable for large inputs") {
  for (Dtype dtype : {Dtype::float32, Dtype::float64}) {
    CAPTURE(dtype);
    Generator gen(33);
    const Tensor x = core::add(random_tensor({5, 7}, dtype, gen, Layout::contiguous, -1, 1), 1000);
    const Tensor p = core::softmax(x, -1), lp = core::log_softmax(x, -1);
    const auto pv = values_of(p), lpv = values_of(lp);
    CHECK(std::all_of(pv.begin(), pv.end(), [](double v) { return std::isfinite(v); }));
    CHECK(std::all_of(lpv.begin(), lpv.end(), [](double v) { return std::isfinite(v); }));
    check_close(p, softmax_reference(x, -1, false), 1e-5, 1e-6);
    // log_softmax subtracts the max before anything else, so the large offset costs no accuracy.
    check_close(lp, softmax_reference(x, -1, true), 1e-5, 1e-6);
    check_close(core::sum(p, {1}), std::vector<double>(5, 1.0), 1e-6, 0);
    // Negative large inputs: every exp would underflow without the max subtracted.
    const Tensor y = core::sub(x, 2000);
    check_close(core::softmax(y, 0), softmax_reference(y, 0, false), 1e-5, 1e-6);
  }
}

TEST_CASE("softmax of large rows split across threads, and errors") {
  Generator gen(34);
  const Tensor x = random_tensor({300, 50}, Dtype::float64, gen, Layout::permuted);
  check_close(core::softmax(x, 0), softmax_reference(x, 0, false), 1e-12, 1e-15);
  check_close(core::log_softmax(x, 1), softmax_reference(x, 1, true), 1e-12, 1e-13);
  check_error(
      [] {
        (void)core::softmax(core::zeros({2, 3}), 2);
      },
      {"[softmax] axis 2 is out of range for a tensor of rank 2"});
  check_error([] { (void)core::log_softmax(core::zeros({2}, Dtype::int64)); },
              {"[log_softmax] dtype int64 is not supported (float32 or float64 only)"});
}

// --- categorical ---------------------------------------------------------------------------------------

namespace {

// The draws of categorical in double, one row of logits [rows, V] at a time: the first v whose
// cumulative softmax(logits / T) passes u. A row whose u lies within `margin` of a cumulative
// probability may round either way: its draw is -1 (either is accepted).
std::vector<int64_t> categorical_reference(const Tensor& logits, const Tensor& uniforms, double temperature,
                                           double margin) {
  const std::vector<double> x = values_of(logits), u = values_of(uniforms);
  const int64_t length = logits.size(-1), rows = static_cast<int64_t>(u.size());
  std::vector<int64_t> draws;
  for (int64_t r = 0; r < rows; ++r) {
    const double* row = x.data() + r * length;
    const double m = *std::max_element(row, row + length) / temperature;
    double total = 0, running = 0;
    for (int64_t v = 0; v < length; ++v) total += std::exp(row[v] / temperature - m);
    int64_t draw = -1;
    for (int64_t v = 0; v < length && draw < 0; ++v) {
      running += std::exp(row[v] / temperature - m) / total;
      if (std::abs(running - u[r]) < margin) break;
      if (running > u[r]) draw = v;
    }
    draws.push_back(draw);
  }
  return draws;
}

void check_draws(const Tensor& drawn, const std::vector<int64_t>& expected) {
  const std::vector<int64_t> values = drawn.to_vector<int64_t>();
  REQUIRE(values.size() == expected.size());
  int64_t compared = 0;
  for (size_t r = 0; r < values.size(); ++r) {
    CAPTURE(r);
    if (expected[r] < 0) continue;
    CHECK(values[r] == expected[r]);
    ++compared;
  }
  CHECK(compared * 10 >= static_cast<int64_t>(values.size()) * 9);  // nearly every row is compared
}

}  // namespace

TEST_CASE("categorical against an inverse-CDF loop, at several temperatures, in every layout") {
  Generator gen(41);
  for (const Dtype dtype : {Dtype::float32, Dtype::float64}) {
    for (const int64_t length : {1, 3, 17, 256}) {
      for (const Layout layout : {Layout::contiguous, Layout::permuted, Layout::sliced}) {
        for (const double temperature : {1.0, 0.5, 3.0}) {
          CAPTURE(dtype);
          CAPTURE(length);
          CAPTURE(layout);
          CAPTURE(temperature);
          const Tensor logits = core::mul(random_tensor({3, 40, length}, dtype, gen, layout), 3.0);
          const Tensor u = core::uniform({3, 40}, 0, 1, gen, dtype);
          const double margin = dtype == Dtype::float32 ? 1e-5 : 1e-12;
          check_draws(core::categorical(logits, u, temperature), categorical_reference(logits, u, temperature, margin));
        }
      }
    }
  }
}

// A float32 running total stops growing at 2^24 and, long before, drifts from a total added in
// another order: over a million values, draws near the end of the row would land tens of values off.
TEST_CASE("categorical over rows of a million values, against the loop in double") {
  Generator gen(43);
  const int64_t length = int64_t{1} << 20;
  const Tensor logits = core::randn({4, length}, gen);
  const Tensor u = core::from_vector<float>({0.5f, 0.9f, 0.999f, 0.99999f}, {4});
  check_draws(core::categorical(logits, u), categorical_reference(logits, u, 1.0, 1e-9));
}

TEST_CASE("categorical draws each value as often as softmax(logits / T) says") {
  const std::vector<double> logits_row = {0.0, 1.0, -1.0, 2.0, -30.0, 0.5};
  const int64_t rows = 20000, length = static_cast<int64_t>(logits_row.size());
  for (const Dtype dtype : {Dtype::float32, Dtype::float64}) {
    for (const double temperature : {1.0, 0.5}) {
      CAPTURE(dtype);
      CAPTURE(temperature);
      const Tensor logits = core::from_vector(logits_row, {1, length}).to(dtype).expand({rows, length});
      Generator gen(42);
      const std::vector<int64_t> drawn =
          core::categorical(logits, core::uniform({rows}, 0, 1, gen, dtype), temperature).to_vector<int64_t>();
      double total = 0;
      for (const double l : logits_row) total += std::exp(l / temperature);
      for (int64_t v = 0; v < length; ++v) {
        CAPTURE(v);
        const double p = std::exp(logits_row[v] / temperature) / total,
                     seen = static_cast<double>(std::count(drawn.begin(), drawn.end(), v)) / rows;
        CHECK(std::abs(seen - p) <= 5 * std::sqrt(p * (1 - p) / rows) + 1e-12);  // within 5 standard deviations
      }
    }
  }
}

TEST_CASE("categorical: uniforms at the ends and outside, weights of 0, infinities and NaN") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const Dtype dtype : {Dtype::float32, Dtype::float64}) {
    CAPTURE(dtype);
    auto draw = [&](const std::vector<double>& row, double u, double temperature = 1) {
      const Tensor logits = core::from_vector(row, {1, static_cast<int64_t>(row.size())}).to(dtype);
      return core::categorical(logits, core::from_vector(std::vector<double>{u}, {1}).to(dtype), temperature)
          .to_vector<int64_t>()[0];
    };
    // value 0 has no weight: u = 0 draws the first value of positive weight, u -> 1 the last
    CHECK(draw({-kInf, 0, 0, -kInf}, 0) == 1);
    CHECK(draw({-kInf, 0, 0, -kInf}, 0.4999) == 1);
    CHECK(draw({-kInf, 0, 0, -kInf}, 0.5001) == 2);
    CHECK(draw({-kInf, 0, 0, -kInf}, std::nextafter(1.0, 0.0)) == 2);
    CHECK(draw({-kInf, 0, 0, -kInf}, 1.5) == 2);  // outside [0, 1): clamped
    CHECK(draw({-kInf, 0, 0, -kInf}, -0.5) == 1);
    CHECK(draw({-kInf, 0, 0, -kInf}, nan) == 1);
    CHECK(draw({0, 1000, 0}, 0) == 1);  // exp(-1000) is 0: the weights are 0, 1, 0
    // logits / T overflow (float32: 3 / 1e-40 and 2 / 1e-40; float64: 3 / 1e-308 and 2 / 1e-308):
    // the largest logit, as T -> 0
    CHECK(draw({1, 3, 2}, 0.999, dtype == Dtype::float32 ? 1e-40 : 1e-308) == 1);
    CHECK(draw({3, 2, 3}, 0.999, dtype == Dtype::float32 ? 1e-40 : 1e-308) == 0);
    CHECK(draw({1, kInf, 2, kInf}, 0.1) == 1);     // an infinite logit takes every draw: the first one
    CHECK(draw({-kInf, -kInf, -kInf}, 0.7) == 0);  // no weight anywhere: argmax's answer
    CHECK(draw({0, nan, 1, nan}, 0.7) == 1);       // a NaN: argmax's answer, the first NaN
    CHECK(draw({5}, 0.3) == 0);
  }
}

TEST_CASE("categorical errors") {
  const Tensor logits = core::zeros({2, 4}), u = core::zeros({2});
  check_error([&] { (void)core::categorical(logits.to(Dtype::int64), u.to(Dtype::int64)); },
              {"[categorical] dtype int64 is not supported"});
  check_error([&] { (void)core::categorical(logits, u.to(Dtype::float64)); },
              {"[categorical] dtypes float32 and float64 differ"});
  check_error([&] { (void)core::categorical(logits, core::zeros({3})); },
              {"[categorical] needs a uniform for each row of logits [2, 4]: uniforms [2], got [3]"});
  check_error(
      [&] {
        (void)core::categorical(core::zeros({2, 0}), u);
      },
      {"[categorical] needs logits [..., V] with V >= 1, got [2, 0]"});
  check_error([&] { (void)core::categorical(core::zeros({}), core::zeros({})); },
              {"[categorical] needs logits [..., V] with V >= 1, got []"});
  check_error([&] { (void)core::categorical(logits, Tensor()); }, {"[categorical] the input tensor is undefined"});
  for (const double temperature : {0.0, -1.0, kInf, std::numeric_limits<double>::quiet_NaN()}) {
    CAPTURE(temperature);
    check_error([&] { (void)core::categorical(logits, u, temperature); },
                {"[categorical] temperature must be > 0 and finite, got"});
  }
  CHECK(core::categorical(core::zeros({0, 4}), core::zeros({0})).shape() == Shape{0});
}

// --- layer norm ----------------------------------------------------------------------------------------

TEST_CASE("layer_norm with and without weight and bias, in every layout") {
  Generator gen(35);
  for (Dtype dtype : {Dtype::float32, Dtype::float64}) {
    for (Layout layout : kAllLayouts) {
      for (const Shape& shape : std::vector<Shape>{{3, 4, 5}, {6, 8}, {7}, {2, 1, 16}}) {
        for (int affine = 0; affine < 4; ++affine) {  // bit 0: weight, bit 1: bias
          CAPTURE(dtype);
          CAPTURE(layout);
          CAPTURE(str(shape));
          CAPTURE(affine);
          const int64_t d = shape.back();
          const Tensor x = random_tensor(shape, dtype, gen, layout, -3, 5);
          const Tensor w = affine & 1 ? random_tensor({d}, dtype, gen, Layout::contiguous, 0.5, 2) : Tensor();
          // The bias as a non-contiguous view: layer_norm must make it contiguous itself.
          const Tensor b = affine & 2 ? random_tensor({d}, dtype, gen, Layout::sliced) : Tensor();
          const double eps = 1e-5;
          const auto result = core::layer_norm(x, w, b, eps);
          const LayerNormExpected e = layer_norm_reference(x, w, b, eps);
          const Shape rows(shape.begin(), shape.end() - 1);
          CHECK(str(result.output.shape()) == str(shape));
          CHECK(str(result.mean.shape()) == str(rows));
          CHECK(str(result.rstd.shape()) == str(rows));
          const Tolerance tol = dtype == Dtype::float32 ? Tolerance{1e-5, 1e-5} : Tolerance{1e-12, 1e-12};
          check_close(result.output, e.output, tol, "output");
          check_close(result.mean, e.mean, tol, "mean");
          check_close(result.rstd, e.rstd, tol, "rstd");
        }
      }
    }
  }
}

TEST_CASE("layer_norm: eps, constant rows and many rows") {
  // A constant row has variance 0: rstd is 1 / sqrt(eps) and the output 0 (then the bias).
  const Tensor x = core::full({2, 4}, 3.0, Dtype::float64);
  const auto r = core::layer_norm(x, {}, core::full({4}, 0.5, Dtype::float64), 0.25);
  check_close(r.rstd, {2, 2}, 1e-15, 0);
  check_close(r.output, std::vector<double>(8, 0.5), 1e-15, 0);
  // Enough rows for several threads.
  Generator gen(36);
  const Tensor big = random_tensor({2000, 24}, Dtype::float32, gen, Layout::permuted);
  const auto result = core::layer_norm(big);
  const auto e = layer_norm_reference(big, {}, {}, 1e-5);
  check_close(result.output, e.output, 1e-5, 1e-5);
  check_close(result.rstd, e.rstd, 1e-5, 1e-5);
}

TEST_CASE("layer_norm errors") {
  const Tensor x = core::zeros({2, 3});
  check_error([&] { (void)core::layer_norm(x, core::ones({4})); },
              {"[layer_norm] weight has shape [4]; expected [3] for input [2, 3]"});
  check_error(
      [&] {
        (void)core::layer_norm(x, {}, core::ones({1, 3}));
      },
      {"[layer_norm] bias has shape [1, 3]; expected [3] for input [2, 3]"});
  check_error([&] { (void)core::layer_norm(x, core::ones({3}, Dtype::float64)); },
              {"[layer_norm] dtypes float32 and float64 differ"});
  check_error([&] { (void)core::layer_norm(core::scalar(1)); }, {"[layer_norm] needs at least one axis, got a scalar"});
  check_error([&] { (void)core::layer_norm(x, {}, {}, -1); }, {"[layer_norm] eps must be 0 or more, got -1"});
  check_error(
      [&] {
        (void)core::layer_norm(core::zeros({2, 3}, Dtype::int64));
      },
      {"[layer_norm] dtype int64 is not supported"});
}

// The weight's and bias's gradients in one pass over x and g: the bits of the ops they replace
// (xhat = (x - mean) * rstd, then sums over the rows of g * xhat and of g), over several blocks of
// rows, rows wider than the column sums' 4,096 columns, one row, float32 and float64.
TEST_CASE("layer_norm_param_grads: the bits of the sums of the composed ops") {
  for (const Dtype dtype : {Dtype::float32, Dtype::float64}) {
    for (const Shape& shape : {Shape{3, 50, 70}, Shape{300, 1000}, Shape{20, 5000}, Shape{70}}) {
      CAPTURE(dtype);
      CAPTURE(shape);
      axiom::Generator gen(31);
      const Tensor x = core::randn(shape, gen, dtype), g = core::randn(shape, gen, dtype);
      const core::LayerNormResult forward = core::layer_norm(x);
      const core::LayerNormParamGrads grads = core::layer_norm_param_grads(x, forward.mean, forward.rstd, g);
      std::vector<int64_t> rows;
      for (int64_t axis = 0; axis + 1 < x.dim(); ++axis) rows.push_back(axis);
      const Tensor xhat = core::mul(core::sub(x, forward.mean.unsqueeze(-1)), forward.rstd.unsqueeze(-1));
      const Tensor products = core::mul(g, xhat);
      const Tensor weight = rows.empty() ? products : core::sum(products, rows);
      const Tensor bias = rows.empty() ? g : core::sum(g, rows);
      CHECK(core::sum(core::eq(grads.weight, weight).to(Dtype::float64)).item() == double(x.size(-1)));
      CHECK(core::sum(core::eq(grads.bias, bias).to(Dtype::float64)).item() == double(x.size(-1)));
    }
  }
  const Tensor x = core::zeros({2, 3});
  check_error([&] { (void)core::layer_norm_param_grads(x, core::zeros({2}), core::zeros({3}), x); },
              {"[layer_norm_param_grads] for input [2, 3] expected mean and rstd of shape [2]"});
}

// --- cross entropy -------------------------------------------------------------------------------------

TEST_CASE("cross_entropy and its backward against loops, with label smoothing, and errors") {
  Generator gen(41);
  for (const Dtype dtype : {Dtype::float64, Dtype::float32}) {
    CAPTURE(dtype);
    const Tensor x = core::mul(core::randn({5, 3}, gen, dtype), 3).transpose(0, 1);  // [3, 5], a transposed view
    const Tensor targets = core::from_vector<int64_t>({4, 0, 2}, {3});
    const Tensor g = core::randn({3}, gen, dtype);
    const std::vector<double> xs = values_of(x), gs = values_of(g);
    for (const double s : {0.0, 0.2}) {
      CAPTURE(s);
      std::vector<double> losses, lses, grads;
      for (int r = 0; r < 3; ++r) {
        double total = 0;
        for (int c = 0; c < 5; ++c) total += std::exp(xs[r * 5 + c]);
        const double lse = std::log(total);
        double loss = 0;
        for (int c = 0; c < 5; ++c) {
          const double q = (c == targets.at({r}) ? 1 - s : 0) + s / 5;
          loss -= q * (xs[r * 5 + c] - lse);
          grads.push_back((std::exp(xs[r * 5 + c] - lse) - q) * gs[r]);
        }
        losses.push_back(loss), lses.push_back(lse);
      }
      const auto ce = core::cross_entropy(x, targets, s);
      CHECK(ce.losses.shape() == Shape{3});
      check_close(ce.losses, losses, tolerance(dtype).rtol * 10, tolerance(dtype).atol * 10, "losses");
      check_close(ce.lse, lses, tolerance(dtype).rtol * 10, tolerance(dtype).atol * 10, "lse");
      check_close(core::cross_entropy_backward(x, targets, ce.lse, g, s), grads, tolerance(dtype).rtol * 10,
                  tolerance(dtype).atol * 10, "gradient");
    }
  }
  const Tensor x = core::zeros({2, 4}), t = core::from_vector<int64_t>({1, 3}, {2});
  check_error(
      [&] {
        (void)core::cross_entropy(x, core::from_vector<int64_t>({1, 4}, {2}));
      },
      {"[cross_entropy] target 4 (element 1 of the targets) is not a class in [0, 4)"});
  check_error([&] { (void)core::cross_entropy(x, t.narrow(0, 0, 1)); },
              {"[cross_entropy] logits [2, 4] need targets of shape [2]"});
  check_error([&] { (void)core::cross_entropy(x, t, 1.5); }, {"label_smoothing must be in [0, 1], got 1.5"});
  check_error([&] { (void)core::cross_entropy(x, t.to(Dtype::float32)); }, {"[cross_entropy] ", "int64"});
  check_error([&] { (void)core::cross_entropy_backward(x, t, core::zeros({3}), core::zeros({2})); },
              {"[cross_entropy_backward] lse has shape [3], the targets [2]"});
}
