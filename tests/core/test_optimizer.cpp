// The fused Adam update's checks: adam_update and adam_update_many.
#include <cmath>
#include <limits>
#include <vector>

#include "tests/support/reference.h"

namespace core = axiom::core;
using namespace axiom::test;
using axiom::core::Tensor;

TEST_CASE("adam_update errors name the operand and the value") {
  const Tensor p = core::zeros({3}), g = core::zeros({3});
  check_error([&] { core::adam_update(p, g, core::zeros({4}), core::zeros({3}), {}); },
              {"[adam_update] exp_avg has shape [4], param [3]"});
  check_error([&] { core::adam_update(p, g, core::zeros({3}, Dtype::float64), core::zeros({3}), {}); },
              {"[adam_update] ", "float64"});
  check_error(
      [&] {
        core::adam_update(core::zeros({3, 2}).transpose(0, 1), core::zeros({2, 3}), core::zeros({2, 3}),
                          core::zeros({2, 3}), {});
      },
      {"[adam_update] param must be contiguous (it is updated in place)"});
  check_error([&] { core::adam_update(p, g, core::zeros({3}), core::zeros({3}), {.beta1 = 1}); },
              {"betas must be in [0, 1), got 1 and 0.999"});
  check_error([&] { core::adam_update(p, g, core::zeros({3}), core::zeros({3}), {.eps = 0}); },
              {"eps must be > 0, got 0"});
  check_error([&] { core::adam_update(p, g, core::zeros({3}), core::zeros({3}), {.step = 0}); },
              {"step must be 1 or more, got 0"});
  check_error(
      [&] {
        core::adam_update(core::zeros({3}, Dtype::int64), core::zeros({3}, Dtype::int64),
                          core::zeros({3}, Dtype::int64), core::zeros({3}, Dtype::int64), {});
      },
      {"[adam_update] "});
  CHECK(p.to_vector<float>() == std::vector<float>{0, 0, 0});  // nothing was written
}

TEST_CASE("adam_update_many checks every update before it changes any") {
  const Tensor p = core::zeros({3}), g = core::ones({3});
  const Tensor q = core::zeros({2});
  const core::AdamStep step{.lr = 0.1};
  check_error(
      [&] {
        core::adam_update_many(
            {{p, g, core::zeros({3}), core::zeros({3}), step}, {q, g, core::zeros({2}), core::zeros({2}), step}});
      },
      {"[adam_update_many] grad has shape [3], param [2]"});
  CHECK(p.at({0}) == 0);  // the first update, which was fine, did not run either
  check_error(
      [&] {
        core::adam_update_many({{p, g, core::zeros({3}), core::zeros({3}), {.step = 0}}});
      },
      {"[adam_update_many] step must be 1 or more, got 0"});
}
