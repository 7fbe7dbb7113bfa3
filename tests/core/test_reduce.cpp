// Reductions against loops in double: sum, mean, var, max, min, max_with_indices and argmax over every
// subset of axes of random 1- to 4-D shapes, in every layout, keepdim or not; the leading-axes fast
// path; integer sums; empty reductions; ties; and the errors. And count_non_finite.
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tests/support/reference.h"

namespace core = axiom::core;
using namespace axiom::test;
using axiom::core::Tensor;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

enum class Op { sum, mean, var0, var1, max, min };

const char* op_name(Op op) {
  switch (op) {
    case Op::sum: return "sum";
    case Op::mean: return "mean";
    case Op::var0: return "var (correction 0)";
    case Op::var1: return "var (correction 1)";
    case Op::max: return "max";
    case Op::min: return "min";
  }
  return "?";
}

struct Expected {
  Shape shape;                 // keepdim shape or not, as asked
  std::vector<double> values;  // row-major
  std::vector<double> argmax;  // max only: position of the first maximum within the reduced axes
};

// The reduction of x over `axes` (empty: all), computed by sorting every element into the group of
// its output position and folding each group with a plain loop.
Expected reference(Op op, const Tensor& x, std::vector<int64_t> axes, bool keepdim) {
  const int64_t rank = x.dim();
  if (axes.empty()) {
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  }
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  for (int64_t a : axes) reduced[static_cast<size_t>(a < 0 ? a + rank : a)] = true;
  Shape kept = x.shape(), dropped;
  for (int64_t a = 0; a < rank; ++a) {
    if (reduced[a])
      kept[a] = 1;
    else
      dropped.push_back(x.size(a));
  }
  std::vector<std::vector<double>> groups(static_cast<size_t>(core::numel(kept)));
  const std::vector<double> values = values_of(x);
  for (int64_t flat = 0; flat < x.numel(); ++flat) {
    auto index = unravel(flat, x.shape());
    for (int64_t a = 0; a < rank; ++a) {
      if (reduced[a]) index[a] = 0;
    }
    groups[ravel(index, kept)].push_back(values[flat]);
  }
  Expected e{keepdim ? kept : dropped, {}, {}};
  for (const auto& g : groups) {
    const double n = static_cast<double>(g.size());
    double total = 0;
    for (double v : g) total += v;
    switch (op) {
      case Op::sum: e.values.push_back(total); break;
      case Op::mean: e.values.push_back(total / n); break;
      case Op::var0:
      case Op::var1: {
        double squares = 0;
        for (double v : g) squares += (v - total / n) * (v - total / n);
        e.values.push_back(squares / (n - (op == Op::var1 ? 1 : 0)));
        break;
      }
      case Op::max:
      case Op::min: {
        size_t best = 0;
        for (size_t i = 1; i < g.size(); ++i) {
          if (std::isnan(g[best])) break;
          const bool better = op == Op::max ? g[i] > g[best] : g[i] < g[best];
          if (better || std::isnan(g[i])) best = i;
        }
        e.values.push_back(g[best]);
        e.argmax.push_back(static_cast<double>(best));
        break;
      }
    }
  }
  return e;
}

Tensor run(Op op, const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
  switch (op) {
    case Op::sum: return core::sum(x, axes, keepdim);
    case Op::mean: return core::mean(x, axes, keepdim);
    case Op::var0: return core::var(x, axes, keepdim, 0);
    case Op::var1: return core::var(x, axes, keepdim, 1);
    case Op::max: return core::max(x, axes, keepdim);
    case Op::min: return core::min(x, axes, keepdim);
  }
  return {};
}

// Every subset of the axes of a rank-`rank` tensor, as axis lists; odd subsets use negative axes.
// The empty subset is left out: it means "all axes", which the full subset already covers, and is
// tested once on its own.
std::vector<std::vector<int64_t>> axis_subsets(int64_t rank) {
  std::vector<std::vector<int64_t>> subsets;
  for (int mask = 1; mask < (1 << rank); ++mask) {
    std::vector<int64_t> axes;
    for (int64_t a = 0; a < rank; ++a) {
      if (mask & (1 << a)) axes.push_back(mask % 2 ? a - rank : a);
    }
    subsets.push_back(axes);
  }
  return subsets;
}

void check_reduction(Op op, const Tensor& x, const std::vector<int64_t>& axes, bool keepdim, Tolerance tol,
                     std::source_location where = std::source_location::current()) {
  CAPTURE(op_name(op));
  CAPTURE(str(axes));
  CAPTURE(keepdim);
  const Expected e = reference(op, x, axes, keepdim);
  const Tensor out = run(op, x, axes, keepdim);
  CHECK(str(out.shape()) == str(e.shape));
  CHECK(out.dtype() == x.dtype());
  check_close(out, e.values, tol, op_name(op), where);
}

}  // namespace

TEST_CASE("sum, mean, var, max and min over every subset of axes") {
  Generator gen(21);
  std::mt19937 rng(21);
  int turn = 0;
  for (Dtype dtype : {Dtype::float32, Dtype::float64}) {
    for (int64_t rank = 1; rank <= 4; ++rank) {
      for (int repeat = 0; repeat < 2; ++repeat) {
        const Shape shape = random_shape(rng, static_cast<size_t>(rank), 4);
        const Layout layout = kAllLayouts[turn++ % 4];
        CAPTURE(dtype);
        CAPTURE(str(shape));
        CAPTURE(layout);
        const Tensor x = random_tensor(shape, dtype, gen, layout);
        for (const auto& axes : axis_subsets(rank)) {
          for (bool keepdim : {false, true}) {
            for (Op op : {Op::sum, Op::mean, Op::var0, Op::var1, Op::max, Op::min}) {
              check_reduction(op, x, axes, keepdim, tolerance(dtype));
            }
          }
        }
      }
    }
  }
}

TEST_CASE("an empty axis list reduces every axis") {
  Generator gen(22);
  const Tensor x = random_tensor({2, 3, 4}, Dtype::float64, gen, Layout::permuted);
  for (Op op : {Op::sum, Op::mean, Op::var0, Op::var1, Op::max, Op::min}) {
    for (bool keepdim : {false, true}) check_reduction(op, x, {}, keepdim, tolerance(Dtype::float64));
  }
  CHECK(core::sum(x).dim() == 0);
  CHECK(str(core::sum(x, {}, true).shape()) == "[1, 1, 1]");
  // A 0-d input reduces to itself.
  CHECK(core::sum(core::scalar(2.5)).item() == 2.5);
  CHECK(core::max(core::scalar(-1.5)).item() == -1.5);
  CHECK(core::sum(core::scalar(2.5), {}, true).dim() == 0);
}

TEST_CASE("max_with_indices and argmax along every axis, ties included") {
  Generator gen(23);
  std::mt19937 rng(23);
  int turn = 0;
  for (Dtype dtype : {Dtype::float32, Dtype::float64, Dtype::int64, Dtype::uint8}) {
    for (int64_t rank = 1; rank <= 4; ++rank) {
      const Shape shape = random_shape(rng, static_cast<size_t>(rank), 5);
      const Layout layout = kAllLayouts[turn++ % 4];
      // Values from {0, 1, 2, 3}: many ties, which must resolve to the first position.
      const Tensor x = random_tensor(shape, dtype, gen, layout, 0, 3, true);
      for (int64_t axis = -rank; axis < rank; ++axis) {
        for (bool keepdim : {false, true}) {
          CAPTURE(dtype);
          CAPTURE(str(shape));
          CAPTURE(layout);
          CAPTURE(axis);
          CAPTURE(keepdim);
          const Expected e = reference(Op::max, x, {axis}, keepdim);
          const auto [values, indices] = core::max_with_indices(x, axis, keepdim);
          CHECK(str(values.shape()) == str(e.shape));
          CHECK(str(indices.shape()) == str(e.shape));
          CHECK(values.dtype() == dtype);
          CHECK(indices.dtype() == Dtype::int64);
          check_equal(values, e.values);
          check_equal(indices, e.argmax);
          check_equal(core::argmax(x, axis, keepdim), e.argmax);
        }
      }
    }
  }
}

TEST_CASE("max and min: the first of equal extremes, and NaN wins") {
  const Tensor x = core::from_vector<double>({1, 3, 3, 2,     //
                                              kNaN, 5, 1, 0,  //
                                              4, 4, 4, 4,     //
                                              -1, 2, kNaN, 9},
                                             {4, 4});
  const auto [values, indices] = core::max_with_indices(x, 1);
  check_close(values, {3, kNaN, 4, kNaN}, 0, 0);
  check_equal(indices, {1, 0, 0, 2});
  check_close(core::max(x, {0}), {kNaN, 5, kNaN, 9}, 0, 0);
  check_equal(core::argmax(x, 0), {1, 1, 3, 3});
  check_close(core::min(x, {1}), {1, kNaN, 4, kNaN}, 0, 0);
  check_close(core::min(x, {0}), {kNaN, 2, kNaN, 0}, 0, 0);
}

TEST_CASE("min of integers, and of an empty axis") {
  const Tensor pixels = core::from_vector<int64_t>({7, -3, 255, 0, 12, 300}, {2, 3});
  CHECK(core::min(pixels).item() == -3);
  CHECK(core::max(pixels).item() == 300);
  check_equal(core::min(pixels, {0}), {0, -3, 255});
  check_error(
      [] {
        (void)core::min(core::zeros({2, 0}));
      },
      {"[min] cannot take the min over axis 1 of size 0 (shape [2, 0])"});
}

TEST_CASE("the leading-axes fast path: contiguous input, axes {0} and {0, 1}") {
  Generator gen(24);
  // 600 columns: three column blocks of the fast path, the last one partial.
  for (Dtype dtype : {Dtype::float32, Dtype::float64, Dtype::int64}) {
    CAPTURE(dtype);
    const Tensor x = random_tensor({3, 4, 600}, dtype, gen, Layout::contiguous, -5, 5);
    REQUIRE(x.is_contiguous());
    for (bool keepdim : {false, true}) {
      check_reduction(Op::sum, x, {0}, keepdim, tolerance(dtype));
      check_reduction(Op::sum, x, {0, 1}, keepdim, tolerance(dtype));
      if (dtype != Dtype::int64) {
        check_reduction(Op::mean, x, {0}, keepdim, tolerance(dtype));
        check_reduction(Op::mean, x, {1, 0}, keepdim, tolerance(dtype));
      }
    }
  }
  // Enough columns that the fast path runs on several threads.
  const Tensor wide = random_tensor({2, 40000}, Dtype::float32, gen);
  check_reduction(Op::sum, wide, {0}, false, tolerance(Dtype::float32));
  check_reduction(Op::mean, wide, {0}, true, tolerance(Dtype::float32));
}

TEST_CASE("the leading-axes fast path over many rows: blocks of rows on every thread, the same bits on one") {
  Generator gen(27);
  // 5000 rows of 130 columns: tasks of whole rows, 2016 of them (256K elements): two whole blocks and a partial one
  const int threads_before = core::num_threads();
  for (Dtype dtype : {Dtype::float32, Dtype::float64, Dtype::int64}) {
    CAPTURE(dtype);
    const Tensor x = random_tensor({10, 500, 130}, dtype, gen, Layout::contiguous, -5, 5);
    // float64: 5000 terms of up to 5 carry up to about 5000 * 5 * 2^-53 = 3e-12 of rounding in any order
    const Tolerance sums = dtype == Dtype::float64 ? Tolerance{1e-13, 1e-11} : tolerance(dtype);
    check_reduction(Op::sum, x, {0, 1}, false, sums);
    if (dtype != Dtype::int64) check_reduction(Op::mean, x, {0, 1}, true, tolerance(dtype));
    core::set_num_threads(1);
    const std::vector<double> one_thread = values_of(core::sum(x, {0, 1}));
    core::set_num_threads(2);
    CHECK(values_of(core::sum(x, {0, 1})) == one_thread);
  }
  core::set_num_threads(threads_before);
}

TEST_CASE("large reductions split across threads") {
  Generator gen(25);
  for (Layout layout : {Layout::contiguous, Layout::permuted}) {
    CAPTURE(layout);
    const Tensor x = random_tensor({200, 400}, Dtype::float64, gen, layout, -3, 3, true);
    check_reduction(Op::sum, x, {1}, false, tolerance(Dtype::float64));
    check_reduction(Op::var1, x, {-1}, true, tolerance(Dtype::float64));
    const Expected e = reference(Op::max, x, {1}, false);
    check_equal(core::argmax(x, 1), e.argmax);
  }
}

TEST_CASE("integer sums are int64 and do not wrap") {
  Generator gen(26);
  CHECK(core::sum(core::full({300}, 200, Dtype::uint8)).item() == 60000);
  CHECK(core::sum(core::full({300}, 200, Dtype::uint8)).dtype() == Dtype::int64);
  CHECK(core::sum(core::full({3, 100}, 255, Dtype::uint8), {1}).to_vector<int64_t>() ==
        std::vector<int64_t>{25500, 25500, 25500});
  for (Layout layout : kAllLayouts) {
    CAPTURE(layout);
    const Tensor u = random_tensor({3, 4, 5}, Dtype::uint8, gen, layout, 0, 255);
    for (const auto& axes : axis_subsets(3)) {
      CAPTURE(str(axes));
      const Tensor s = core::sum(u, axes);
      CHECK(s.dtype() == Dtype::int64);
      check_equal(s, reference(Op::sum, u, axes, false).values);
    }
    const Tensor i = random_tensor({3, 4, 5}, Dtype::int64, gen, layout, -1000, 1000);
    for (const auto& axes : axis_subsets(3)) {
      CAPTURE(str(axes));
      check_equal(core::sum(i, axes, true), reference(Op::sum, i, axes, true).values);
    }
  }
  CHECK(core::max(core::from_vector<uint8_t>({3, 250, 7})).dtype() == Dtype::uint8);
  CHECK(core::max(core::from_vector<uint8_t>({3, 250, 7})).item() == 250);
}

TEST_CASE("reductions over size-0 axes") {
  for (Dtype dtype : {Dtype::float32, Dtype::float64, Dtype::int64}) {
    CAPTURE(dtype);
    SUBCASE("a size-0 leading axis of a contiguous tensor") {
      const Tensor x = core::zeros({0, 3}, dtype);
      const Tensor s = core::sum(x, {0});
      CHECK(str(s.shape()) == "[3]");
      check_equal(s, {0, 0, 0});
      check_equal(core::sum(x, {0}, true), {0, 0, 0});
      check_equal(core::sum(core::zeros({0, 2, 3}, dtype), {0, 1}), {0, 0, 0});
    }
    SUBCASE("a size-0 last axis") { check_equal(core::sum(core::zeros({3, 0}, dtype), {1}), {0, 0, 0}); }
    SUBCASE("a transposed size-0 axis") {
      check_equal(core::sum(core::zeros({3, 0}, dtype).transpose(0, 1), {0}), {0, 0, 0});
    }
    SUBCASE("everything of an empty tensor") {
      CHECK(core::sum(core::zeros({0}, dtype)).item() == 0);
      CHECK(core::sum(core::zeros({2, 0, 3}, dtype)).item() == 0);
    }
    SUBCASE("keeping a size-0 axis gives an empty result") {
      const Tensor s = core::sum(core::zeros({0, 3}, dtype), {1});
      CHECK(str(s.shape()) == "[0]");
    }
  }
  // The mean of nothing is 0 / 0.
  check_close(core::mean(core::zeros({0, 2}), {0}), {kNaN, kNaN}, 0, 0);
  check_close(core::mean(core::zeros({2, 0}), {1}), {kNaN, kNaN}, 0, 0);
  check_equal(core::sum(core::zeros({0, 3}, Dtype::uint8), {0}), {0, 0, 0});
}

TEST_CASE("var with a correction as large as the count divides by zero, never goes negative") {
  for (Dtype dtype : {Dtype::float32, Dtype::float64}) {
    CAPTURE(dtype);
    const Tensor x = core::from_vector<double>({1, 2, 3, 6, 6, 6}, {2, 3}).to(dtype);
    check_close(core::var(x, {1}, false, 2), {2, 0}, tolerance(dtype));  // 2 / (3 - 2)
    check_close(core::var(x, {1}, false, 3), {kInf, kNaN}, 0, 0);        // 2 / 0 and 0 / 0
    check_close(core::var(x, {1}, false, 5), {kInf, kNaN}, 0, 0);        // not 2 / -2
    check_close(core::var(core::scalar(4, dtype)), {kNaN}, 0, 0);        // one element, correction 1
    check_close(core::var(core::scalar(4, dtype), {}, false, 0), {0}, 0, 0);
  }
}

TEST_CASE("reduction errors") {
  const Tensor x = core::zeros({2, 3});
  check_error([&] { (void)core::sum(x, {2}); },
              {"[sum] axis 2 is out of range for a tensor of rank 2 (valid: -2 to 1)"});
  check_error([&] { (void)core::mean(x, {-3}); }, {"[mean] axis -3 is out of range for a tensor of rank 2"});
  check_error([&] { (void)core::sum(x, {1, -1}); }, {"[sum] axes [1, -1] name the same axis twice"});
  check_error([&] { (void)core::var(x, {0, 0}); }, {"[var] axes [0, 0] name the same axis twice"});
  check_error(
      [&] {
        (void)core::max(core::zeros({2, 0}), {1});
      },
      {"[max] cannot take the max over axis 1 of size 0 (shape [2, 0])"});
  check_error([&] { (void)core::max(core::zeros({0})); }, {"[max] cannot take the max over axis 0 of size 0"});
  check_error([&] { (void)core::argmax(core::zeros({3, 0}), 1); }, {"[max] cannot take the max over axis 1"});
  check_error([&] { (void)core::mean(core::zeros({3}, Dtype::int64)); },
              {"[mean] dtype int64 is not supported (float32 or float64 only)"});
  check_error([&] { (void)core::var(core::zeros({3}, Dtype::uint8)); }, {"[var] dtype uint8 is not supported"});
  check_error([&] { (void)core::var(x, {0}, false, -1); }, {"[var] correction must be 0 or more, got -1"});
  check_error([&] { (void)core::argmax(x, 2); }, {"[max] axis 2 is out of range for a tensor of rank 2"});
  check_error([&] { (void)core::sum(Tensor()); }, {"[sum] the input tensor is undefined"});
}

TEST_CASE("count_non_finite counts NaN and infinities over many tensors and refuses what it cannot count") {
  const Tensor a = core::from_vector<double>({1.0, NAN, INFINITY, -2.0});
  const Tensor b = core::from_vector<float>({-INFINITY, 0.0f});
  CHECK(core::count_non_finite({a, b, a.narrow(0, 0, 1)}).item() == 3);
  CHECK(core::count_non_finite({a.narrow(0, 0, 1)}).item() == 0);
  check_error([&] { core::count_non_finite({}); }, {"[count_non_finite] needs at least one tensor"});
  check_error([&] { core::count_non_finite({a, core::from_vector<int64_t>({1})}); }, {"[count_non_finite] ", "int64"});
}

TEST_CASE("count_non_finite counts NaN and infinities, and nothing finite, in chunks on the threads") {
  for (const Dtype dtype : {Dtype::float32, Dtype::float64}) {
    CAPTURE(dtype);
    const double big = dtype == Dtype::float32 ? std::numeric_limits<float>::max() : std::numeric_limits<double>::max();
    const double tiny =
        dtype == Dtype::float32 ? std::numeric_limits<float>::denorm_min() : std::numeric_limits<double>::denorm_min();
    // 1M elements: many chunks; the non-finite ones scattered, the largest and smallest finite
    // values (and -0) beside them
    const Tensor x = core::zeros({1 << 20}, dtype);
    const std::vector<std::pair<int64_t, double>> values = {
        {0, NAN},      {1, -NAN},          {7, INFINITY},        {131071, -INFINITY},
        {131072, NAN}, {500000, INFINITY}, {(1 << 20) - 1, NAN}, {2, big},
        {3, -big},     {4, tiny},          {5, -tiny},           {6, -0.0}};
    for (const auto& [at, value] : values) x.set({at}, value);
    CHECK(core::count_non_finite({x}).item() == 7);
    CHECK(core::count_non_finite({x, x.narrow(0, 0, 8), core::zeros({0}, dtype)}).item() == 7 + 3);
    CHECK(core::count_non_finite({x.narrow(0, 2, 5)}).item() == 0);
  }
}
