// Errors from the differentiable ops: cross_entropy's targets (out of range, wrong dtype, wrong
// shape) and options, and core's checks seen through autograd (the message names the op and the
// values). A failed op records nothing.
#include <vector>

#include "tests/support/gradients.h"

namespace core = axiom::core;
using namespace axiom;
using namespace axiom::test;
using axiom::test::check_error;
using axiom::test::error_message;

TEST_CASE("cross_entropy: a target that is not a class (0 to C - 1) is an error showing the value") {
  const auto logits = leaf(uniform64({3, 5}, 1));
  check_error(
      [&] {
        (void)cross_entropy(logits, axiom::Tensor(int64s({0, 7, 2}, {3})));
      },
      {"[cross_entropy]", "target 7", "element 1", "[0, 5)"});
  check_error(
      [&] {
        (void)cross_entropy(logits, axiom::Tensor(int64s({0, 1, -1}, {3})));
      },
      {"[cross_entropy]", "target -1", "element 2", "[0, 5)"});
  check_error(
      [&] {
        (void)cross_entropy(logits, axiom::Tensor(int64s({5, 0, 0}, {3})));
      },
      {"[cross_entropy]", "target 5"});
  // The largest and smallest valid classes are fine.
  CHECK_NOTHROW((void)cross_entropy(logits, axiom::Tensor(int64s({0, 4, 4}, {3}))));
  // With per-element losses and label smoothing too.
  check_error(
      [&] {
        (void)cross_entropy(logits, axiom::Tensor(int64s({0, 9, 2}, {3})), {0.1, Reduction::none});
      },
      {"[cross_entropy]", "target 9"});
}

TEST_CASE("cross_entropy: targets of the wrong dtype or shape are errors") {
  const auto logits = leaf(uniform64({3, 5}, 2));
  check_error([&] { (void)cross_entropy(logits, axiom::Tensor(core::zeros({3}, Dtype::float64))); },
              {"[cross_entropy]", "int64", "float64"});
  check_error([&] { (void)cross_entropy(logits, axiom::Tensor(core::zeros({3}, Dtype::uint8))); },
              {"[cross_entropy]", "int64", "uint8"});
  check_error(
      [&] {
        (void)cross_entropy(logits, axiom::Tensor(int64s({0, 1}, {2})));
      },
      {"[cross_entropy]", "[3, 5]", "[3]", "[2]"});
  check_error(
      [&] {
        (void)cross_entropy(logits, axiom::Tensor(int64s({0, 1, 2}, {3, 1})));
      },
      {"[cross_entropy]", "[3, 1]"});
  check_error(
      [&] {
        (void)cross_entropy(logits, axiom::Tensor(int64s({0, 1, 2, 0, 1, 2}, {3, 2})));
      },
      {"[cross_entropy]", "[3, 2]"});
  check_error([&] { (void)cross_entropy(logits, axiom::Tensor(core::scalar(1, Dtype::int64))); }, {"[cross_entropy]"});
  check_error(
      [&] {
        (void)cross_entropy(axiom::Tensor(core::scalar(1, Dtype::float64)),
                            axiom::Tensor(core::scalar(0, Dtype::int64)));
      },
      {"[cross_entropy]"});
  check_error(
      [&] {
        (void)cross_entropy(axiom::Tensor(core::zeros({3, 5}, Dtype::int64)), axiom::Tensor(int64s({0, 1, 2}, {3})));
      },
      {"[cross_entropy]", "int64"});
  check_error([&] { (void)cross_entropy(logits, axiom::Tensor()); }, {"undefined"});
}

TEST_CASE("cross_entropy: label smoothing outside 0 to 1 is an error") {
  const auto logits = leaf(uniform64({2, 3}, 3));
  const axiom::Tensor targets(int64s({0, 2}, {2}));
  check_error([&] { (void)cross_entropy(logits, targets, {1.5}); }, {"[cross_entropy]", "label_smoothing", "1.5"});
  check_error([&] { (void)cross_entropy(logits, targets, {-0.1}); }, {"[cross_entropy]", "label_smoothing", "-0.1"});
}

TEST_CASE("errors from core pass through the differentiable ops unchanged") {
  const auto a = leaf(uniform64({2, 3}, 4)), b = leaf(uniform64({4, 5}, 5));
  CHECK(error_message([&] { (void)matmul(a, b); }) ==
        "[matmul] shapes [2, 3] and [4, 5] cannot be multiplied (3 != 4)");
  CHECK(error_message([&] { (void)add(a, leaf(uniform64({4}, 6))); }) ==
        "[add] shapes [2, 3] and [4] cannot be broadcast (3 vs 4 at axis -1)");
  check_error([&] { (void)softmax(a, 2); }, {"[softmax]", "axis 2"});
  check_error([&] { (void)dropout(a, 1.5, true); }, {"[dropout]", "1.5"});
  check_error([&] { (void)a.select(0, 5); }, {"select"});
}

TEST_CASE("attention_step has no backward rule: with gradients recorded, an input that needs one is an error") {
  const auto q = leaf(uniform64({2, 1, 4}, 3));
  const axiom::Tensor keys_t(uniform64({2, 4, 3}, 4)), values(uniform64({2, 3, 4}, 5));
  check_error([&] { (void)attention_step(q, keys_t, values, 0.5); },
              {"[attention_step] has no backward rule", "NoGrad"});
  NoGrad no_grad;
  CHECK(attention_step(q, keys_t, values, 0.5).shape() == Shape{2, 1, 4});
}

TEST_CASE("attention_step_cached has no backward rule either") {
  const auto qkv_t = leaf(uniform64({2, 12}, 3));
  const axiom::Tensor keys_t(uniform64({2, 1, 4, 3}, 4)), values(uniform64({2, 1, 3, 4}, 5));
  check_error([&] { (void)attention_step_cached(qkv_t, keys_t, values, 0, 0, 0.5); },
              {"[attention_step_cached] has no backward rule", "NoGrad"});
  NoGrad no_grad;
  CHECK(attention_step_cached(qkv_t, keys_t, values, 0, 0, 0.5).shape() == Shape{2, 4});
}
