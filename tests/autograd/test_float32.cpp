// Backward in float32: every rule must keep the input's dtype (the engine refuses a float64
// gradient for a float32 input) and agree with the same computation in float64. gradcheck covers
// correctness in float64; this covers the dtype plumbing of every rule in float32.
#include <string>
#include <vector>

#include "tests/support/gradients.h"
#include "autograd/internal.h"

namespace core = axiom::core;
using namespace axiom;
using namespace axiom::test;
using axiom::test::check_close;
using axiom::test::values_of;
using In = std::vector<axiom::Tensor>;

namespace {

struct Case {
  const char* what;
  std::vector<Shape> shapes;
  Fn fn;
  double low = -2, high = 2;
};

const core::Tensor kIndices = core::from_vector<int64_t>({1, 3, 1, 0, 2, 1}, {2, 3});
const core::Tensor kTargets = core::from_vector<int64_t>({1, 0, 4}, {3});
const core::Tensor kCond = core::from_vector<uint8_t>({1, 0, 1}, {3, 1});

// Runs fn on float64 leaves and on float32 copies of them, with the same seed gradient, and
// compares every input's gradient.
void check_float32(const Case& c, uint64_t seed) {
  In in64, in32;
  for (const Shape& shape : c.shapes) {
    const core::Tensor values = uniform64(shape, seed++, c.low, c.high);
    in64.push_back(leaf(values));
    in32.push_back(leaf(values.to(Dtype::float32)));
  }
  const axiom::Tensor y64 = c.fn(in64), y32 = c.fn(in32);
  REQUIRE(y32.dtype() == Dtype::float32);
  const axiom::Tensor grad(uniform64(y64.shape(), seed));
  y64.backward(grad);
  y32.backward(grad.to(Dtype::float32));
  for (size_t i = 0; i < in32.size(); ++i) {
    CAPTURE(i);
    REQUIRE(in32[i].grad().defined());
    CHECK(in32[i].grad().dtype() == Dtype::float32);
    check_close(core_tensor(in32[i].grad()), values_of(core_tensor(in64[i].grad())), 1e-4, 1e-4, c.what);
  }
}

}  // namespace

TEST_CASE("every rule runs in float32 and agrees with float64") {
  const Case cases[] = {
      {"add, sub, mul, div",
       {{3, 1, 4}, {5, 1}},
       [](const In& in) { return div(sub(mul(add(in[0], in[1]), in[0]), in[1]), add(mul(in[1], in[1]), 1.0)); }},
      {"pow, maximum, minimum",
       {{2, 3}, {3}},
       [](const In& in) { return add(pow(in[0], in[1]), add(maximum(in[0], in[1]), minimum(in[0], in[1]))); },
       0.5,
       2},
      {"scalar overloads",
       {{2, 3}},
       [](const In& in) { return pow(div(sub(mul(add(in[0], 0.5), 2.0), 0.25), 3.0), 2.0); }},
      {"unary ops",
       {{2, 3}},
       [](const In& in) {
         const axiom::Tensor x = in[0];
         return add(add(add(neg(abs(x)), exp(x)), add(log(x), sqrt(x))),
                    add(add(rsqrt(x), tanh(x)), add(add(sigmoid(x), relu(x)), add(gelu(x), gelu_tanh(x)))));
       },
       0.3,
       2},
      {"where and masked_fill",
       {{3, 4}, {4}},
       [](const In& in) {
         const axiom::Tensor mask(core::from_vector<uint8_t>({0, 1, 1, 0}, {4}));
         return masked_fill(where(axiom::Tensor(kCond), in[0], in[1]), mask, 2.0);
       }},
      {"reductions",
       {{2, 3, 4}},
       [](const In& in) {
         return add(add(sum(in[0], {0}), mean(in[0], {0}, false)),
                    add(var(in[0], {0}, false, 1), axiom::max(in[0], {0})));
       }},
      {"matmul", {{2, 3, 4}, {4, 5}, {5}}, [](const In& in) { return matmul(matmul(in[0], in[1]), in[2]); }},
      {"softmax and log_softmax", {{3, 4}}, [](const In& in) { return add(softmax(in[0], 0), log_softmax(in[0], 1)); }},
      {"layer_norm", {{3, 5}, {5}, {5}}, [](const In& in) { return layer_norm(in[0], in[1], in[2]); }},
      {"embedding", {{4, 3}}, [](const In& in) { return embedding(in[0], axiom::Tensor(kIndices)); }},
      {"cross_entropy",
       {{3, 5}},
       [](const In& in) {
         return cross_entropy(in[0], axiom::Tensor(kTargets), {0.1, Reduction::none});
       }},
      {"dropout",
       {{3, 4}},
       [](const In& in) {
         Generator gen(7);
         return dropout(in[0], 0.5, true, gen);
       }},
      {"views",
       {{2, 3, 4}},
       [](const In& in) {
         const axiom::Tensor x = in[0];
         return add(
             x.permute({2, 0, 1}).reshape({4, 6}).slice(1, 0, 6, 2).transpose(0, 1).contiguous(),
             x.movedim(0, 2).narrow(0, 0, 3).select(2, 1).unsqueeze(0).squeeze(0).expand({3, 4}).flatten().reshape(
                 {3, 4}));
       }},
      {"concat, stack, pad, shift",
       {{2, 3}, {2, 3}},
       [](const In& in) {
         return shift(pad(concat({stack({in[0], in[1]}, 0), stack({in[1], in[0]}, 0)}, 1), 2, 1, 1, 0.5), 2, 1);
       }},
      {"to float64 and back",
       {{2, 3}},
       [](const In& in) { return mul(in[0].to(Dtype::float64), 2.0).to(in[0].dtype()); }},
  };
  uint64_t seed = 1;
  for (const Case& c : cases) {
    CAPTURE(std::string(c.what));
    check_float32(c, seed);
    seed += 10;
  }
}
