// Tensor: views (reshape, permute, slice, expand, ...), copies, element access, dtype
// conversions, printing, and the factories.
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/merged_axes.h"
#include "tests/support/reference.h"

using namespace axiom::core;
using namespace axiom::test;

namespace {

// 0, 1, 2, ... in the given shape (float64, so every value is exact).
Tensor iota(const Shape& shape) {
  return arange(0, static_cast<double>(numel(shape)), 1, Dtype::float64).reshape(shape);
}

std::vector<double> iota_values(int64_t n) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<double>(i);
  return v;
}

}  // namespace

// --- reshape and view ------------------------------------------------------------------------------

TEST_CASE("merge_axes merges what every operand steps through contiguously, inline or spilled to the heap") {
  const Strides row_major = {12, 4, 1}, broadcast_row = {0, 4, 1};
  const auto merged = merge_axes<2>({2, 3, 4}, {&row_major, &broadcast_row});
  CHECK(merged.shape == LoopAxes{2, 12});
  CHECK(merged.strides[0] == LoopAxes{12, 1});
  CHECK(merged.strides[1] == LoopAxes{0, 1});
  const Strides scalar = {};
  const auto one = merge_axes<1>({}, {&scalar});  // a scalar: one axis of size 1
  CHECK(one.shape == LoopAxes{1});
  CHECK(one.strides[0] == LoopAxes{0});
  const Strides size_one_axes = {7, 5, 1};
  const auto dropped = merge_axes<1>({1, 3, 1}, {&size_one_axes});
  CHECK(dropped.shape == LoopAxes{3});
  CHECK(dropped.strides[0] == LoopAxes{5});
  // Eight axes that cannot merge (every other stride doubled): more than kInlineAxes, kept in order.
  Shape eight(8, 2);
  Strides gaps(8);
  for (int64_t a = 7, stride = 1; a >= 0; --a, stride *= 4) gaps[a] = stride;
  const auto spilled = merge_axes<1>(eight, {&gaps});
  REQUIRE(spilled.shape.size() == 8);
  CHECK(spilled.shape.size() > kInlineAxes);
  for (size_t a = 0; a < 8; ++a) {
    CHECK(spilled.shape[a] == 2);
    CHECK(spilled.strides[0][a] == gaps[a]);
  }
}

TEST_CASE("reshape of a contiguous tensor is a view") {
  const Tensor x = iota({2, 3, 4});
  const Tensor y = x.reshape({6, 4});
  CHECK(str(y.shape()) == "[6, 4]");
  CHECK(y.storage() == x.storage());
  check_equal(y, iota_values(24));
  y.set({5, 3}, -1);  // the last element, through the view
  CHECK(x.at({1, 2, 3}) == -1);
}

TEST_CASE("reshape of a transposed tensor copies, in row-major order of the view") {
  const Tensor x = iota({2, 3});
  const Tensor t = x.transpose(0, 1);  // [[0, 3], [1, 4], [2, 5]]
  const Tensor y = t.reshape({6});
  CHECK(y.storage() != x.storage());
  CHECK(y.is_contiguous());
  check_equal(y, {0, 3, 1, 4, 2, 5});
}

TEST_CASE("reshape keeps the row-major values for views of every kind") {
  const Tensor base = iota({4, 6, 5});
  const std::vector<Tensor> sources = {
      base,
      base.slice(2, 0, 5, 2),                  // [4, 6, 3], step 2 on the last axis
      base.slice(0, 1, 4, 2),                  // [2, 6, 5], step 2 on the first axis
      base.permute({1, 0, 2}),                 // [6, 4, 5]
      base.transpose(0, 2),                    // [5, 6, 4]
      base.select(1, 2).unsqueeze(1),          // [4, 1, 5]
      base.narrow(0, 1, 1).expand({3, 6, 5}),  // stride 0 on the first axis
  };
  for (const Tensor& x : sources) {
    CAPTURE(str(x.shape()));
    const std::vector<double> expected = values_of(x);
    const int64_t n = x.numel();
    for (const Shape& target :
         std::vector<Shape>{{n}, {1, n}, {n, 1}, {x.size(0), -1}, {-1, x.size(-1)}, {x.size(0), 1, n / x.size(0)}}) {
      CAPTURE(str(target));
      const Tensor y = x.reshape(target);
      CHECK(y.numel() == n);
      check_equal(y, expected);
      // When reshape made a view, view() must agree and the storage must be shared.
      if (y.storage() == x.storage()) check_equal(x.view(target), expected);
    }
  }
}

TEST_CASE("reshape makes a view whenever the strides allow it") {
  const Tensor base = iota({2, 3, 4});
  SUBCASE("every other element of the last axis: [2, 3, 2] -> [6, 2]") {
    const Tensor x = base.slice(2, 0, 4, 2);
    const Tensor y = x.view({6, 2});
    CHECK(y.storage() == base.storage());
    check_equal(y, values_of(x));
  }
  SUBCASE("size-1 axes anywhere") {
    const Tensor x = base.transpose(0, 1);  // [3, 2, 4]
    const Tensor y = x.view({3, 1, 2, 1, 4});
    CHECK(y.storage() == base.storage());
    check_equal(y, values_of(x));
  }
  SUBCASE("splitting one axis of a transposed tensor") {
    const Tensor x = iota({6, 4}).transpose(0, 1);  // [4, 6], strides [1, 4]
    const Tensor y = x.view({4, 2, 3});
    check_equal(y, values_of(x));
  }
}

TEST_CASE("view refuses to copy") {
  const Tensor t = iota({2, 3}).transpose(0, 1);
  check_error([&] { (void)t.view({6}); }, {"[view] ", "[3, 2]", "strides [1, 3]", "[6]", "use reshape()"});
}

TEST_CASE("reshape infers one -1 and rejects bad sizes") {
  const Tensor x = iota({2, 3});
  CHECK(str(x.reshape({-1}).shape()) == "[6]");
  CHECK(str(x.reshape({3, -1}).shape()) == "[3, 2]");
  CHECK(str(x.reshape({-1, 1, 3}).shape()) == "[2, 1, 3]");
  CHECK(str(zeros({0, 3}).reshape({-1, 3}).shape()) == "[0, 3]");
  check_error([&] { (void)x.reshape({-1, -1}); }, {"[reshape] only one size may be -1, got [-1, -1]"});
  check_error([&] { (void)x.reshape({4, -1}); }, {"[reshape] cannot reshape [2, 3] (6 elements) into [4, -1]"});
  check_error([&] { (void)x.reshape({7}); }, {"[reshape] cannot reshape [2, 3] (6 elements) into [7]"});
  check_error([&] { (void)x.reshape({-2, -3}); }, {"[reshape] invalid size -2"});
  check_error([&] { (void)zeros({0, 3}).reshape({0, -1}); }, {"[reshape] cannot reshape [0, 3]"});
  check_error([&] { (void)x.view({5, -1}); }, {"[view] "});
  // sizes whose product overflows int64 are refused, not wrapped around to a count that fits
  const int64_t huge = int64_t{1} << 62;
  check_error(
      [&] {
        (void)zeros({0}).reshape({huge, 4});
      },
      {"[reshape] shape [4611686018427387904, 4] has more elements than a 64-bit size can count"});
  check_error([&] { (void)zeros({0}).reshape({int64_t{1} << 32, int64_t{1} << 32, -1}); }, {"[reshape]", "64-bit"});
  check_error([&] { (void)zeros({1, 1}).expand({int64_t{1} << 32, int64_t{1} << 32}); }, {"[expand]", "64-bit"});
}

// --- permute, transpose, movedim -------------------------------------------------------------------

TEST_CASE("permute, transpose and movedim move axes without copying") {
  const Tensor x = iota({2, 3, 4});
  SUBCASE("permute") {
    const Tensor y = x.permute({2, 0, 1});
    CHECK(str(y.shape()) == "[4, 2, 3]");
    CHECK(y.storage() == x.storage());
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 3; ++j)
        for (int64_t k = 0; k < 4; ++k) CHECK(y.at({k, i, j}) == x.at({i, j, k}));
    CHECK(str(x.permute({-1, -3, -2}).shape()) == "[4, 2, 3]");
  }
  SUBCASE("transpose with negative axes") {
    const Tensor y = x.transpose(-1, -3);
    CHECK(str(y.shape()) == "[4, 3, 2]");
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 3; ++j)
        for (int64_t k = 0; k < 4; ++k) CHECK(y.at({k, j, i}) == x.at({i, j, k}));
  }
  SUBCASE("movedim") {
    const Tensor y = x.movedim(0, 2);  // [3, 4, 2]
    CHECK(str(y.shape()) == "[3, 4, 2]");
    const Tensor z = x.movedim(-1, 0);  // [4, 2, 3]
    CHECK(str(z.shape()) == "[4, 2, 3]");
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 3; ++j)
        for (int64_t k = 0; k < 4; ++k) {
          CHECK(y.at({j, k, i}) == x.at({i, j, k}));
          CHECK(z.at({k, i, j}) == x.at({i, j, k}));
        }
  }
  SUBCASE("errors") {
    check_error([&] { (void)x.permute({0, 0, 1}); }, {"[permute] order [0, 0, 1] names axis 0 twice"});
    check_error(
        [&] {
          (void)x.permute({0, 1});
        },
        {"[permute] order [0, 1] has 2 axes for a tensor of shape [2, 3, 4]"});
    check_error([&] { (void)x.transpose(0, 3); }, {"[transpose] axis 3 is out of range for a tensor of rank 3"});
    check_error([&] { (void)x.movedim(-4, 0); }, {"[movedim] axis -4 is out of range"});
  }
}

// --- slice, narrow, select -----------------------------------------------------------------------------

TEST_CASE("slice follows Python's rules") {
  const Tensor x = iota({10});
  check_equal(x.slice(0, 1, 8, 3), {1, 4, 7});
  check_equal(x.slice(0, 2, 9, 3), {2, 5, 8});
  check_equal(x.slice(0, -3, 10000), {7, 8, 9});
  check_equal(x.slice(0, -100, 2), {0, 1});
  check_equal(x.slice(0, 0, -8), {0, 1});
  check_equal(x.slice(0, 0, 10, 4), {0, 4, 8});
  CHECK(x.slice(0, 7, 3).numel() == 0);
  CHECK(x.slice(0, 12, 20).numel() == 0);
  CHECK(x.slice(0, 1, 8, 3).storage() == x.storage());
  check_error([&] { (void)x.slice(0, 0, 5, 0); }, {"[slice] step must be positive, got 0"});
  check_error([&] { (void)x.slice(0, 0, 5, -1); }, {"[slice] step must be positive, got -1"});
  check_error([&] { (void)x.slice(1, 0, 5); }, {"[slice] axis 1 is out of range for a tensor of rank 1"});
}

TEST_CASE("slice with steps on two axes of a 2-D tensor") {
  const Tensor x = iota({5, 6});
  const Tensor y = x.slice(0, 1, 5, 2).slice(1, -5, 6, 2);  // rows 1, 3; columns 1, 3, 5
  CHECK(str(y.shape()) == "[2, 3]");
  check_equal(y, {7, 9, 11, 19, 21, 23});
  y.set({1, 2}, -5);
  CHECK(x.at({3, 5}) == -5);
}

TEST_CASE("narrow and select") {
  const Tensor x = iota({3, 4});
  check_equal(x.narrow(1, 1, 2), {1, 2, 5, 6, 9, 10});
  CHECK(x.narrow(1, 4, 0).numel() == 0);
  check_error([&] { (void)x.narrow(1, 3, 2); }, {"[narrow] elements [3, 5) are out of range for axis 1 of size 4"});
  check_error([&] { (void)x.narrow(0, -1, 1); }, {"[narrow] elements [-1, 0) are out of range for axis 0 of size 3"});
  check_error([&] { (void)x.narrow(0, 0, -1); }, {"[narrow] "});

  const Tensor column = x.select(1, -1);
  CHECK(str(column.shape()) == "[3]");
  check_equal(column, {3, 7, 11});
  check_equal(x.select(0, 1), {4, 5, 6, 7});
  CHECK(x.select(0, 2).select(0, 3).dim() == 0);
  CHECK(x.select(0, 2).select(0, 3).item() == 11);
  check_error([&] { (void)x.select(0, 3); }, {"[select] index 3 is out of range for axis 0 of size 3"});
  check_error([&] { (void)x.select(1, -5); }, {"[select] index -5 is out of range for axis 1 of size 4"});
}

// --- expand, squeeze, unsqueeze ------------------------------------------------------------------------

TEST_CASE("expand repeats size-1 axes with stride 0, sharing the storage") {
  const Tensor x = iota({3, 1});
  const Tensor y = x.expand({2, 3, 4});
  CHECK(str(y.shape()) == "[2, 3, 4]");
  CHECK(y.stride(0) == 0);
  CHECK(y.stride(2) == 0);
  CHECK(y.storage() == x.storage());
  std::vector<double> expected;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) expected.push_back(j);
  check_equal(y, expected);
  x.set({1, 0}, 50);  // every copy of element 1 changes
  CHECK(y.at({0, 1, 0}) == 50);
  CHECK(y.at({1, 1, 3}) == 50);

  CHECK(str(x.expand({-1, 5}).shape()) == "[3, 5]");
  CHECK(str(x.expand({3, 0}).shape()) == "[3, 0]");
  CHECK(str(scalar(2).expand({2, 2}).shape()) == "[2, 2]");
  check_error([&] { (void)iota({3}).expand({4}); }, {"[expand] cannot expand [3] to [4] (size 3 vs 4 at axis 0)"});
  check_error([&] { (void)x.expand({3}); }, {"[expand] cannot expand [3, 1] to [3]: the target has fewer axes"});
  check_error([&] { (void)x.expand({-1, 3, 4}); }, {"[expand] cannot expand [3, 1] to [-1, 3, 4]"});
}

TEST_CASE("squeeze and unsqueeze") {
  const Tensor x = iota({1, 3, 1, 2});
  CHECK(str(x.squeeze().shape()) == "[3, 2]");
  CHECK(str(x.squeeze(2).shape()) == "[1, 3, 2]");
  CHECK(str(x.squeeze(-4).shape()) == "[3, 1, 2]");
  check_equal(x.squeeze(), iota_values(6));
  check_error([&] { (void)x.squeeze(1); }, {"[squeeze] axis 1 of shape [1, 3, 1, 2] has size 3, not 1"});

  const Tensor y = iota({3, 2});
  CHECK(str(y.unsqueeze(0).shape()) == "[1, 3, 2]");
  CHECK(str(y.unsqueeze(1).shape()) == "[3, 1, 2]");
  CHECK(str(y.unsqueeze(-1).shape()) == "[3, 2, 1]");
  CHECK(str(y.unsqueeze(2).shape()) == "[3, 2, 1]");
  check_equal(y.unsqueeze(1), iota_values(6));
  CHECK(y.unsqueeze(1).is_contiguous());
  CHECK(y.unsqueeze(1).storage() == y.storage());
  CHECK(str(scalar(1).unsqueeze(0).shape()) == "[1]");
  check_error([&] { (void)y.unsqueeze(3); }, {"[unsqueeze] axis 3 is out of range for a tensor of rank 3"});
  // A transposed tensor unsqueezed stays a faithful view.
  const Tensor t = y.transpose(0, 1).unsqueeze(1);  // [2, 1, 3]
  check_equal(t, {0, 2, 4, 1, 3, 5});
}

// --- copies ------------------------------------------------------------------------------------------

TEST_CASE("contiguous copies only when it must, clone always copies") {
  const Tensor x = iota({2, 3});
  CHECK(x.is_contiguous());
  CHECK(x.contiguous().storage() == x.storage());
  CHECK(x.unsqueeze(0).is_contiguous());
  CHECK(zeros({3, 0}).transpose(0, 1).is_contiguous());

  const Tensor t = x.transpose(0, 1);
  CHECK_FALSE(t.is_contiguous());
  const Tensor c = t.contiguous();
  CHECK(c.is_contiguous());
  CHECK(c.storage() != x.storage());
  check_equal(c, {0, 3, 1, 4, 2, 5});
  CHECK(str(c.strides()) == "[2, 1]");

  const Tensor k = x.clone();
  CHECK(k.storage() != x.storage());
  k.set({0, 0}, 100);
  CHECK(x.at({0, 0}) == 0);

  const Tensor e = x.slice(1, 0, 3, 2).clone();  // a non-contiguous source
  check_equal(e, {0, 2, 3, 5});
}

TEST_CASE("writing through a view shows in the base") {
  const Tensor x = zeros({3, 4});
  x.transpose(0, 1).set({2, 1}, 42);
  CHECK(x.at({1, 2}) == 42);
  x.slice(1, 1, 4, 2).set({2, 1}, 7);  // column 3 of row 2
  CHECK(x.at({2, 3}) == 7);
  x.select(0, 0).unsqueeze(0).set({0, 3}, -1);
  CHECK(x.at({0, 3}) == -1);
  const Tensor flat = x.reshape({12});
  flat.set({11}, 9);
  CHECK(x.at({2, 3}) == 9);
  // Four writes landed on three distinct elements.
  int64_t nonzero = 0;
  for (double v : values_of(x)) nonzero += v != 0;
  CHECK(nonzero == 3);  // (2, 3) was written twice
}

// --- elements ------------------------------------------------------------------------------------------

TEST_CASE("at, set and item") {
  const Tensor x = iota({2, 3});
  CHECK(x.at({1, 2}) == 5);
  x.set({0, 1}, 2.5);
  CHECK(x.at({0, 1}) == 2.5);
  CHECK(full({1, 1}, 3.25).item() == 3.25);
  CHECK(scalar(-7, Dtype::int64).item() == -7);
  CHECK(iota({4}).slice(0, 3, 4).item() == 3);
  check_error([&] { (void)x.item(); }, {"[item] a tensor of shape [2, 3] has 6 elements, not 1"});
  check_error([&] { (void)x.at({1}); }, {"[at] index [1] has 1 entries for a tensor of shape [2, 3]"});
  check_error([&] { (void)x.at({2, 0}); }, {"[at] index [2, 0] is out of range for shape [2, 3]"});
  check_error([&] { x.set({0, -1}, 1); }, {"[set] index [0, -1] is out of range for shape [2, 3]"});

  const Tensor ints = zeros({2}, Dtype::int64);
  ints.set({1}, 3.9);  // converted like every float -> int conversion: truncated
  CHECK(ints.at({1}) == 3);
}

TEST_CASE("to_vector converts and follows the view's row-major order") {
  const Tensor x = iota({2, 3}).transpose(0, 1);
  CHECK(x.to_vector<double>() == std::vector<double>{0, 3, 1, 4, 2, 5});
  CHECK(x.to_vector<float>() == std::vector<float>{0, 3, 1, 4, 2, 5});
  CHECK(x.to_vector<int64_t>() == std::vector<int64_t>{0, 3, 1, 4, 2, 5});
  CHECK(x.to_vector<uint8_t>() == std::vector<uint8_t>{0, 3, 1, 4, 2, 5});
  CHECK(zeros({0, 2}).to_vector<float>().empty());
  CHECK(scalar(4).to_vector<float>() == std::vector<float>{4});
}

// --- dtype conversions ------------------------------------------------------------------------------

TEST_CASE("float to integer conversion truncates, saturates, and maps NaN to 0") {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  for (Dtype from : {Dtype::float32, Dtype::float64}) {
    CAPTURE(from);
    const Tensor x = from_vector<double>({-5, -0.7, 0.5, 1.9, 254.6, 255, 300, 1e30, nan, inf, -inf}).to(from);
    CHECK(x.to(Dtype::uint8).to_vector<uint8_t>() == std::vector<uint8_t>{0, 0, 0, 1, 254, 255, 255, 255, 0, 255, 0});
    const int64_t lo = std::numeric_limits<int64_t>::lowest(), hi = std::numeric_limits<int64_t>::max();
    const Tensor y = from_vector<double>({-2.7, 2.7, -0.5, 1e30, -1e30, 9.3e18, -9.3e18, nan, inf, -inf}).to(from);
    CHECK(y.to(Dtype::int64).to_vector<int64_t>() == std::vector<int64_t>{-2, 2, 0, hi, lo, hi, lo, 0, hi, lo});
  }
  // Exactly representable large values stay exact.
  CHECK(from_vector<double>({-4611686018427387904.0}).to(Dtype::int64).to_vector<int64_t>()[0] ==
        -4611686018427387904LL);
}

TEST_CASE("conversions between every pair of dtypes keep small values") {
  const std::vector<double> values = {0, 1, 7, 100, 255};
  for (Dtype from : {Dtype::float32, Dtype::float64, Dtype::int64, Dtype::uint8}) {
    for (Dtype to : {Dtype::float32, Dtype::float64, Dtype::int64, Dtype::uint8}) {
      CAPTURE(from);
      CAPTURE(to);
      const Tensor x = from_vector<double>(values).to(from);
      const Tensor y = non_contiguous(x, Layout::sliced).to(to);
      CHECK(y.dtype() == to);
      CHECK(y.is_contiguous() == (from != to));  // the same dtype returns the view itself
      check_equal(y, values);
    }
  }
  CHECK(from_vector<float>({1.5f}).to(Dtype::float32).to_vector<float>()[0] == 1.5f);
  check_close(from_vector<double>({0.1, 1e-3}).to(Dtype::float32), {0.1, 1e-3}, 1e-7, 0);
  check_equal(from_vector<int64_t>({-3, 5}).to(Dtype::float64), {-3, 5});
}

TEST_CASE("to() with the tensor's own dtype or device returns the same tensor") {
  const Tensor x = iota({3});
  CHECK(x.to(Dtype::float64).storage() == x.storage());
  CHECK(x.to(Device::cpu()).storage() == x.storage());
  CHECK(x.to(Dtype::float32).storage() != x.storage());
}

// --- printing ------------------------------------------------------------------------------------------

TEST_CASE("to_string") {
  SUBCASE("a 2-D integer tensor") {
    const Tensor x = from_vector<int64_t>({1, 2, 3, 4, 5, 6}, {2, 3});
    CHECK(x.to_string() == "tensor([[1, 2, 3],\n        [4, 5, 6]], dtype=int64)");
  }
  SUBCASE("columns are aligned to the widest entry") {
    const Tensor x = from_vector<int64_t>({1, -20, 300, 4}, {2, 2});
    CHECK(x.to_string() == "tensor([[  1, -20],\n        [300,   4]], dtype=int64)");
  }
  SUBCASE("a float tensor") {
    const Tensor x = from_vector<float>({0.5f, -2.0f, 1.25f});
    CHECK(x.to_string() == "tensor([ 0.5,   -2, 1.25], dtype=float32)");
  }
  SUBCASE("a 3-D tensor separates blocks with a blank line") {
    const Tensor x = arange(0, 8, 1, Dtype::uint8).reshape({2, 2, 2});
    CHECK(x.to_string() == "tensor([[[0, 1],\n         [2, 3]],\n\n        [[4, 5],\n         [6, 7]]], dtype=uint8)");
  }
  SUBCASE("a 0-d tensor") {
    CHECK(scalar(3.5).to_string() == "tensor(3.5, dtype=float32)");
    CHECK(scalar(-2, Dtype::int64).to_string() == "tensor(-2, dtype=int64)");
  }
  SUBCASE("an empty tensor shows its shape") {
    CHECK(zeros({0, 3}).to_string() == "tensor([], dtype=float32, shape=[0, 3])");
  }
  SUBCASE("a large tensor is summarized") {
    const std::string text = arange(2000, Dtype::int64).to_string();
    CHECK(text == "tensor([   0,    1,    2, ..., 1997, 1998, 1999], dtype=int64)");
    const std::string grid = arange(0, 40 * 40, 1, Dtype::float64).reshape({40, 40}).to_string();
    CHECK(grid.find("...") != std::string::npos);
    CHECK(grid.find("1599") != std::string::npos);
    CHECK(grid.find("1000") == std::string::npos);
    CHECK(std::count(grid.begin(), grid.end(), '\n') == 6);  // three rows, "...", three rows
  }
  SUBCASE("a transposed view prints its own order; operator<< agrees") {
    const Tensor x = from_vector<int64_t>({1, 2, 3, 4}, {2, 2}).transpose(0, 1);
    std::ostringstream out;
    out << x;
    CHECK(out.str() == "tensor([[1, 3],\n        [2, 4]], dtype=int64)");
  }
  SUBCASE("an undefined tensor") { CHECK(Tensor().to_string() == "tensor(undefined)"); }
}

// --- factories -----------------------------------------------------------------------------------------

TEST_CASE("zeros, ones, full, scalar") {
  for (Dtype dtype : {Dtype::float32, Dtype::float64, Dtype::int64, Dtype::uint8}) {
    CAPTURE(dtype);
    const Tensor z = zeros({2, 3}, dtype);
    CHECK(z.dtype() == dtype);
    CHECK(str(z.shape()) == "[2, 3]");
    CHECK(z.is_contiguous());
    check_equal(z, std::vector<double>(6, 0));
    check_equal(ones({4}, dtype), std::vector<double>(4, 1));
    check_equal(full({2, 2}, 7, dtype), std::vector<double>(4, 7));
    const Tensor s = scalar(5, dtype);
    CHECK(s.dim() == 0);
    CHECK(s.numel() == 1);
    CHECK(s.item() == 5);
    check_equal(zeros_like(full({3}, 2, dtype)), {0, 0, 0});
    CHECK(zeros_like(full({3}, 2, dtype)).dtype() == dtype);
  }
  check_equal(full({3}, -1.5, Dtype::float64), {-1.5, -1.5, -1.5});
  check_equal(full({2}, 300, Dtype::uint8), {255, 255});  // saturated
  CHECK(zeros({0}).numel() == 0);
  CHECK(zeros({}).numel() == 1);
  check_error([] { (void)zeros({2, -1}); }, {"[empty] negative size in shape [2, -1]"});
}

TEST_CASE("arange") {
  const Tensor n = arange(5);
  CHECK(n.dtype() == Dtype::int64);
  check_equal(n, {0, 1, 2, 3, 4});
  check_equal(arange(2, 7), {2, 3, 4, 5, 6});
  CHECK(arange(2, 7).dtype() == Dtype::float32);
  check_equal(arange(0, 1, 0.25), {0, 0.25, 0.5, 0.75});
  check_close(arange(0, 1, 0.1, Dtype::float64), {0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9}, 1e-15, 1e-15);
  check_equal(arange(1, 2.5, 0.5, Dtype::float64), {1, 1.5, 2});
  check_equal(arange(1, 2.6, 0.5, Dtype::float64), {1, 1.5, 2, 2.5});
  check_equal(arange(5, 0, -2, Dtype::int64), {5, 3, 1});
  CHECK(arange(5, 0).numel() == 0);
  CHECK(arange(3, 3).numel() == 0);
  CHECK(arange(0).numel() == 0);
  CHECK(str(arange(0).shape()) == "[0]");
  check_error([] { (void)arange(0, 1, 0); }, {"[arange] ", "step nonzero"});
  check_error([] { (void)arange(0, INFINITY); }, {"[arange] "});
}

TEST_CASE("from_vector") {
  const Tensor x = from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(x.dtype() == Dtype::float32);
  CHECK(str(x.shape()) == "[2, 3]");
  CHECK(x.at({1, 0}) == 4);
  CHECK(from_vector<double>({1, 2}).dtype() == Dtype::float64);
  CHECK(from_vector<int64_t>({1, 2}).dtype() == Dtype::int64);
  CHECK(from_vector<uint8_t>({1, 2}).dtype() == Dtype::uint8);
  CHECK(str(from_vector<float>({1, 2, 3}).shape()) == "[3]");
  CHECK(str(from_vector<float>({}).shape()) == "[0]");
  CHECK(str(from_vector<float>({7}, Shape{1, 1}).shape()) == "[1, 1]");
  check_error(
      [] {
        (void)from_vector<float>({1, 2, 3, 4, 5}, {2, 3});
      },
      {"[from_vector] 5 values cannot fill shape [2, 3] (6 elements)"});
}

TEST_CASE("size, stride and dim accept negative axes") {
  const Tensor x = zeros({2, 3, 4});
  CHECK(x.dim() == 3);
  CHECK(x.size(-1) == 4);
  CHECK(x.size(0) == 2);
  CHECK(x.stride(-3) == 12);
  CHECK(x.stride(1) == 4);
  check_error([&] { (void)x.size(3); }, {"[size] axis 3 is out of range for a tensor of rank 3 (valid: -3 to 2)"});
  CHECK_FALSE(Tensor().defined());
  check_error([] { (void)Tensor().device(); }, {"[device] the tensor is undefined"});
  check_error([&] { (void)x.data<double>(); }, {"[data] asked for float64 elements of a float32 tensor"});
}
