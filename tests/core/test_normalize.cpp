// softmax / log_softmax, layer_norm and cross_entropy against loops in double, in every layout.
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
