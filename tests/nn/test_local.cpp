// Local attention (the Image Transformer's, nn/local.h): its mask against local_sees, the fused
// op with that mask against a loop over every query and every key, against full causal attention
// when one block covers the grid, its gradients, and AxialAttention with local blocks stepped one
// position at a time.
#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "nn/nn.h"
#include "tests/support/gradients.h"
#include "autograd/internal.h"

using namespace axiom;
using axiom::test::check_close;
using axiom::test::values_of;
using test::check_grad;
using test::leaf;
using test::uniform64;

namespace {

// out[n][i][j] = sum over keys (r, c) that local_sees lets (i, j) see of softmax(q . k / sqrt(Dh)) v,
// for q, k, v [N, R, C, Dh]: loops over the whole grid, no blocks.
std::vector<double> loop_reference(const core::Tensor& q, const core::Tensor& k, const core::Tensor& v,
                                   const nn::LocalBlocks& b) {
  const int64_t rows = q.size(-3), columns = q.size(-2), depth = q.size(-1),
                grids = q.numel() / (rows * columns * depth);
  const std::vector<double> qs = values_of(q), ks = values_of(k), vs = values_of(v);
  auto at = [&](int64_t n, int64_t i, int64_t j) { return ((n * rows + i) * columns + j) * depth; };
  std::vector<double> out;
  for (int64_t n = 0; n < grids; ++n) {
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < columns; ++j) {
        std::vector<double> weights(rows * columns, 0.0);
        double largest = -std::numeric_limits<double>::infinity(), total = 0;
        for (int64_t key = 0; key < rows * columns; ++key) {
          if (!nn::local_sees(b, i, j, key / columns, key % columns)) continue;
          double dot = 0;
          for (int64_t e = 0; e < depth; ++e) dot += qs[at(n, i, j) + e] * ks[at(n, key / columns, key % columns) + e];
          weights[key] = dot / std::sqrt(static_cast<double>(depth));
          largest = std::max(largest, weights[key]);
        }
        for (int64_t key = 0; key < rows * columns; ++key) {
          weights[key] = nn::local_sees(b, i, j, key / columns, key % columns) ? std::exp(weights[key] - largest) : 0.0;
          total += weights[key];
        }
        for (int64_t e = 0; e < depth; ++e) {
          double mixed = 0;
          for (int64_t key = 0; key < rows * columns; ++key)
            mixed += weights[key] / total * vs[at(n, key / columns, key % columns) + e];
          out.push_back(mixed);
        }
      }
    }
  }
  return out;
}

// Local attention through the attention op: q, k, v [..., R, C, Dh] as one head of packed qkv
// [..., R*C, 3 Dh], one line in raster order -> [..., R, C, Dh].
Tensor local_attention(const Tensor& q, const Tensor& k, const Tensor& v, const nn::LocalBlocks& blocks) {
  const int64_t rows = q.size(-3), columns = q.size(-2);
  core::Shape line(q.shape().begin(), q.shape().end() - 3);
  line.insert(line.end(), {rows * columns, 3 * q.size(-1)});
  return attention(concat({q, k, v}, -1).reshape(line), -2, 1, nn::local_mask(blocks, rows, columns))
      .reshape(q.shape());
}

void check_against_loop(const core::Shape& shape, const nn::LocalBlocks& blocks) {
  CAPTURE(axiom::test::str(shape));
  CAPTURE(blocks.rows);
  CAPTURE(blocks.columns);
  const core::Tensor q = uniform64(shape, 1), k = uniform64(shape, 2), v = uniform64(shape, 3);
  const Tensor out = local_attention(Tensor(q), Tensor(k), Tensor(v), blocks);
  CHECK(out.shape() == shape);
  check_close(core_tensor(out), loop_reference(q, k, v, blocks), 1e-12, 1e-12);
}

}  // namespace

TEST_CASE("local_sees: the block itself and its neighbours left, right and above, never a later position") {
  const nn::LocalBlocks blocks{.rows = 2, .columns = 3};
  CHECK(nn::local_sees(blocks, 2, 4, 2, 4));   // itself
  CHECK(nn::local_sees(blocks, 2, 4, 2, 0));   // left block, same row
  CHECK(nn::local_sees(blocks, 3, 4, 2, 7));   // right block, an earlier row
  CHECK(!nn::local_sees(blocks, 2, 4, 2, 7));  // right block, later in the row
  CHECK(nn::local_sees(blocks, 2, 4, 0, 8));   // above right
  CHECK(!nn::local_sees(blocks, 2, 4, 0, 9));  // two blocks to the right
  CHECK(!nn::local_sees(blocks, 4, 4, 1, 4));  // two block rows up
  CHECK(!nn::local_sees(blocks, 2, 4, 3, 0));  // the row below
}

TEST_CASE("local_mask lets a query see exactly the keys local_sees lets it see, on grids the blocks do not divide") {
  for (const nn::LocalBlocks blocks :
       {nn::LocalBlocks{.rows = 1, .columns = 3}, nn::LocalBlocks{.rows = 2, .columns = 3},
        nn::LocalBlocks{.rows = 4, .columns = 9}}) {
    for (const auto& [rows, columns] : {std::pair<int64_t, int64_t>{1, 10}, {5, 7}, {6, 6}}) {
      CAPTURE(blocks.rows);
      CAPTURE(blocks.columns);
      CAPTURE(rows);
      CAPTURE(columns);
      const std::vector<uint8_t> sees = nn::local_mask(blocks, rows, columns).table(rows * columns);
      const nn::LocalBlocks cut{.rows = std::min(blocks.rows, rows), .columns = std::min(blocks.columns, columns)};
      int64_t wrong = 0;
      for (int64_t t = 0; t < rows * columns; ++t) {
        for (int64_t s = 0; s < rows * columns; ++s) {
          wrong += sees[static_cast<size_t>(t * rows * columns + s)] !=
                   nn::local_sees(cut, t / columns, t % columns, s / columns, s % columns);
        }
      }
      CHECK(wrong == 0);
    }
  }
}

TEST_CASE(
    "local attention equals a loop over every key, for 1-D and 2-D blocks, grids they do not divide, and batch axes") {
  check_against_loop({1, 12, 3}, {.rows = 1, .columns = 4});       // 1-D: one row, blocks of 4
  check_against_loop({2, 1, 11, 2}, {.rows = 1, .columns = 3});    // 1-D, the last block padded
  check_against_loop({5, 7, 2}, {.rows = 2, .columns = 3});        // 2-D, both axes padded
  check_against_loop({2, 3, 6, 6, 2}, {.rows = 2, .columns = 2});  // 2-D with batch and head axes
  check_against_loop({4, 4, 2}, {.rows = 1, .columns = 1});        // blocks of one position
  check_against_loop({3, 5, 2}, {.rows = 8, .columns = 8});        // one block bigger than the grid
  check_against_loop({3, 5, 2},
                     {.rows = 1 << 16, .columns = 1 << 16});  // far bigger: cut to the grid, not padded to it
}

TEST_CASE("local attention with one block over the whole grid is full causal attention in raster order") {
  const int64_t rows = 3, columns = 4, depth = 2;
  const core::Tensor qkv = uniform64({2, rows * columns, 3 * depth}, 4);      // one head: [B, L, 3 Dh]
  const Tensor full = attention(Tensor(qkv), 1, 1, AttentionMask::causal());  // [B, L, Dh]
  auto part = [&](int64_t i) {
    return Tensor(qkv.narrow(-1, i * depth, depth).contiguous().reshape({2, rows, columns, depth}));
  };
  const Tensor local = local_attention(part(0), part(1), part(2), {.rows = rows, .columns = columns});
  check_close(core_tensor(local), values_of(core_tensor(full)), 1e-12, 1e-12);
}

TEST_CASE("local attention: gradcheck with respect to q, k and v, 1-D and 2-D") {
  for (const nn::LocalBlocks blocks :
       {nn::LocalBlocks{.rows = 1, .columns = 2}, nn::LocalBlocks{.rows = 2, .columns = 2}}) {
    CAPTURE(blocks.rows);
    const core::Shape shape = blocks.rows == 1 ? core::Shape{2, 1, 5, 2} : core::Shape{2, 3, 5, 2};
    const Tensor q = leaf(uniform64(shape, 5)), k = leaf(uniform64(shape, 6)), v = leaf(uniform64(shape, 7));
    check_grad("local_attention",
               [&](const std::vector<Tensor>& in) { return local_attention(in[0], in[1], in[2], blocks); }, {q, k, v});
  }
}

TEST_CASE("local attention whose blocks span several chunks of the kernel: the fused gradients equal the composite's") {
  // Blocks of 80 on a line of 160, Dh = 64: memories of 160 keys, so the fused kernel cuts each
  // block's 80 queries into chunks of 25 rows and adds dK and dV up over them (core/cpu/attention.cpp).
  const Tensor qkv = leaf(uniform64({1, 160, 192}, 11));
  const AttentionMask mask = nn::local_mask({.rows = 1, .columns = 80}, 1, 160);
  const Tensor seed(uniform64({1, 160, 64}, 12));
  attention(qkv, 1, 1, mask).backward(seed);
  const core::Tensor fused = core_tensor(qkv.grad()).clone();
  qkv.zero_grad();
  attention(qkv, 1, 1, mask, Tensor(core::zeros({1, 1, 160, 160}, Dtype::float64)))
      .backward(seed);  // a bias: the composite path
  check_close(fused, values_of(core_tensor(qkv.grad())), 1e-11, 1e-12);
}

TEST_CASE("local_first_visible: no position before it is visible, and it bounds what a step must read") {
  for (const nn::LocalBlocks blocks :
       {nn::LocalBlocks{.rows = 1, .columns = 3}, nn::LocalBlocks{.rows = 2, .columns = 2}}) {
    const int64_t rows = blocks.rows == 1 ? 1 : 5, columns = blocks.rows == 1 ? 10 : 5;
    for (int64_t t = 0; t < rows * columns; ++t) {
      const int64_t first = nn::local_first_visible(blocks, columns, t);
      CHECK(first <= t);
      for (int64_t s = 0; s < first; ++s)
        CHECK(!nn::local_sees(blocks, t / columns, t % columns, s / columns, s % columns));
    }
  }
}

TEST_CASE("masked attention with local blocks, stepped in raster order with a cache, equals the whole forward") {
  for (const nn::LocalBlocks blocks :
       {nn::LocalBlocks{.rows = 1, .columns = 3}, nn::LocalBlocks{.rows = 2, .columns = 2}}) {
    CAPTURE(blocks.rows);
    Generator gen(8);
    nn::AxialAttention attention(8, 2, -2, gen, {.masked = true, .local = blocks});
    attention.to(Dtype::float64);
    const int64_t rows = blocks.rows == 1 ? 1 : 3, columns = blocks.rows == 1 ? 8 : 5;
    const core::Tensor x = core::randn({2, rows, columns, 8}, gen, Dtype::float64);
    NoGrad no_grad;
    const core::Tensor whole = core_tensor(attention.forward(Tensor(x))).reshape({2, rows * columns, 8});
    const core::Tensor raster = x.reshape({2, rows * columns, 8});
    nn::AttentionCache cache(rows * columns, columns);
    for (int64_t t = 0; t < rows * columns; ++t) {
      CAPTURE(t);
      const core::Tensor y_t =
          core_tensor(attention.forward_step(Tensor(raster.select(1, t).contiguous()), cache));  // [B, D]
      CHECK(core::max(core::abs(core::sub(y_t, whole.select(1, t)))).item() < 1e-10);
    }
  }
}

TEST_CASE(
    "local attention refuses unmasked or relative layers, another axis, a line without a grid, and a cache without a "
    "width") {
  Generator gen(9);
  const nn::LocalBlocks blocks{.rows = 2, .columns = 2};
  CHECK_THROWS_WITH_AS(nn::AxialAttention(8, 2, -2, gen, {.local = blocks}), doctest::Contains("masked"), Error);
  CHECK_THROWS_WITH_AS(nn::AxialAttention(8, 2, -2, gen, {.masked = true, .relative_distance = 2, .local = blocks}),
                       doctest::Contains("relative"), Error);
  CHECK_THROWS_WITH_AS(nn::AxialAttention(8, 2, 1, gen, {.masked = true, .local = blocks}),
                       doctest::Contains("axis must be -2"), Error);
  CHECK_THROWS_WITH_AS(nn::AxialAttention(8, 2, -2, gen, {.masked = true, .local = {.rows = 1, .columns = 0}}),
                       doctest::Contains("1 x 0"), Error);
  nn::AxialAttention local(8, 2, -2, gen, {.masked = true, .local = blocks});
  CHECK_THROWS_WITH_AS(local.forward(Tensor(core::randn({2, 6, 8}, gen))), doctest::Contains("grid"), Error);
  NoGrad no_grad;
  nn::AttentionCache lineless(6);
  CHECK_THROWS_WITH_AS(local.forward_step(Tensor(core::randn({2, 8}, gen)), lineless), doctest::Contains("width"),
                       Error);
  CHECK_THROWS_WITH_AS(nn::local_mask({.rows = 1, .columns = 0}, 3, 3),
                       doctest::Contains("[local_mask] blocks and the grid"), Error);
  CHECK_THROWS_WITH_AS(nn::local_mask(blocks, 0, 3), doctest::Contains("grid 0 x 3"), Error);
  CHECK_THROWS_WITH_AS(nn::local_mask({.rows = 7, .columns = 7}, 65536, 65536), doctest::Contains("it may have"),
                       Error);
}
