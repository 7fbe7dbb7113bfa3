// Ops that join tensors or move elements along an axis: concat, stack, pad, shift, copy_into.
#include <vector>

#include "tests/support/reference.h"

namespace core = axiom::core;
using namespace axiom::test;
using axiom::core::Tensor;

TEST_CASE("concat along every axis, with non-contiguous inputs") {
  Generator gen(51);
  int turn = 0;
  for (Dtype dtype : {Dtype::float32, Dtype::float64, Dtype::int64}) {
    for (int64_t axis = 0; axis < 3; ++axis) {
      CAPTURE(dtype);
      CAPTURE(axis);
      const std::vector<int64_t> sizes = {2, 0, 3, 1};  // along `axis`; one input is empty
      std::vector<Tensor> inputs;
      for (int64_t size : sizes) {
        Shape shape = {2, 3, 4};
        shape[axis] = size;
        inputs.push_back(random_tensor(shape, dtype, gen, kAllLayouts[turn++ % 4], -50, 50));
      }
      const Tensor out = core::concat(inputs, axis - 3);  // negative axes work too
      Shape shape = {2, 3, 4};
      shape[axis] = 6;
      CHECK(str(out.shape()) == str(shape));
      CHECK(out.dtype() == dtype);
      std::vector<std::vector<double>> values;
      for (const Tensor& t : inputs) values.push_back(values_of(t));
      std::vector<double> expected;
      for (int64_t flat = 0; flat < core::numel(shape); ++flat) {
        auto index = unravel(flat, shape);
        size_t which = 0;
        while (index[axis] >= sizes[which]) index[axis] -= sizes[which++];
        expected.push_back(values[which][ravel(index, inputs[which].shape())]);
      }
      check_equal(out, expected);
    }
  }
  check_equal(core::concat({core::from_vector<float>({1, 2})}, 0), {1, 2});
}

TEST_CASE("concat errors") {
  const Tensor a = core::zeros({2, 3});
  check_error(
      [&] {
        (void)core::concat({a, core::zeros({2, 5})}, 0);
      },
      {"[concat] tensor 1 has shape [2, 5], which does not match tensor 0's [2, 3] outside axis 0"});
  check_error(
      [&] {
        (void)core::concat({a, a, core::zeros({2, 3, 1})}, 1);
      },
      {"[concat] tensor 2 has shape [2, 3, 1], which does not match tensor 0's [2, 3] outside axis 1"});
  check_error(
      [&] {
        (void)core::concat({a, core::zeros({2, 3}, Dtype::float64)}, 0);
      },
      {"[concat] dtypes float32 and float64 differ"});
  check_error([&] { (void)core::concat({a}, 2); }, {"[concat] axis 2 is out of range for a tensor of rank 2"});
  check_error([&] { (void)core::concat({}, 0); }, {"[concat] needs at least one tensor"});
  check_error([&] { (void)core::concat({a, Tensor()}, 0); }, {"[concat] the input tensor is undefined"});
}

TEST_CASE("stack inserts a new axis") {
  Generator gen(52);
  for (int64_t axis : {0, 1, 2, -1}) {
    CAPTURE(axis);
    std::vector<Tensor> inputs;
    for (Layout layout : {Layout::contiguous, Layout::permuted, Layout::sliced}) {
      inputs.push_back(random_tensor({2, 3}, Dtype::float64, gen, layout));
    }
    const Tensor out = core::stack(inputs, axis);
    const int64_t a = axis < 0 ? axis + 3 : axis;
    Shape shape = {2, 3};
    shape.insert(shape.begin() + a, 3);
    CHECK(str(out.shape()) == str(shape));
    std::vector<double> expected;
    for (int64_t flat = 0; flat < 18; ++flat) {
      auto index = unravel(flat, shape);
      const int64_t which = index[a];
      index.erase(index.begin() + a);
      expected.push_back(inputs[which].at(index));
    }
    check_equal(out, expected);
  }
  check_error(
      [] {
        (void)core::stack({core::zeros({2, 3}), core::zeros({3, 2})}, 0);
      },
      {"[stack] tensor 1 has shape [3, 2], tensor 0 has [2, 3]"});
  check_error(
      [] {
        (void)core::stack({core::zeros({2, 3})}, 3);
      },
      {"[stack] axis 3 is out of range for a tensor of rank 3"});
  check_error([] { (void)core::stack({}, 0); }, {"[stack] needs at least one tensor"});
}

TEST_CASE("pad adds `before` and `after` elements of a value") {
  Generator gen(53);
  for (Dtype dtype : {Dtype::float32, Dtype::int64}) {
    for (Layout layout : kAllLayouts) {
      for (int64_t axis = 0; axis < 3; ++axis) {
        for (auto [before, after] : std::vector<std::pair<int64_t, int64_t>>{{1, 2}, {0, 3}, {2, 0}, {0, 0}}) {
          CAPTURE(dtype);
          CAPTURE(layout);
          CAPTURE(axis);
          CAPTURE(before);
          CAPTURE(after);
          const Tensor x = random_tensor({2, 3, 4}, dtype, gen, layout, -9, 9);
          const Tensor out = core::pad(x, axis, before, after, -7);
          Shape shape = {2, 3, 4};
          shape[axis] += before + after;
          CHECK(str(out.shape()) == str(shape));
          const auto vx = values_of(x);
          std::vector<double> expected;
          for (int64_t flat = 0; flat < core::numel(shape); ++flat) {
            auto index = unravel(flat, shape);
            index[axis] -= before;
            const bool inside = index[axis] >= 0 && index[axis] < x.size(axis);
            expected.push_back(inside ? vx[ravel(index, x.shape())] : -7);
          }
          check_equal(out, expected);
        }
      }
    }
  }
  check_equal(core::pad(core::from_vector<float>({1, 2}), 0, 1, 1), {0, 1, 2, 0});
  check_error([] { (void)core::pad(core::zeros({2}), 0, -1, 0); },
              {"[pad] padding must be 0 or more, got before -1, after 0"});
  check_error([] { (void)core::pad(core::zeros({2}), 1, 1, 1); }, {"[pad] axis 1 is out of range"});
}

TEST_CASE("shift moves elements along an axis, zeros come in") {
  Generator gen(54);
  for (Dtype dtype : {Dtype::float32, Dtype::float64, Dtype::int64}) {
    for (Layout layout : kAllLayouts) {
      for (int64_t axis = -3; axis < 3; ++axis) {
        const int64_t a = axis < 0 ? axis + 3 : axis;
        const Tensor x = random_tensor({3, 4, 5}, dtype, gen, layout, 1, 9);  // no zeros of its own
        for (int64_t amount : {1, 2, -1, -3, 0, 4, 5, -5, 100, -100}) {
          CAPTURE(dtype);
          CAPTURE(layout);
          CAPTURE(axis);
          CAPTURE(amount);
          const Tensor out = core::shift(x, axis, amount);
          CHECK(str(out.shape()) == "[3, 4, 5]");
          const auto vx = values_of(x);
          std::vector<double> expected;
          for (int64_t flat = 0; flat < x.numel(); ++flat) {
            auto index = unravel(flat, x.shape());
            index[a] -= amount;  // out[i] = x[i - amount]
            const bool inside = index[a] >= 0 && index[a] < x.size(a);
            expected.push_back(inside ? vx[ravel(index, x.shape())] : 0);
          }
          check_equal(out, expected);
        }
      }
    }
  }
  check_equal(core::shift(core::from_vector<float>({1, 2, 3}), 0, 1), {0, 1, 2});
  check_equal(core::shift(core::from_vector<float>({1, 2, 3}), 0, -1), {2, 3, 0});
  check_equal(core::shift(core::from_vector<float>({1, 2, 3}), 0, 3), {0, 0, 0});
}

TEST_CASE("copy_into broadcasts and converts into any view") {
  Generator gen(55);
  SUBCASE("into a transposed view of a larger tensor, touching nothing else") {
    const Tensor base = core::full({4, 3}, -1, Dtype::float64);
    const Tensor dst = base.slice(0, 1, 4).transpose(0, 1);  // [3, 3], rows 1..3 of base, transposed
    const Tensor src = random_tensor({3, 1}, Dtype::float32, gen);
    core::copy_into(src, dst);
    const auto vs = values_of(src);
    for (int64_t i = 0; i < 4; ++i) {
      for (int64_t j = 0; j < 3; ++j) {
        CAPTURE(i);
        CAPTURE(j);
        // base[i][j] = dst[j][i - 1] = src[j][0] for i >= 1.
        CHECK(base.at({i, j}) == (i == 0 ? -1.0 : vs[j]));
      }
    }
  }
  SUBCASE("broadcast from every layout, with conversion") {
    for (Layout layout : kAllLayouts) {
      CAPTURE(layout);
      const Tensor src = random_tensor({3, 1, 4}, Dtype::float64, gen, layout, -100, 100);
      const Tensor dst = core::zeros({2, 3, 5, 4}, Dtype::int64);
      core::copy_into(src, dst);
      const auto vs = values_of(src);
      std::vector<double> expected;
      for (int64_t flat = 0; flat < dst.numel(); ++flat) {
        expected.push_back(std::trunc(vs[broadcast_source(unravel(flat, dst.shape()), src.shape())]));
      }
      check_equal(dst, expected);
    }
  }
  SUBCASE("a scalar fills") {
    const Tensor dst = core::zeros({2, 2});
    core::copy_into(core::scalar(3, Dtype::int64), dst);
    check_equal(dst, {3, 3, 3, 3});
  }
  SUBCASE("errors") {
    check_error(
        [] {
          core::copy_into(core::zeros({2, 3}), core::zeros({3}));
        },
        {"[copy_into] source of shape [2, 3] does not broadcast to the destination's shape [3]"});
    check_error([] { core::copy_into(core::zeros({4}), core::zeros({3})); },
                {"[copy_into] shapes [4] and [3] cannot be broadcast (4 vs 3 at axis -1)"});
    check_error([] { core::copy_into(Tensor(), core::zeros({3})); }, {"[copy_into] the source tensor is undefined"});
  }
}
