// Indexing ops against loops: index_select / index_add, embedding, gather / scatter_add on every
// axis of a 3-D tensor, in every layout; and the errors for bad indices.
#include <vector>

#include "tests/support/reference.h"

namespace core = axiom::core;
using namespace axiom::test;
using axiom::core::Tensor;

namespace {

const Shape kShape = {3, 4, 5};

// Random int64 indices in [0, limit) of the given shape and layout (duplicates likely).
Tensor random_index(const Shape& shape, int64_t limit, Generator& gen, Layout layout = Layout::contiguous) {
  return random_tensor(shape, Dtype::int64, gen, layout, 0, static_cast<double>(limit - 1), true);
}

Shape with_size(Shape shape, int64_t axis, int64_t size) {
  shape[static_cast<size_t>(axis)] = size;
  return shape;
}

}  // namespace

TEST_CASE("index_select along every axis") {
  Generator gen(41);
  int turn = 0;
  for (Dtype dtype : {Dtype::float32, Dtype::float64, Dtype::int64, Dtype::uint8}) {
    for (int64_t axis = 0; axis < 3; ++axis) {
      for (int64_t count : {6, 1, 0}) {
        const Layout layout = kAllLayouts[turn++ % 4];
        CAPTURE(dtype);
        CAPTURE(axis);
        CAPTURE(count);
        CAPTURE(layout);
        const Tensor x = random_tensor(kShape, dtype, gen, layout, 0, 100);
        const Tensor index =
            random_index({count}, kShape[axis], gen, layout == Layout::sliced ? Layout::sliced : Layout::contiguous);
        const Tensor out = core::index_select(x, axis == 2 ? -1 : axis, index);
        const Shape shape = with_size(kShape, axis, count);
        CHECK(str(out.shape()) == str(shape));
        CHECK(out.dtype() == dtype);
        const auto vx = values_of(x), vi = values_of(index);
        std::vector<double> expected;
        for (int64_t flat = 0; flat < core::numel(shape); ++flat) {
          auto i = unravel(flat, shape);
          i[axis] = static_cast<int64_t>(vi[i[axis]]);
          expected.push_back(vx[ravel(i, kShape)]);
        }
        check_equal(out, expected);
      }
    }
  }
}

TEST_CASE("index_add accumulates duplicate indices") {
  Generator gen(42);
  int turn = 0;
  for (Dtype dtype : {Dtype::float32, Dtype::float64, Dtype::int64}) {
    for (int64_t axis = 0; axis < 3; ++axis) {
      const Layout layout = kAllLayouts[turn++ % 4];
      CAPTURE(dtype);
      CAPTURE(axis);
      CAPTURE(layout);
      const Tensor x = random_tensor(kShape, dtype, gen, layout, -10, 10);
      const Tensor index = core::from_vector<int64_t>({1, 0, 1, 1, kShape[axis] - 1, 0, 1});  // duplicates
      const Shape src_shape = with_size(kShape, axis, index.numel());
      const Tensor src = random_tensor(src_shape, dtype, gen, kAllLayouts[turn % 4], -10, 10);
      const Tensor out = core::index_add(x, axis, index, src);
      CHECK(str(out.shape()) == str(kShape));
      std::vector<double> expected = values_of(x);
      const auto vs = values_of(src), vi = values_of(index);
      for (int64_t flat = 0; flat < core::numel(src_shape); ++flat) {
        auto i = unravel(flat, src_shape);
        i[axis] = static_cast<int64_t>(vi[i[axis]]);
        expected[ravel(i, kShape)] += vs[flat];
      }
      check_close(out, expected, tolerance(dtype));
    }
  }
  // The input itself is not modified.
  const Tensor x = core::zeros({3});
  const Tensor out = core::index_add(x, 0, core::from_vector<int64_t>({2, 2, 2}), core::ones({3}));
  check_equal(out, {0, 0, 3});
  check_equal(x, {0, 0, 0});
}

TEST_CASE("embedding looks up rows") {
  Generator gen(43);
  for (Dtype dtype : {Dtype::float32, Dtype::float64}) {
    for (Layout layout : kAllLayouts) {
      CAPTURE(dtype);
      CAPTURE(layout);
      const Tensor weight = random_tensor({7, 3}, dtype, gen, layout);
      const Tensor indices = random_index({2, 3}, 7, gen, layout);
      const Tensor out = core::embedding(weight, indices);
      CHECK(str(out.shape()) == "[2, 3, 3]");
      const auto vw = values_of(weight), vi = values_of(indices);
      std::vector<double> expected;
      for (double row : vi) {
        for (int64_t j = 0; j < 3; ++j) expected.push_back(vw[static_cast<int64_t>(row) * 3 + j]);
      }
      check_equal(out, expected);
    }
  }
  const Tensor weight = core::arange(0, 12, 1, Dtype::float32).reshape({4, 3});
  const Tensor one = core::embedding(weight, core::scalar(2, Dtype::int64));
  CHECK(str(one.shape()) == "[3]");
  check_equal(one, {6, 7, 8});
  CHECK(str(core::embedding(weight, core::zeros({0}, Dtype::int64)).shape()) == "[0, 3]");
}

TEST_CASE("gather and scatter_add along axis 0, 1 and the last") {
  Generator gen(44);
  int turn = 0;
  for (Dtype dtype : {Dtype::float32, Dtype::float64, Dtype::int64}) {
    for (int64_t axis : {0, 1, -1}) {
      const int64_t a = axis < 0 ? axis + 3 : axis;
      for (int64_t count : {2, 6}) {
        const Layout layout = kAllLayouts[turn++ % 4];
        CAPTURE(dtype);
        CAPTURE(axis);
        CAPTURE(count);
        CAPTURE(layout);
        const Shape index_shape = with_size(kShape, a, count);
        const Tensor x = random_tensor(kShape, dtype, gen, layout, -10, 10);
        const Tensor index = random_index(index_shape, kShape[a], gen, kAllLayouts[turn % 4]);
        const auto vx = values_of(x), vi = values_of(index);

        const Tensor g = core::gather(x, axis, index);
        CHECK(str(g.shape()) == str(index_shape));
        std::vector<double> gathered;
        for (int64_t flat = 0; flat < core::numel(index_shape); ++flat) {
          auto i = unravel(flat, index_shape);
          i[a] = static_cast<int64_t>(vi[flat]);
          gathered.push_back(vx[ravel(i, kShape)]);
        }
        check_equal(g, gathered);

        const Tensor src = random_tensor(index_shape, dtype, gen, Layout::permuted, -10, 10);
        const Tensor s = core::scatter_add(x, axis, index, src);
        CHECK(str(s.shape()) == str(kShape));
        std::vector<double> scattered = vx;
        const auto vs = values_of(src);
        for (int64_t flat = 0; flat < core::numel(index_shape); ++flat) {
          auto i = unravel(flat, index_shape);
          i[a] = static_cast<int64_t>(vi[flat]);
          scattered[ravel(i, kShape)] += vs[flat];
        }
        check_close(s, scattered, tolerance(dtype));
      }
    }
  }
}

TEST_CASE("bad indices name the op, the value and its position") {
  const Tensor x = core::zeros({3, 4, 5});
  check_error(
      [&] {
        (void)core::index_select(x, 1, core::from_vector<int64_t>({0, 4, 1}));
      },
      {"[index_select] index 4 at [1] is out of range for axis 1 of size 4"});
  check_error([&] { (void)core::index_select(x, -1, core::from_vector<int64_t>({-1})); },
              {"[index_select] index -1 at [0] is out of range for axis 2 of size 5"});
  check_error(
      [&] {
        (void)core::index_add(x, 0, core::from_vector<int64_t>({3}), core::zeros({1, 4, 5}));
      },
      {"[index_add] index 3 at [0] is out of range for axis 0 of size 3"});
  const Tensor weight = core::zeros({7, 2});
  check_error(
      [&] {
        (void)core::embedding(weight, core::from_vector<int64_t>({0, 1, 2, 3, 4, 9}, {2, 3}));
      },
      {"[embedding] index 9 at [1, 2] is out of range for axis 0 of size 7"});
  check_error(
      [&] {
        (void)core::embedding(weight, core::from_vector<int64_t>({-2}, {1, 1}));
      },
      {"[embedding] index -2 at [0, 0] is out of range for axis 0 of size 7"});
  Tensor index = core::zeros({3, 2, 5}, Dtype::int64);
  index.set({2, 1, 3}, 4);
  check_error([&] { (void)core::gather(x, 1, index); },
              {"[gather] index 4 at [2, 1, 3] is out of range for axis 1 of size 4"});
  index.set({2, 1, 3}, -3);
  check_error(
      [&] {
        (void)core::scatter_add(x, 1, index, core::zeros({3, 2, 5}));
      },
      {"[scatter_add] index -3 at [2, 1, 3] is out of range for axis 1 of size 4"});
  // A bad index in a transposed view is reported at its position in the view.
  const Tensor t = core::from_vector<int64_t>({0, 1, 2, 7}, {2, 2}).transpose(0, 1);  // [[0, 2], [1, 7]]
  check_error([&] { (void)core::embedding(weight, t); }, {"[embedding] index 7 at [1, 1]"});
}

TEST_CASE("index dtypes and shapes are checked") {
  const Tensor x = core::zeros({3, 4});
  check_error([&] { (void)core::index_select(x, 0, core::zeros({2})); },
              {"[index_select] the index must be int64, got float32"});
  check_error(
      [&] {
        (void)core::gather(x, 0, core::zeros({3, 4}, Dtype::uint8));
      },
      {"[gather] the index must be int64, got uint8"});
  check_error([&] { (void)core::embedding(x, core::zeros({2}, Dtype::float64)); },
              {"[embedding] indices must be int64, got float64"});
  check_error(
      [&] {
        (void)core::index_select(x, 0, core::zeros({2, 2}, Dtype::int64));
      },
      {"[index_select] the index must be 1-D, got shape [2, 2]"});
  check_error([&] { (void)core::index_select(x, 2, core::zeros({2}, Dtype::int64)); },
              {"[index_select] axis 2 is out of range for a tensor of rank 2"});
  check_error(
      [&] {
        (void)core::gather(x, 1, core::zeros({2, 3}, Dtype::int64));
      },
      {"[gather] index of shape [2, 3] must match the input's shape [3, 4] on every axis but 1"});
  check_error([&] { (void)core::gather(x, 1, core::zeros({3}, Dtype::int64)); }, {"[gather] index of shape [3]"});
  check_error(
      [&] {
        (void)core::index_add(x, 0, core::zeros({2}, Dtype::int64), core::zeros({3, 4}));
      },
      {"[index_add] source has shape [3, 4]; expected [2, 4]"});
  check_error(
      [&] {
        (void)core::index_add(x, 0, core::zeros({2}, Dtype::int64), core::zeros({2, 4}, Dtype::float64));
      },
      {"[index_add] dtypes float32 and float64 differ"});
  check_error(
      [&] {
        (void)core::scatter_add(x, 0, core::zeros({1, 4}, Dtype::int64), core::zeros({2, 4}));
      },
      {"[scatter_add] source has shape [2, 4]; expected [1, 4]"});
  check_error([&] { (void)core::embedding(core::zeros({4}), core::zeros({2}, Dtype::int64)); },
              {"[embedding] weight must be 2-D [rows, features], got shape [4]"});
}
