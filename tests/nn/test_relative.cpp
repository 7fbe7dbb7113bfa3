// Relative position logits: both ways of computing them against a loop over (query, key, feature),
// against each other, and by gradcheck.
#include <doctest/doctest.h>

#include <algorithm>

#include "nn/relative.h"
#include "tests/support/gradients.h"
#include "autograd/internal.h"

using namespace axiom;
using axiom::test::check_close;
using axiom::test::values_of;
using test::check_grad;
using test::leaf;
using test::uniform64;

namespace {

// logit[n][i][j] = sum_d q[n][i][d] * table[M + clip(j - i, -M, M)][d], q [N, L, Dh] flattened over its batch axes.
std::vector<double> loop_reference(const core::Tensor& q, const core::Tensor& table) {
  const int64_t length = q.size(-2), depth = q.size(-1), lines = q.numel() / (length * depth);
  const int64_t max_distance = (table.size(0) - 1) / 2;
  const std::vector<double> qs = values_of(q), es = values_of(table);
  std::vector<double> logits;
  for (int64_t n = 0; n < lines; ++n) {
    for (int64_t i = 0; i < length; ++i) {
      for (int64_t j = 0; j < length; ++j) {
        const int64_t row = max_distance + std::clamp(j - i, -max_distance, max_distance);
        double dot = 0;
        for (int64_t d = 0; d < depth; ++d) dot += qs[(n * length + i) * depth + d] * es[row * depth + d];
        logits.push_back(dot);
      }
    }
  }
  return logits;
}

void check_both_ways(const core::Shape& q_shape, int64_t max_distance) {
  CAPTURE(q_shape);
  CAPTURE(max_distance);
  const core::Tensor q = uniform64(q_shape, 1), table = uniform64({2 * max_distance + 1, q_shape.back()}, 2);
  const std::vector<double> expected = loop_reference(q, table);
  const Tensor direct = nn::relative_logits_direct(Tensor(q), Tensor(table));
  const Tensor skewed = nn::relative_logits_skewed(Tensor(q), Tensor(table));
  core::Shape logits_shape(q_shape.begin(), q_shape.end() - 1);
  logits_shape.push_back(q_shape[q_shape.size() - 2]);
  CHECK(direct.shape() == logits_shape);
  CHECK(skewed.shape() == logits_shape);
  check_close(core_tensor(direct), expected, 1e-12, 1e-12);
  check_close(core_tensor(skewed), expected, 1e-12, 1e-12);
}

}  // namespace

TEST_CASE("relative logits: the direct and the skewed way equal a loop, clipped or not, for any batch axes") {
  check_both_ways({5, 3}, 2);        // one line, distances clipped at 2
  check_both_ways({2, 3, 6, 4}, 1);  // batch and heads
  check_both_ways({2, 4, 2}, 6);     // M beyond L: nothing clipped
  check_both_ways({3, 1, 2}, 0);     // M = 0: one embedding for every distance
  check_both_ways({2, 1, 3}, 2);     // L = 1: distance 0 only
}

TEST_CASE("relative logits: a step's query against the keys so far is that row of the whole") {
  const core::Tensor q = uniform64({2, 3, 5, 4}, 8), table = uniform64({5, 4}, 9);
  const Tensor whole = nn::relative_logits_direct(Tensor(q), Tensor(table));  // [2, 3, 5, 5]
  for (int64_t t = 0; t < 5; ++t) {
    const Tensor step =
        nn::relative_logits_step(Tensor(q.narrow(2, t, 1)), Tensor(table), t, t + 1);  // [2, 3, 1, t + 1]
    CHECK(step.shape() == core::Shape{2, 3, 1, t + 1});
    check_close(core_tensor(step), values_of(core_tensor(whole).narrow(2, t, 1).narrow(3, 0, t + 1)), 1e-12, 1e-12);
  }
  CHECK_THROWS_WITH_AS(nn::relative_logits_step(Tensor(q), Tensor(table), 0, 1), doctest::Contains("q_t [2, 3, 5, 4]"),
                       Error);
}

TEST_CASE("relative logits: gradcheck of both ways, with respect to q and the table") {
  const Tensor q = leaf(uniform64({2, 4, 3}, 3)), table = leaf(uniform64({5, 3}, 4));
  check_grad("relative_logits_direct",
             [](const std::vector<Tensor>& in) { return nn::relative_logits_direct(in[0], in[1]); }, {q, table});
  check_grad("relative_logits_skewed",
             [](const std::vector<Tensor>& in) { return nn::relative_logits_skewed(in[0], in[1]); }, {q, table});
}

TEST_CASE("relative logits: a table of an even number of rows, or of another depth, is an error") {
  const Tensor q(uniform64({4, 3}, 5));
  CHECK_THROWS_WITH_AS(nn::relative_logits_skewed(q, Tensor(uniform64({4, 3}, 6))), doctest::Contains("[2M + 1, Dh]"),
                       Error);
  CHECK_THROWS_WITH_AS(nn::relative_logits_direct(q, Tensor(uniform64({5, 2}, 6))), doctest::Contains("table [5, 2]"),
                       Error);
  CHECK_THROWS_WITH_AS(nn::relative_logits_direct(Tensor(uniform64({4}, 7)), Tensor(uniform64({5, 4}, 6))),
                       doctest::Contains("relative_logits_direct"), Error);
}
