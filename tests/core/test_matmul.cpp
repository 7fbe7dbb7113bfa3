// matmul and linear against loops in double: shapes, layouts, the batch-fold paths, empty sizes, errors.
#include <cmath>
#include <limits>
#include <vector>

#include "tests/support/reference.h"

namespace core = axiom::core;
using namespace axiom::test;
using axiom::core::Tensor;

namespace {

const double kInf = std::numeric_limits<double>::infinity();

std::vector<double> matmul_reference(const Tensor& a, const Tensor& b, Shape* out_shape) {
  Shape as = a.shape(), bs = b.shape();
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  const int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  REQUIRE(bs[bs.size() - 2] == k);
  const Shape a_batch(as.begin(), as.end() - 2), b_batch(bs.begin(), bs.end() - 2);
  const Shape batch = broadcast_reference(a_batch, b_batch);
  const std::vector<double> va = values_of(a), vb = values_of(b);
  std::vector<double> out;
  for (int64_t bi = 0; bi < core::numel(batch); ++bi) {
    const auto index = unravel(bi, batch);
    const int64_t pa = broadcast_source(index, a_batch) * m * k, pb = broadcast_source(index, b_batch) * k * n;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double total = 0;
        for (int64_t p = 0; p < k; ++p) total += va[pa + i * k + p] * vb[pb + p * n + j];
        out.push_back(total);
      }
    }
  }
  *out_shape = batch;
  if (a.dim() > 1) out_shape->push_back(m);
  if (b.dim() > 1) out_shape->push_back(n);
  return out;
}

void check_matmul(const Tensor& a, const Tensor& b, std::source_location where = std::source_location::current()) {
  CAPTURE(str(a.shape()));
  CAPTURE(str(a.strides()));
  CAPTURE(str(b.shape()));
  CAPTURE(str(b.strides()));
  Shape shape;
  const std::vector<double> expected = matmul_reference(a, b, &shape);
  const Tensor out = core::matmul(a, b);
  if (str(out.shape()) != str(shape)) {
    ADD_FAIL_CHECK_AT(where.file_name(), static_cast<int>(where.line()),
                      ("shape " + str(out.shape()) + ", expected " + str(shape)));
  }
  CHECK(out.dtype() == a.dtype());
  check_close(out, expected, matmul_tolerance(a.dtype(), a.size(-1)), "matmul", where);
}

// Self-attention along `axis` of packed qkv [..., 3D] (queries, keys, values side by side, each
// heads * Dh wide) as plain loops in double, over the keys the mask's table lets each query see: out [..., D].

}  // namespace

TEST_CASE("matmul: shapes") {
  Generator gen(37);
  for (Dtype dtype : {Dtype::float32, Dtype::float64}) {
    CAPTURE(dtype);
    auto r = [&](const Shape& shape) { return random_tensor(shape, dtype, gen); };
    SUBCASE("2-D") { check_matmul(r({3, 4}), r({4, 5})); }
    SUBCASE("batched") { check_matmul(r({2, 3, 4}), r({2, 4, 5})); }
    SUBCASE("broadcast batch axes") {
      check_matmul(r({2, 1, 3, 4}), r({5, 4, 6}));
      CHECK(str(core::matmul(r({2, 1, 3, 4}), r({5, 4, 6})).shape()) == "[2, 5, 3, 6]");
      check_matmul(r({1, 3, 4}), r({3, 4, 2}));
    }
    SUBCASE("1-D operands") {
      check_matmul(r({4}), r({4, 5}));
      check_matmul(r({3, 4}), r({4}));
      check_matmul(r({4}), r({4}));
      check_matmul(r({2, 3, 4}), r({4}));
      check_matmul(r({4}), r({2, 4, 5}));
      CHECK(core::matmul(r({4}), r({4})).dim() == 0);
    }
    SUBCASE("vectors as matrices: M = 1, N = 1, K = 1") {
      check_matmul(r({1, 4}), r({4, 5}));
      check_matmul(r({3, 4}), r({4, 1}));
      check_matmul(r({3, 1}), r({1, 5}));
      check_matmul(r({2, 1, 4}), r({2, 4, 1}));
    }
    SUBCASE("a single large product, threaded by BLAS") { check_matmul(r({96, 80}), r({80, 72})); }
  }
}

TEST_CASE("matmul: non-contiguous operands") {
  Generator gen(38);
  for (Dtype dtype : {Dtype::float32, Dtype::float64}) {
    CAPTURE(dtype);
    auto r = [&](const Shape& shape) { return random_tensor(shape, dtype, gen); };
    SUBCASE("transposed operands") {
      const Tensor at = r({2, 4, 3}).transpose(-1, -2), bt = r({2, 5, 4}).transpose(-1, -2);
      check_matmul(at, r({2, 4, 5}));
      check_matmul(r({2, 3, 4}), bt);
      check_matmul(at, bt);
      check_matmul(r({4, 1}).transpose(0, 1), r({5, 4}).transpose(0, 1));  // M = 1 transposed
    }
    SUBCASE("sliced operands with steps") {
      check_matmul(r({7, 4}).slice(0, 0, 7, 2), r({4, 5}));        // rows 2 apart
      check_matmul(r({4, 4}), r({4, 10}).slice(1, 1, 10, 2));      // columns 2 apart: copied
      check_matmul(r({3, 9}).slice(1, 0, 9, 3), r({3, 2}));        // K = 3 columns 3 apart
      check_matmul(r({5, 3, 4}).slice(0, 0, 5, 2), r({3, 4, 2}));  // every other matrix of a batch
      check_matmul(r({2, 6, 8}).slice(1, 1, 6, 2).slice(2, 0, 8, 2), r({2, 4, 3}));
    }
    SUBCASE("expanded operands: one matrix shared by the batch") {
      check_matmul(r({1, 3, 4}).expand({5, 3, 4}), r({5, 4, 2}));
      check_matmul(r({5, 3, 4}), r({4, 2}).expand({5, 4, 2}));
      check_matmul(r({3, 1}).expand({3, 4}), r({4, 2}));           // stride-0 columns
      check_matmul(r({2, 1, 4}).expand({2, 3, 4}), r({2, 4, 5}));  // stride-0 rows
    }
    SUBCASE("every pair of layouts") {
      for (Layout la : kAllLayouts) {
        for (Layout lb : kAllLayouts) {
          CAPTURE(la);
          CAPTURE(lb);
          check_matmul(random_tensor({2, 3, 4}, dtype, gen, la), random_tensor({2, 4, 5}, dtype, gen, lb));
        }
      }
    }
  }
}

TEST_CASE("matmul: the batch-fold and many-small-matrices paths") {
  Generator gen(39);
  for (Dtype dtype : {Dtype::float32, Dtype::float64}) {
    CAPTURE(dtype);
    auto r = [&](const Shape& shape) { return random_tensor(shape, dtype, gen); };
    SUBCASE("x [B, T, D] @ w [D, E] with large matrices: one tall GEMM") {
      // T * D * E = 70 * 64 * 64 is above the small-GEMM limit of 64^3, so these take the fold.
      check_matmul(r({2, 70, 64}), r({64, 64}));
      check_matmul(r({2, 70, 80}).narrow(2, 8, 64), r({64, 64}));     // rows 80 apart, K = 64
      check_matmul(r({2, 70, 64}), r({64, 64}).transpose(0, 1));      // transposed weight
      check_matmul(r({1, 70, 64}).expand({2, 70, 64}), r({64, 64}));  // an expanded batch: per matrix
      check_matmul(r({4, 70, 64}).slice(0, 0, 4, 2), r({64, 64}));    // matrices not adjacent: per matrix
      check_matmul(r({70, 2, 64}).transpose(0, 1), r({64, 64}));      // batch axis out of order
      check_matmul(r({2, 64, 70}).transpose(1, 2), r({64, 64}));      // transposed x
    }
    SUBCASE("x [B, T, D] @ w [D, E] with small matrices") {
      check_matmul(r({3, 5, 4}), r({4, 6}));
      check_matmul(r({2, 3, 5, 4}), r({4, 6}));
      check_matmul(r({3, 5, 8}).narrow(2, 2, 4), r({4, 6}));
      check_matmul(r({3, 5, 8}).slice(2, 0, 8, 2), r({4, 6}));  // columns 2 apart: copied first
      check_matmul(r({3, 1, 4}), r({4, 6}));                    // M = 1
    }
    SUBCASE("many small matrices, spread over threads") {
      check_matmul(r({64, 32, 32}), r({32, 32}));
      check_matmul(r({64, 32, 32}), r({64, 32, 32}));
      check_matmul(r({64, 8, 16}).transpose(-1, -2), r({64, 8, 12}));
    }
  }
}

TEST_CASE("matmul: empty sizes") {
  for (Dtype dtype : {Dtype::float32, Dtype::float64}) {
    CAPTURE(dtype);
    SUBCASE("K = 0 gives zeros") {
      const Tensor out = core::matmul(core::ones({3, 0}, dtype), core::ones({0, 4}, dtype));
      CHECK(str(out.shape()) == "[3, 4]");
      check_equal(out, std::vector<double>(12, 0.0));
      check_equal(core::matmul(core::ones({2, 3, 0}, dtype), core::ones({0, 2}, dtype)), std::vector<double>(12, 0.0));
      check_equal(core::matmul(core::ones({0}, dtype), core::ones({0}, dtype)), {0});
    }
    SUBCASE("M = 0, N = 0, batch 0") {
      CHECK(str(core::matmul(core::ones({0, 4}, dtype), core::ones({4, 5}, dtype)).shape()) == "[0, 5]");
      CHECK(str(core::matmul(core::ones({3, 4}, dtype), core::ones({4, 0}, dtype)).shape()) == "[3, 0]");
      CHECK(str(core::matmul(core::ones({0, 3, 4}, dtype), core::ones({4, 5}, dtype)).shape()) == "[0, 3, 5]");
      CHECK(str(core::matmul(core::ones({0, 3, 4}, dtype), core::ones({0, 4, 5}, dtype)).shape()) == "[0, 3, 5]");
      CHECK(str(core::matmul(core::ones({2, 0, 4}, dtype), core::ones({2, 4, 5}, dtype)).shape()) == "[2, 0, 5]");
    }
  }
}

// linear = matmul + bias, with the bias put in first and the product accumulated onto it: every
// path of the matmul kernel (one GEMM, the batch fold, many small matrices) must add, not overwrite.
TEST_CASE("linear: x @ w + b on every matmul path, and errors") {
  Generator gen(40);
  for (Dtype dtype : {Dtype::float32, Dtype::float64}) {
    CAPTURE(dtype);
    auto r = [&](const Shape& shape) { return random_tensor(shape, dtype, gen); };
    for (const auto& [x, w] : std::vector<std::pair<Tensor, Tensor>>{{r({5, 4}), r({4, 6})},
                                                                     {r({2, 70, 64}), r({64, 64})},
                                                                     {r({3, 5, 4}), r({4, 6})},
                                                                     {r({70, 2, 64}).transpose(0, 1), r({64, 64})},
                                                                     {r({4}), r({4, 6})}}) {
      CAPTURE(str(x.shape()));
      const Tensor b = r({w.size(1)});
      Shape shape;
      std::vector<double> expected = matmul_reference(x, w, &shape);
      const std::vector<double> bias = values_of(b);
      for (size_t i = 0; i < expected.size(); ++i) expected[i] += bias[i % bias.size()];
      const Tensor out = core::linear(x, w, b);
      CHECK(str(out.shape()) == str(shape));
      check_close(out, expected, matmul_tolerance(dtype, x.size(-1)));
    }
    check_equal(core::linear(core::ones({2, 0}, dtype), core::ones({0, 3}, dtype), core::full({3}, 7, dtype)),
                std::vector<double>(6, 7.0));  // K = 0: the bias alone
  }
  check_error(
      [] {
        (void)core::linear(core::zeros({2, 3}), core::zeros({3, 4}), core::zeros({3}));
      },
      {"[linear] needs weight [K, N] and bias [N], got [3, 4] and [3]"});
  check_error(
      [] {
        (void)core::linear(core::zeros({2, 3}), core::zeros({4, 4}), core::zeros({4}));
      },
      {"[linear] shapes [2, 3] and [4, 4] cannot be multiplied (3 != 4)"});
}

TEST_CASE("matmul errors") {
  check_error(
      [] {
        (void)core::matmul(core::zeros({2, 3}), core::zeros({4, 5}));
      },
      {"[matmul] shapes [2, 3] and [4, 5] cannot be multiplied (3 != 4)"});
  check_error([] { (void)core::matmul(core::zeros({3}), core::zeros({4})); },
              {"[matmul] shapes [3] and [4] cannot be multiplied (3 != 4)"});
  check_error(
      [] {
        (void)core::matmul(core::zeros({2, 2, 3}), core::zeros({3, 3, 4}));
      },
      {"[matmul] batch shapes [2] and [3] of [2, 2, 3] and [3, 3, 4] cannot be broadcast"});
  check_error([] { (void)core::matmul(core::scalar(1), core::zeros({2})); },
              {"[matmul] needs operands with at least one axis, got shapes [] and [2]"});
  check_error(
      [] {
        (void)core::matmul(core::zeros({2, 2}, Dtype::int64), core::zeros({2, 2}, Dtype::int64));
      },
      {"[matmul] dtype int64 is not supported"});
  check_error(
      [] {
        (void)core::matmul(core::zeros({2, 2}), core::zeros({2, 2}, Dtype::float64));
      },
      {"[matmul] dtypes float32 and float64 differ"});
}
