// Axial attention against a plain-loop reference along every axis, its causality, and stepping it
// one position at a time with a key/value cache.
#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "nn/nn.h"
#include "tests/support/gradients.h"
#include "autograd/internal.h"

using namespace axiom;
using axiom::test::check_close;
using axiom::test::ravel;
using axiom::test::unravel;
using axiom::test::values_of;

namespace {

// Attention along `axis` of x [B, d1, ..., dn, D], with the module's own weights, written as
// loops in double: for every line along the axis and every head,
//   out_i = sum_j softmax_j((q_i . k_j + q_i . E[clip(j - i)]) / sqrt(Dh)) v_j   (j <= i when masked), then @ W_out +
//   b_out,
// the relative term E only when the module has relative positions.
std::vector<double> attention_reference(const nn::AxialAttention& attention, const core::Tensor& x, int64_t axis) {
  const core::Shape shape = x.shape();
  const int64_t d = attention.features, heads = attention.heads, dh = d / heads, positions = x.numel() / d;
  const std::vector<double> xs = values_of(x), wqkv = values_of(core_tensor(attention.qkv->weight)),
                            bqkv = values_of(core_tensor(attention.qkv->bias)),
                            wout = values_of(core_tensor(attention.out->weight)),
                            bout = values_of(core_tensor(attention.out->bias));
  const std::vector<double> table =
      attention.relative.defined() ? values_of(core_tensor(attention.relative)) : std::vector<double>{};
  const int64_t max_distance = attention.relative.defined() ? (attention.relative.size(0) - 1) / 2 : 0;
  // qkv[p][c] = x[p] . Wqkv[:, c] + b[c]
  std::vector<double> qkv(positions * 3 * d);
  for (int64_t p = 0; p < positions; ++p) {
    for (int64_t c = 0; c < 3 * d; ++c) {
      double total = bqkv[c];
      for (int64_t i = 0; i < d; ++i) total += xs[p * d + i] * wqkv[i * 3 * d + c];
      qkv[p * 3 * d + c] = total;
    }
  }
  const core::Shape grid(shape.begin(), shape.end() - 1);  // [B, d1, ..., dn]
  const int64_t length = grid[axis];
  std::vector<double> mixed(positions * d, 0.0);
  for (int64_t p = 0; p < positions; ++p) {
    const std::vector<int64_t> at = unravel(p, grid);
    for (int64_t h = 0; h < heads; ++h) {
      std::vector<double> scores(length);
      double max = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < length; ++j) {
        std::vector<int64_t> other = at;
        other[axis] = j;
        const int64_t pj = ravel(other, grid);
        double dot = 0;
        for (int64_t e = 0; e < dh; ++e) dot += qkv[p * 3 * d + h * dh + e] * qkv[pj * 3 * d + d + h * dh + e];
        double relative = 0;
        const int64_t row = max_distance + std::clamp(j - at[axis], -max_distance, max_distance);
        for (int64_t e = 0; e < dh && !table.empty(); ++e)
          relative += qkv[p * 3 * d + h * dh + e] * table[row * dh + e];
        scores[j] = (attention.masked && j > at[axis]) ? -std::numeric_limits<double>::infinity()
                                                       : (dot + relative) / std::sqrt(double(dh));
        max = std::max(max, scores[j]);
      }
      double total = 0;
      for (double& s : scores) total += (s = std::exp(s - max));
      for (int64_t j = 0; j < length; ++j) {
        std::vector<int64_t> other = at;
        other[axis] = j;
        const int64_t pj = ravel(other, grid);
        for (int64_t e = 0; e < dh; ++e)
          mixed[p * d + h * dh + e] += scores[j] / total * qkv[pj * 3 * d + 2 * d + h * dh + e];
      }
    }
  }
  std::vector<double> out(positions * d);
  for (int64_t p = 0; p < positions; ++p) {
    for (int64_t c = 0; c < d; ++c) {
      double total = bout[c];
      for (int64_t i = 0; i < d; ++i) total += mixed[p * d + i] * wout[i * d + c];
      out[p * d + c] = total;
    }
  }
  return out;
}

}  // namespace

TEST_CASE(
    "axial attention equals a loop reference along every axis of 1-D, 2-D and 3-D inputs, with and without relative "
    "positions") {
  for (const core::Shape& shape : {core::Shape{2, 5, 8}, core::Shape{2, 3, 4, 8}, core::Shape{1, 3, 2, 4, 8}}) {
    for (int64_t axis = 1; axis + 1 < static_cast<int64_t>(shape.size()); ++axis) {
      for (bool masked : {false, true}) {
        for (int64_t relative : {0, 2}) {
          CAPTURE(axiom::test::str(shape));
          CAPTURE(axis);
          CAPTURE(masked);
          CAPTURE(relative);
          Generator gen(11);
          nn::AxialAttention attention(8, 2, axis, gen, {.masked = masked, .relative_distance = relative});
          const core::Tensor x = core::randn(shape, gen);
          check_close(core_tensor(attention(Tensor(x))), attention_reference(attention, x, axis), 1e-4, 1e-5);
        }
      }
    }
  }
}

TEST_CASE("a negative axis counts spatial axes from the end") {
  Generator gen(3);
  nn::AxialAttention last(8, 2, -2, gen);
  const core::Tensor x = core::randn({2, 3, 4, 8}, gen);
  check_close(core_tensor(last(Tensor(x))), attention_reference(last, x, 2), 1e-4, 1e-5);
}

TEST_CASE("attention rejects a bad axis, heads or input shape") {
  Generator gen(1);
  CHECK_THROWS_WITH_AS(nn::AxialAttention(8, 3, 1, gen), doctest::Contains("multiple of heads"), Error);
  CHECK_THROWS_AS(nn::AxialAttention(8, 2, 0, gen), Error);
  nn::AxialAttention attention(8, 2, 2, gen);
  CHECK_THROWS_WITH_AS(attention(Tensor(core::zeros({2, 3, 8}))), doctest::Contains("[AxialAttention]"), Error);
  CHECK_THROWS_AS(attention(Tensor(core::zeros({2, 3, 4, 6}))), Error);
}

// d out[position p] / d x[position q] along the attended axis, summed over features: zero for
// every q after p (masked) and for q on another line; nonzero for q <= p on the same line.
TEST_CASE(
    "masked axial attention is causal along its axis and keeps other lines independent, with relative positions too") {
  const core::Shape shape{1, 4, 5, 8};
  for (auto [axis, relative] : {std::pair<int64_t, int64_t>{1, 0}, {2, 0}, {1, 2}, {2, 1}}) {
    CAPTURE(axis);
    CAPTURE(relative);
    Generator gen(21);
    nn::AxialAttention attention(8, 2, axis, gen, {.masked = true, .relative_distance = relative});
    attention.to(Dtype::float64);
    const core::Shape grid{1, 4, 5};
    for (int64_t p = 0; p < 20; ++p) {
      const Tensor x(core::randn(shape, gen, Dtype::float64), true);
      const Tensor y = attention(x);
      const std::vector<int64_t> at = unravel(p, grid);
      core::Tensor seed = core::zeros(shape, Dtype::float64);
      for (int64_t c = 0; c < 8; ++c) seed.set({at[0], at[1], at[2], c}, 1.0);
      y.backward(Tensor(seed));
      const core::Tensor influence = core::sum(core::abs(core_tensor(x.grad())), {-1});  // [1, 4, 5]
      for (int64_t q = 0; q < 20; ++q) {
        const std::vector<int64_t> from = unravel(q, grid);
        bool same_line = true;
        for (int64_t k = 0; k < 3; ++k) same_line = same_line && (k == axis || from[k] == at[k]);
        const bool may_see = same_line && from[axis] <= at[axis];
        const double g = influence.at(from);
        if (may_see) {
          CHECK_MESSAGE(g > 0, "position ", p, " should depend on ", q);
        } else {
          CHECK_MESSAGE(g == 0, "position ", p, " must not depend on ", q, " (gradient ", g, ")");
        }
      }
    }
  }
}

TEST_CASE("unmasked axial attention sees its whole line and nothing else") {
  Generator gen(22);
  nn::AxialAttention attention(8, 2, 1, gen);
  attention.to(Dtype::float64);
  const Tensor x(core::randn({1, 4, 3, 8}, gen, Dtype::float64), true);
  core::Tensor seed = core::zeros({1, 4, 3, 8}, Dtype::float64);
  seed.set({0, 0, 1, 0}, 1.0);  // output at row 0, column 1
  attention(x).backward(Tensor(seed));
  const core::Tensor influence = core::sum(core::abs(core_tensor(x.grad())), {-1});
  for (int64_t r = 0; r < 4; ++r) {
    for (int64_t c = 0; c < 3; ++c) {
      if (c == 1) {
        CHECK(influence.at({0, r, c}) > 0);  // the whole column 1, including later rows
      } else {
        CHECK(influence.at({0, r, c}) == 0);
      }
    }
  }
}

// --- one position at a time, with a key/value cache ----------------------------------------------

namespace {

// Steps a masked module (AxialAttention or TransformerBlock) along `axis` of x [B, d1, ..., dn, D],
// every other spatial axis folded into the batch of lines, one fresh cache for all lines; returns
// the largest |stepped output - forward(x)| over every position.
template <class Layer>
double largest_step_error(const Layer& layer, const core::Tensor& x, int64_t axis) {
  NoGrad no_grad;
  const int64_t length = x.size(axis), features = x.size(-1), lines = x.numel() / (length * features);
  const core::Tensor full = core_tensor(layer.forward(Tensor(x))).movedim(axis, 1);  // [B, L, ..., D]
  const core::Tensor along = x.movedim(axis, 1);                                     // [B, L, ..., D]
  nn::AttentionCache cache(length);
  double worst = 0;
  for (int64_t t = 0; t < length; ++t) {
    const core::Tensor x_t = along.select(1, t).contiguous().reshape({lines, features});  // [lines, D]
    const core::Tensor y_t = core_tensor(layer.forward_step(Tensor(x_t), cache));         // [lines, D]
    const core::Tensor expected = full.select(1, t).contiguous().reshape({lines, features});
    worst = std::max(worst, core::max(core::abs(core::sub(y_t, expected))).item());
  }
  CHECK(cache.length == length);
  return worst;
}

}  // namespace

TEST_CASE(
    "masked attention stepped one position at a time with a cache equals the full forward, with relative positions "
    "too") {
  for (const core::Shape& shape : {core::Shape{3, 6, 8}, core::Shape{2, 3, 5, 8}}) {
    for (int64_t axis = 1; axis + 1 < static_cast<int64_t>(shape.size()); ++axis) {
      for (int64_t relative : {0, 2}) {
        CAPTURE(axiom::test::str(shape));
        CAPTURE(axis);
        CAPTURE(relative);
        Generator gen(31);
        nn::AxialAttention attention(8, 2, axis, gen, {.masked = true, .relative_distance = relative});
        attention.to(Dtype::float64);
        CHECK(largest_step_error(attention, core::randn(shape, gen, Dtype::float64), axis) < 1e-10);
      }
    }
  }
}

TEST_CASE("a masked transformer block stepped with a cache equals the full forward along a row") {
  Generator gen(32);
  const auto block = nn::masked_transformer_block(8, /*axis=*/2, gen, {.heads = 2, .ff_multiple = 2});
  block->to(Dtype::float64);
  const core::Tensor x = core::randn({2, 3, 7, 8}, gen, Dtype::float64);  // [B, H, W, D]: 6 rows of 7
  CHECK(largest_step_error(*block, x, 2) < 1e-10);
}

TEST_CASE("forward_step refuses unmasked attention, recording a graph, a wrong input and a full cache") {
  Generator gen(33);
  nn::AxialAttention masked(8, 2, 1, gen, {.masked = true}), unmasked(8, 2, 1, gen);
  nn::AttentionCache cache(2);
  const Tensor x_t(core::randn({3, 8}, gen));
  CHECK_THROWS_WITH_AS(masked.forward_step(x_t, cache), doctest::Contains("NoGrad"), Error);
  NoGrad no_grad;
  CHECK_THROWS_WITH_AS(unmasked.forward_step(x_t, cache), doctest::Contains("masked"), Error);
  CHECK_THROWS_WITH_AS(masked.forward_step(Tensor(core::randn({3, 6}, gen)), cache),
                       doctest::Contains("[AxialAttention]"), Error);
  masked.forward_step(x_t, cache);
  CHECK_THROWS_AS(masked.forward_step(Tensor(core::randn({4, 8}, gen)), cache), Error);  // another batch of lines
  masked.forward_step(x_t, cache);
  CHECK_THROWS_WITH_AS(masked.forward_step(x_t, cache), doctest::Contains("full"), Error);
}
