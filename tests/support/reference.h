// Shared helpers for the core tests: plain-loop references, random inputs in every memory
// layout, and a tolerance check that reports the worst element.
//
// The references here never call the kernel they check. Values are read one element at a time
// through core::Tensor::at (an offset computation and one load), not through the copy kernel, and every
// expected result is computed in double with ordinary loops.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <random>
#include <source_location>
#include <sstream>
#include <string>
#include <vector>

#include "core/core.h"
#include "core/launch.h"

namespace axiom::test {

using axiom::Device;
using axiom::Dtype;
using axiom::Generator;
using core::Shape;

inline std::string str(const Shape& shape) { return core::shape_str(shape); }
inline std::string str(const std::vector<int64_t>& sizes) { return core::shape_str(sizes); }

// --- indices --------------------------------------------------------------------------------------

// The row-major multi-index of element `flat` of `shape`.
inline std::vector<int64_t> unravel(int64_t flat, const Shape& shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t i = shape.size(); i-- > 0;) {
    index[i] = flat % shape[i];
    flat /= shape[i];
  }
  return index;
}

// The row-major position of `index` in `shape`.
inline int64_t ravel(const std::vector<int64_t>& index, const Shape& shape) {
  int64_t flat = 0;
  for (size_t i = 0; i < shape.size(); ++i) flat = flat * shape[i] + index[i];
  return flat;
}

// NumPy broadcasting, written out again: align at the right, sizes equal or 1.
inline Shape broadcast_reference(const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t sa = i + a.size() < rank ? 1 : a[i + a.size() - rank];
    const int64_t sb = i + b.size() < rank ? 1 : b[i + b.size() - rank];
    REQUIRE((sa == sb || sa == 1 || sb == 1));
    out[i] = sa == 1 ? sb : sa;
  }
  return out;
}

// The row-major position in an operand of `shape` that output element `out_index` reads when the
// operand is broadcast to the output: missing leading axes and size-1 axes read position 0.
inline int64_t broadcast_source(const std::vector<int64_t>& out_index, const Shape& shape) {
  const size_t lead = out_index.size() - shape.size();
  int64_t flat = 0;
  for (size_t i = 0; i < shape.size(); ++i) flat = flat * shape[i] + (shape[i] == 1 ? 0 : out_index[lead + i]);
  return flat;
}

// --- reading tensors --------------------------------------------------------------------------------

// Every element as a double, in row-major order, read one at a time with core::Tensor::at.
inline std::vector<double> values_of(const core::Tensor& x) {
  std::vector<double> values;
  values.reserve(static_cast<size_t>(x.numel()));
  for (int64_t flat = 0; flat < x.numel(); ++flat) values.push_back(x.at(unravel(flat, x.shape())));
  return values;
}

// --- matrix products --------------------------------------------------------------------------------

// a [m, k] @ b [k, n] (2-D, any strides) in double, each operand first passed through `round`.
template <typename Round>
std::vector<double> product_reference(const core::Tensor& a, const core::Tensor& b, Round round) {
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  std::vector<double> out;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double total = 0;
      for (int64_t p = 0; p < k; ++p) total += round(a.at({i, p})) * round(b.at({p, j}));
      out.push_back(total);
    }
  }
  return out;
}

inline double unchanged(double x) { return x; }

// --- inputs in every memory layout ------------------------------------------------------------------

// How the elements of a test input are laid out in memory.
enum class Layout {
  contiguous,
  permuted,  // stored with its axes reversed, viewed back: transposed strides
  sliced,    // every other element of a larger tensor, from offset 1 on each axis
  expanded,  // a smaller tensor broadcast up: stride-0 axes (repeated values)
};
inline constexpr Layout kAllLayouts[] = {Layout::contiguous, Layout::permuted, Layout::sliced, Layout::expanded};

inline std::ostream& operator<<(std::ostream& out, Layout layout) {
  switch (layout) {
    case Layout::contiguous: return out << "contiguous";
    case Layout::permuted: return out << "permuted";
    case Layout::sliced: return out << "sliced";
    case Layout::expanded: return out << "expanded";
  }
  return out << "?";
}

inline std::vector<int64_t> reversed_axes(size_t rank) {
  std::vector<int64_t> order(rank);
  for (size_t i = 0; i < rank; ++i) order[i] = static_cast<int64_t>(rank - 1 - i);
  return order;
}

// A tensor of `shape` and `dtype` with random values in [low, high), laid out as `layout` says.
// Integer dtypes, and floating ones with `whole` set (ties for comparisons and max), hold the whole
// numbers of [low, high], both ends included. The values are drawn from `gen`: a fixed seed gives
// fixed inputs.
inline core::Tensor random_tensor(const Shape& shape, Dtype dtype, Generator& gen, Layout layout = Layout::contiguous,
                                  double low = -2, double high = 2, bool whole = false) {
  auto draw = [&](const Shape& s) {
    if (is_floating(dtype) && !whole) return core::uniform(s, low, high, gen, dtype);
    const auto lo = static_cast<int64_t>(std::ceil(low)), hi = static_cast<int64_t>(std::floor(high));
    return core::randint(s, lo, hi + 1, gen, Dtype::int64).to(dtype);
  };
  const size_t rank = shape.size();
  switch (layout) {
    case Layout::contiguous: return draw(shape);
    case Layout::permuted: {
      const auto order = reversed_axes(rank);
      Shape stored(rank);
      for (size_t i = 0; i < rank; ++i) stored[i] = shape[static_cast<size_t>(order[i])];
      return draw(stored).permute(order);
    }
    case Layout::sliced: {
      if (rank == 0) return draw({3}).select(0, 1);
      Shape big;
      for (int64_t size : shape) big.push_back(2 * size + 1);
      core::Tensor t = draw(big);
      for (size_t a = 0; a < rank; ++a) t = t.slice(static_cast<int64_t>(a), 1, 2 * shape[a] + 1, 2);
      return t;
    }
    case Layout::expanded: {
      // Even axes become size-1 in the stored tensor, and the first axis is dropped entirely.
      Shape small;
      for (size_t a = 1; a < rank; ++a) small.push_back(a % 2 == 0 ? 1 : shape[a]);
      return draw(small).expand(shape);
    }
  }
  return {};
}

// A copy of x with the same shape and values whose memory is laid out as `layout` says
// (permuted or sliced; contiguous gives a contiguous clone).
inline core::Tensor non_contiguous(const core::Tensor& x, Layout layout) {
  if (layout == Layout::permuted) {
    const auto order = reversed_axes(static_cast<size_t>(x.dim()));
    return x.permute(order).contiguous().permute(order);
  }
  if (layout == Layout::sliced) {
    Shape big;
    for (int64_t size : x.shape()) big.push_back(2 * size + 1);
    core::Tensor view = core::full(big, 12345, x.dtype());
    for (int64_t a = 0; a < x.dim(); ++a) view = view.slice(a, 1, 2 * x.size(a) + 1, 2);
    core::copy_into(x, view);
    return view;
  }
  REQUIRE(layout == Layout::contiguous);
  return x.clone();
}

// --- random shapes ----------------------------------------------------------------------------------

// A shape of `rank` axes with sizes in [1, max_size], or [0, max_size] when zeros are allowed.
inline Shape random_shape(std::mt19937& rng, size_t rank, int64_t max_size = 4, bool allow_zero = false) {
  std::uniform_int_distribution<int64_t> size(allow_zero ? 0 : 1, max_size);
  Shape shape(rank);
  for (auto& s : shape) s = size(rng);
  return shape;
}

struct ShapePair {
  Shape a, b;
};
inline std::ostream& operator<<(std::ostream& out, const ShapePair& pair) {
  return out << str(pair.a) << " with " << str(pair.b);
}

// Pairs of shapes that broadcast together: hand-picked corner cases, then random ones made by
// setting some axes of a common shape to 1 and dropping some leading axes.
inline std::vector<ShapePair> broadcast_pairs(uint32_t seed = 7, int random_count = 12) {
  std::vector<ShapePair> pairs = {
      {{3, 1, 4}, {5, 1}}, {{2, 3}, {2, 3}}, {{}, {2, 3}},           {{4}, {}},     {{}, {}},
      {{2, 0, 3}, {1, 3}}, {{0}, {1}},       {{2, 1, 3}, {1, 4, 1}}, {{1, 1}, {3}}, {{3, 1}, {1, 0}},
  };
  std::mt19937 rng(seed);
  for (int i = 0; i < random_count; ++i) {
    const Shape common = random_shape(rng, 1 + rng() % 4, 4);
    auto derive = [&]() {
      Shape s = common;
      for (auto& size : s) {
        if (rng() % 3 == 0) size = 1;
      }
      s.erase(s.begin(), s.begin() + static_cast<int64_t>(rng() % (s.size() + 1)));
      return s;
    };
    pairs.push_back({derive(), derive()});
  }
  return pairs;
}

// --- comparing ----------------------------------------------------------------------------------------

struct Tolerance {
  double rtol, atol;
};
// Elementwise math on float32 is a few ulp from the double reference; float64 a few ulp too.
inline Tolerance tolerance(Dtype dtype) {
  switch (dtype) {
    case Dtype::float32: return {2e-6, 1e-6};
    case Dtype::float64: return {1e-13, 1e-14};
    default: return {0, 0};  // integers are exact
  }
}

// Checks |actual - expected| <= atol + rtol * |expected| for every element (NaN must meet NaN, an
// infinity the same infinity). On failure, reports at the caller's line how many elements differ
// and the worst one.
// A sum of k products (a matmul's, attention's) is further from the double reference as k grows.
inline Tolerance matmul_tolerance(Dtype dtype, int64_t k) {
  const double scale = static_cast<double>(std::max<int64_t>(k, 1));
  return dtype == Dtype::float32 ? Tolerance{1e-4, 1e-5 * scale} : Tolerance{1e-12, 1e-13 * scale};
}

inline void check_close(const core::Tensor& actual, const std::vector<double>& expected, double rtol, double atol,
                        const std::string& what = "", std::source_location where = std::source_location::current()) {
  const char* file = where.file_name();
  const int line = static_cast<int>(where.line());
  std::ostringstream message;
  if (!what.empty()) message << what << ": ";
  if (actual.numel() != static_cast<int64_t>(expected.size())) {
    message << "got " << actual.numel() << " elements (shape " << str(actual.shape()) << "), expected "
            << expected.size();
    ADD_FAIL_CHECK_AT(file, line, message.str());
    return;
  }
  const std::vector<double> got = values_of(actual);
  int64_t bad = 0, worst = -1;
  double worst_excess = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], e = expected[i];
    double excess = 0;  // error divided by the tolerance; above 1 fails
    if (std::isnan(e) || std::isnan(g)) {
      excess = std::isnan(e) && std::isnan(g) ? 0 : INFINITY;
    } else if (std::isinf(e) || std::isinf(g)) {
      excess = g == e ? 0 : INFINITY;
    } else {
      const double err = std::abs(g - e), tol = atol + rtol * std::abs(e);
      excess = err == 0 ? 0 : (tol == 0 ? INFINITY : err / tol);
    }
    if (excess > 1) {
      ++bad;
      if (worst < 0 || excess > worst_excess) worst = static_cast<int64_t>(i), worst_excess = excess;
    }
  }
  if (bad > 0) {
    message << bad << " of " << got.size() << " elements differ (rtol " << rtol << ", atol " << atol << "); worst at "
            << str(unravel(worst, actual.shape())) << " of " << str(actual.shape()) << ": got " << got[worst]
            << ", expected " << expected[worst];
    ADD_FAIL_CHECK_AT(file, line, message.str());
  }
}

inline void check_close(const core::Tensor& actual, const std::vector<double>& expected, Tolerance tol,
                        const std::string& what = "", std::source_location where = std::source_location::current()) {
  check_close(actual, expected, tol.rtol, tol.atol, what, where);
}

// Exact equality, for integers, indices and masks.
inline void check_equal(const core::Tensor& actual, const std::vector<double>& expected, const std::string& what = "",
                        std::source_location where = std::source_location::current()) {
  check_close(actual, expected, 0, 0, what, where);
}

// The message of the axiom::Error that `fn` throws ("" if it throws none).
template <typename Fn>
std::string error_message(Fn&& fn) {
  try {
    fn();
  } catch (const ::axiom::Error& e) {
    return e.what();
  }
  return "";
}

// Checks that fn() throws an axiom::Error whose message contains every one of `parts`; failures
// are reported at the caller's line.
template <typename Fn>
void check_error(Fn&& fn, std::initializer_list<std::string> parts,
                 std::source_location where = std::source_location::current()) {
  const std::string message = error_message(fn);
  if (message.empty()) {
    ADD_FAIL_CHECK_AT(where.file_name(), static_cast<int>(where.line()), "expected an axiom::Error, got none");
    return;
  }
  for (const std::string& part : parts) {
    if (message.find(part) == std::string::npos) {
      ADD_FAIL_CHECK_AT(where.file_name(), static_cast<int>(where.line()),
                        ("the message \"" + message + "\" lacks \"" + part + "\""));
    }
  }
}

}  // namespace axiom::test

// doctest prints enums as numbers; these overloads (found by argument-dependent lookup) show the
// names in CAPTURE and failure messages instead.
namespace axiom::core {
inline doctest::String toString(Dtype dtype) { return std::string(dtype_name(dtype)).c_str(); }
}  // namespace axiom::core
namespace axiom::test {
inline doctest::String toString(Layout layout) {
  std::ostringstream out;
  out << layout;
  return out.str().c_str();
}
}  // namespace axiom::test
