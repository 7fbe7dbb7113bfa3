// Activation checkpointing (autograd/checkpoint.h): gradients bitwise equal to the plain path in
// float64 and float32, the same dropout masks on the second run, gradcheck through it, earlier
// gradients kept, gradient-ready hooks told once per parameter, nothing left alive after
// backward, and errors for what cannot be checkpointed.
#include <vector>

#include "tests/support/gradients.h"
#include "autograd/internal.h"

namespace core = axiom::core;
using namespace axiom;
using namespace axiom::test;
using axiom::test::values_of;

namespace {

// A small residual block with every kind of op a transformer block has, and dropout drawing from
// `gen`: x [4, 6] -> x + dropout(gelu(layer_norm(x) W + b)) [4, 6].
struct Block {
  axiom::Tensor norm_weight, norm_bias, weight, bias;
  Generator* gen;

  Block(Dtype dtype, Generator& g) : gen(&g) {
    Generator init(3);
    auto parameter = [&](const Shape& shape) { return leaf(core::uniform(shape, -1, 1, init, dtype)); };
    norm_weight = parameter({6}), norm_bias = parameter({6}), weight = parameter({6, 6}), bias = parameter({6});
  }
  std::vector<axiom::Tensor> parameters() const { return {norm_weight, norm_bias, weight, bias}; }
  axiom::Tensor operator()(const axiom::Tensor& x) const {
    const axiom::Tensor h = gelu(linear(layer_norm(x, norm_weight, norm_bias, 1e-5), weight, bias));
    return add(x, dropout(h, 0.3, /*training=*/true, *gen));
  }
};

struct Gradients {
  std::vector<double> output, x;
  std::vector<std::vector<double>> parameters;
  uint64_t generator_offset = 0;
};

// Two blocks in a row, the second checkpointed or not; the loss is a weighted sum of the output.
Gradients run(Dtype dtype, bool checkpointed) {
  Generator gen(5);
  const Block first(dtype, gen), second(dtype, gen);
  Generator data(9);
  const axiom::Tensor x = leaf(core::uniform({4, 6}, -2, 2, data, dtype));
  const axiom::Tensor weights(core::uniform({4, 6}, -1, 1, data, dtype));
  const axiom::Tensor h = first(x);
  const axiom::Tensor y = checkpointed ? checkpoint(second, h, second.parameters(), &gen) : second(h);
  sum(mul(y, weights)).backward();
  Gradients g{values_of(core_tensor(y)), values_of(core_tensor(x.grad())), {}, gen.offset()};
  for (const Block* block : {&first, &second}) {
    for (const axiom::Tensor& p : block->parameters()) g.parameters.push_back(values_of(core_tensor(p.grad())));
  }
  return g;
}

}  // namespace

TEST_CASE("checkpoint: output and every gradient are bitwise those of the plain path") {
  for (Dtype dtype : {Dtype::float64, Dtype::float32}) {
    CAPTURE(dtype);
    const Gradients plain = run(dtype, false), checkpointed = run(dtype, true);
    CHECK(checkpointed.output == plain.output);
    CHECK(checkpointed.x == plain.x);
    CHECK(checkpointed.parameters == plain.parameters);
    // the second run drew the same masks, and the generator ends where the plain path left it
    CHECK(checkpointed.generator_offset == plain.generator_offset);
  }
}

TEST_CASE("checkpoint: gradcheck passes through it, inputs and parameters") {
  Generator gen(1);
  const Block block(Dtype::float64, gen);
  // dropout's masks must be the same at every evaluation gradcheck makes: rewind the generator
  const Generator start = gen;
  Fn fn = [&](const std::vector<axiom::Tensor>& in) {
    gen = start;
    return checkpoint(block, in[0], block.parameters(), &gen);
  };
  const std::vector<axiom::Tensor> inputs{leaf(uniform64({4, 6}, 2)), block.norm_weight, block.weight, block.bias};
  const GradcheckResult first = gradcheck(fn, inputs);
  CHECK_MESSAGE(first.ok, first.message);
  // Its backward pass is a backward pass of its own, which no graph records: second derivatives
  // through a checkpoint are an Error, not a wrong number.
  CHECK_THROWS_WITH_AS((void)gradgradcheck(fn, inputs), doctest::Contains("[checkpoint]"), axiom::Error);
}

TEST_CASE("checkpoint: gradients from earlier backward passes are added to, not replaced") {
  Generator gen(1);
  const Block block(Dtype::float64, gen);
  // a leaf's own uses add up in the order they run, (a1 + b1) + a2 + b2; through a product with 1
  // each pass adds its whole gradient, as a block's input gets it in a model
  const axiom::Tensor leaf_x = leaf(uniform64({4, 6}, 2));
  auto x_of = [&] { return mul(leaf_x, 1.0); };
  for (int pass = 0; pass < 2; ++pass) sum(block(x_of())).backward();
  const std::vector<double> plain_x = values_of(core_tensor(leaf_x.grad())),
                            plain_w = values_of(core_tensor(block.weight.grad()));
  leaf_x.zero_grad();
  for (const axiom::Tensor& p : block.parameters()) p.zero_grad();
  gen = Generator(1);
  for (int pass = 0; pass < 2; ++pass) sum(checkpoint(block, x_of(), block.parameters(), &gen)).backward();
  CHECK(values_of(core_tensor(leaf_x.grad())) == plain_x);
  CHECK(values_of(core_tensor(block.weight.grad())) == plain_w);
}

TEST_CASE("checkpoint: gradient-ready hooks hear of each parameter once, with its whole gradient") {
  Generator gen(1);
  const Block block(Dtype::float64, gen);
  const axiom::Tensor x = leaf(uniform64({4, 6}, 2));
  std::vector<TensorImpl*> told;
  std::vector<std::vector<double>> told_values;
  const GradientReadyHook hook([&](const axiom::Tensor& leaf) {
    told.push_back(leaf.impl().get());
    told_values.push_back(values_of(core_tensor(leaf.grad())));
  });
  sum(checkpoint(block, x, block.parameters(), &gen)).backward();
  CHECK(told.size() == 5);  // x and the 4 parameters, once each
  for (const axiom::Tensor& p : block.parameters()) {
    const auto at = std::find(told.begin(), told.end(), p.impl().get());
    REQUIRE(at != told.end());
    CHECK(told_values[static_cast<size_t>(at - told.begin())] == values_of(core_tensor(p.grad())));
  }
}

TEST_CASE("checkpoint: nothing the forward or the second run made stays alive after backward") {
  Generator gen(1);
  const Block block(Dtype::float64, gen);
  const axiom::Tensor x = leaf(uniform64({64, 6}, 2));
  sum(checkpoint(block, x, block.parameters(), &gen)).backward();  // the gradients' buffers now exist
  const int64_t before = core::allocation_stats().live_bytes;
  {
    const axiom::Tensor loss = sum(checkpoint(block, x, block.parameters(), &gen));
    loss.backward();
  }
  CHECK(core::allocation_stats().live_bytes == before);
}

TEST_CASE("checkpoint: under NoGrad it is f itself, and what cannot be checkpointed is an error") {
  Generator gen(1);
  const Block block(Dtype::float64, gen);
  const axiom::Tensor x = leaf(uniform64({4, 6}, 2));
  {
    const NoGrad no_grad;
    CHECK(checkpoint(block, x, block.parameters(), &gen).grad_fn() == nullptr);
  }
  CHECK_THROWS_WITH_AS(checkpoint(nullptr, x, {}), "[checkpoint] the function is empty", Error);
  CHECK_THROWS_WITH_AS(checkpoint(block, x, {block.weight, block.weight}, &gen),
                       "[checkpoint] parameter 1 is undefined or listed twice", Error);
  CHECK_THROWS_WITH_AS(checkpoint(block, axiom::Tensor(), block.parameters(), &gen),
                       "[checkpoint] the input is undefined", Error);
}
