// Every layer and block gradchecked in float64 on tiny sizes (inputs and all parameters), plus
// the forward values of the simple layers against loops.
#include <cmath>

#include "nn/nn.h"
#include "tests/support/gradients.h"
#include "autograd/internal.h"

using namespace axiom;
using axiom::test::check_close;
using axiom::test::values_of;
using test::check_grad;

namespace {

// gradcheck of module.forward(x) with respect to x and every parameter of the module.
template <typename Forward>
void check_module(const std::string& what, nn::Module& module, const core::Tensor& x, Forward forward,
                  GradcheckOptions options = {}) {
  module.to(Dtype::float64);
  std::vector<Tensor> inputs{Tensor(x, is_floating(x.dtype()))};
  for (const Tensor& p : module.parameters()) inputs.push_back(p);
  check_grad(
      what, [&](const std::vector<Tensor>& in) { return forward(in[0]); }, inputs, options);
}

core::Tensor randn64(const core::Shape& shape, uint64_t seed) {
  Generator gen(seed);
  return core::randn(shape, gen, Dtype::float64);
}

}  // namespace

TEST_CASE("Dense is x @ W + b over the last axis of any rank") {
  Generator gen(1);
  nn::Dense dense(3, 2, gen);
  const core::Tensor x = core::randn({2, 2, 3}, gen);
  const std::vector<double> xs = values_of(x), w = values_of(core_tensor(dense.weight)),
                            b = values_of(core_tensor(dense.bias));
  std::vector<double> expected;
  for (int64_t p = 0; p < 4; ++p) {
    for (int64_t o = 0; o < 2; ++o) {
      double total = b[o];
      for (int64_t i = 0; i < 3; ++i) total += xs[p * 3 + i] * w[i * 2 + o];
      expected.push_back(total);
    }
  }
  check_close(core_tensor(dense(Tensor(x))), expected, 1e-5, 1e-6);
  CHECK(dense.weight.shape() == core::Shape{3, 2});
  for (double v : w) CHECK(std::abs(v) <= 1 / std::sqrt(3.0));
  nn::Dense zero(3, 2, gen, {.bias = false, .init_scale = 0});
  CHECK_FALSE(zero.bias.defined());
  CHECK(core::sum(core::abs(core_tensor(zero.weight))).item() == 0);
  CHECK_THROWS_WITH_AS(dense(Tensor(core::zeros({2, 4}))), doctest::Contains("[Dense]"), Error);
}

namespace {
// The standard deviation of a tensor's values.
double standard_deviation(const core::Tensor& t) {
  const std::vector<double> v = values_of(t);
  double sum = 0, squares = 0;
  for (double x : v) sum += x, squares += x * x;
  const double mean = sum / static_cast<double>(v.size());
  return std::sqrt(squares / static_cast<double>(v.size()) - mean * mean);
}
}  // namespace

TEST_CASE(
    "Dense starts uniform in +-s (weights and biases) or normal with deviation s and zero biases, s = scale / "
    "sqrt(in)") {
  Generator gen(2);
  const int64_t in = 256, out = 128;
  const double s = 1 / std::sqrt(static_cast<double>(in));
  const nn::Dense uniform(in, out, gen);
  CHECK(core::max(core::abs(core_tensor(uniform.weight))).item() <= s);
  CHECK(standard_deviation(core_tensor(uniform.weight)) ==
        doctest::Approx(s / std::sqrt(3.0)).epsilon(0.02));  // U(-s, s): s / sqrt(3)
  CHECK(core::max(core::abs(core_tensor(uniform.bias))).item() > 0);
  const nn::Dense normal(in, out, gen, {.init_scale = 2, .init = nn::DenseInit::normal});
  CHECK(standard_deviation(core_tensor(normal.weight)) ==
        doctest::Approx(2 * s).epsilon(0.02));  // 32768 draws: within 1%
  CHECK(core::max(core::abs(core_tensor(normal.weight))).item() >
        2 * 2 * s);  // not uniform: the tails of a normal reach past 2 sigma
  CHECK(core::sum(core::abs(core_tensor(normal.bias))).item() == 0);
  const nn::Dense zero(in, out, gen, {.init_scale = 0, .init = nn::DenseInit::normal});
  CHECK(core::sum(core::abs(core_tensor(zero.weight))).item() == 0);
  CHECK_THROWS_WITH_AS(nn::Dense(in, out, gen, {.init = static_cast<nn::DenseInit>(5)}),
                       "[Dense] init must be uniform or normal, got DenseInit(5)", Error);
}

TEST_CASE("gradcheck: Dense, LayerNorm, Embedding, Dropout") {
  Generator gen(2);
  nn::Dense dense(3, 4, gen);
  check_module("Dense", dense, randn64({2, 3, 3}, 1), [&](const Tensor& x) { return dense(x); });
  nn::LayerNorm norm(4);
  check_module("LayerNorm", norm, randn64({3, 4}, 2), [&](const Tensor& x) { return norm(x); });
  nn::Embedding embedding(5, 3, gen);
  const core::Tensor indices = core::from_vector<int64_t>({0, 4, 4, 2}, {2, 2});
  check_module("Embedding", embedding, indices, [&](const Tensor& i) { return embedding(i); });
  nn::Dropout drop(0.5);
  drop.train();
  check_module("Dropout", drop, randn64({4, 4}, 3), [&](const Tensor& x) {
    Generator fixed(9);  // the same mask for every call
    return dropout(x, 0.5, true, fixed);
  });
  drop.eval();
  const Tensor x(randn64({4, 4}, 3));
  CHECK(core::sum(core::ne(core_tensor(drop(x)), core_tensor(x))).item() == 0);  // identity in eval mode
}

TEST_CASE("gradcheck: axial attention, masked and unmasked, along each axis, with and without relative positions") {
  for (int64_t axis : {1, 2}) {
    for (bool masked : {false, true}) {
      for (int64_t relative : {0, 1}) {
        CAPTURE(axis);
        CAPTURE(masked);
        CAPTURE(relative);
        Generator gen(3);
        nn::AxialAttention attention(4, 2, axis, gen, {.masked = masked, .relative_distance = relative});
        check_module("AxialAttention", attention, randn64({1, 3, 2, 4}, 4),
                     [&](const Tensor& x) { return attention(x); });
      }
    }
  }
}

TEST_CASE("gradcheck: attention, feed-forward and transformer blocks") {
  Generator gen(4);
  nn::AttentionBlock attention(4, 2, gen, {.heads = 2});
  check_module("AttentionBlock", attention, randn64({1, 2, 3, 4}, 5), [&](const Tensor& x) { return attention(x); });
  nn::FeedforwardBlock feedforward(4, gen, {.ff_multiple = 2});
  check_module("FeedforwardBlock", feedforward, randn64({2, 3, 4}, 6), [&](const Tensor& x) { return feedforward(x); });
  nn::TransformerBlock block(4, 1, gen, {.heads = 2, .ff_multiple = 2, .masked = true});
  check_module("MaskedTransformerBlock", block, randn64({1, 3, 2, 4}, 7), [&](const Tensor& x) { return block(x); });
}

TEST_CASE("FeedforwardBlock's fused ops give the bits of Dense(GELU(Dense(LayerNorm(x)))), forward and backward") {
  for (const Activation activation : {Activation::gelu, Activation::gelu_tanh, Activation::relu}) {
    CAPTURE(static_cast<int>(activation));
    Generator gen(8);
    nn::FeedforwardBlock block(16, gen, {.nonlinearity = activation});  // float32, D = 16, D' = 64
    const Tensor x(core::randn({3, 5, 16}, gen), /*requires_grad=*/true);
    const Tensor seed(core::randn({3, 5, 16}, gen));
    const auto gradients = [&](const Tensor& y) {
      block.zero_grad(), x.zero_grad();
      y.backward(seed);
      std::vector<core::Tensor> all{core_tensor(x.grad()).clone()};
      for (const Tensor& p : block.parameters()) all.push_back(core_tensor(p.grad()).clone());
      return all;
    };
    const Tensor fused = block(x);
    const std::vector<core::Tensor> fused_grads = gradients(fused);
    const Tensor plain = add(x, block.down->forward(activate(activation, block.up->forward(block.norm->forward(x)))));
    const std::vector<core::Tensor> plain_grads = gradients(plain);
    CHECK(core::sum(core::ne(core_tensor(fused), core_tensor(plain))).item() == 0);
    for (size_t i = 0; i < fused_grads.size(); ++i) {
      CAPTURE(i);
      CHECK(core::sum(core::ne(fused_grads[i], plain_grads[i])).item() == 0);
    }
  }
}

TEST_CASE("blocks with output_init_scale 0 start as the identity") {
  Generator gen(5);
  nn::TransformerBlock block(8, 2, gen, {.heads = 2, .output_init_scale = 0});
  const Tensor x(core::randn({2, 3, 4, 8}, gen));
  CHECK(core::sum(core::ne(core_tensor(block(x)), core_tensor(x))).item() == 0);
}

TEST_CASE("factorized position embeddings add one table per axis") {
  Generator gen(6);
  nn::FactorizedPositionEmbedding position({2, 3}, 4, gen, 1.0);
  const core::Tensor grid = core_tensor(position.embeddings());  // [2, 3, 4]
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 3; ++j) {
      for (int64_t c = 0; c < 4; ++c) {
        CHECK(grid.at({i, j, c}) == doctest::Approx(position.tables[0].at({i, c}) + position.tables[1].at({j, c})));
      }
    }
  }
  CHECK(position.named_parameters().size() == 2);
  check_module("FactorizedPositionEmbedding", position, randn64({2, 2, 3, 4}, 8),
               [&](const Tensor& x) { return position(x); });
  CHECK_THROWS_AS(position(Tensor(core::zeros({2, 3, 2, 4}))), Error);
}

TEST_CASE("sinusoidal encoding follows its formula") {
  const core::Tensor pe = core_tensor(nn::sinusoidal_encoding(5, 6, Dtype::float64));
  for (int64_t t = 0; t < 5; ++t) {
    for (int64_t i = 0; i < 3; ++i) {
      const double angle = t / std::pow(10000.0, 2.0 * i / 6);
      CHECK(pe.at({t, 2 * i}) == doctest::Approx(std::sin(angle)));
      CHECK(pe.at({t, 2 * i + 1}) == doctest::Approx(std::cos(angle)));
    }
  }
  CHECK_THROWS_AS(nn::sinusoidal_encoding(4, 5), Error);
}

TEST_CASE("shift_right and shift_down move one step along W and H") {
  const Tensor x(core::arange(1, 7, 1, Dtype::float64).reshape({1, 2, 3, 1}));  // rows [1 2 3], [4 5 6]
  check_close(core_tensor(nn::shift_right(x)), {0, 1, 2, 0, 4, 5}, 0, 0);
  check_close(core_tensor(nn::shift_down(x)), {0, 0, 0, 1, 2, 3}, 0, 0);
  check_grad("shift_right", [](const std::vector<Tensor>& in) { return nn::shift_right(in[0]); },
             {test::leaf(randn64({1, 2, 3, 2}, 9))});
}

TEST_CASE("LSTM: one step follows the cell equations, a sequence equals its steps, gradcheck") {
  Generator gen(7);
  nn::LSTM lstm(3, 2, gen);
  lstm.to(Dtype::float64);
  const core::Tensor x = randn64({2, 4, 3}, 10);
  // one step from zero state, by hand: gates = x W_x + b (h = 0), c = s(i) t(g), h = s(o) t(c)
  const std::vector<double> xs = values_of(x.select(1, 0)), w = values_of(core_tensor(lstm.input->weight)),
                            b = values_of(core_tensor(lstm.input->bias));
  auto sigmoid = [](double v) { return 1 / (1 + std::exp(-v)); };
  std::vector<double> expected_h;
  for (int64_t n = 0; n < 2; ++n) {
    std::vector<double> gate(8);
    for (int64_t c = 0; c < 8; ++c) {
      gate[c] = b[c];
      for (int64_t i = 0; i < 3; ++i) gate[c] += xs[n * 3 + i] * w[i * 8 + c];
    }
    for (int64_t u = 0; u < 2; ++u) {
      const double cell = sigmoid(gate[u]) * std::tanh(gate[4 + u]);
      expected_h.push_back(sigmoid(gate[6 + u]) * std::tanh(cell));
    }
  }
  const nn::LSTMState first = lstm.step(Tensor(x.select(1, 0)), {});
  check_close(core_tensor(first.h), expected_h, 1e-12, 1e-12);

  auto [outputs, final_state] = lstm.forward(Tensor(x));
  CHECK(outputs.shape() == core::Shape{2, 4, 2});
  nn::LSTMState state;
  for (int64_t t = 0; t < 4; ++t) {
    state = lstm.step(Tensor(x.select(1, t)), state);
    check_close(core_tensor(outputs).select(1, t), values_of(core_tensor(state.h)), 1e-12, 1e-12);
  }
  check_module("LSTM", lstm, x, [&](const Tensor& in) { return lstm.forward(in).first; });
  CHECK_THROWS_WITH_AS(lstm.forward(Tensor(core::zeros({2, 3}))), doctest::Contains("[LSTM]"), Error);
}

TEST_CASE("GRU: one step follows the gate equations, a sequence equals its steps, gradcheck") {
  Generator gen(8);
  nn::GRU gru(3, 2, gen);
  gru.to(Dtype::float64);
  const core::Tensor x = randn64({2, 4, 3}, 11), h0 = randn64({2, 2}, 12);
  // one step by hand: r, z, n from x W_x + b_x and h W_h + b_h, then h' = (1 - z) n + z h
  const std::vector<double> xs = values_of(x.select(1, 0)), hs = values_of(h0),
                            wx = values_of(core_tensor(gru.input->weight)),
                            bx = values_of(core_tensor(gru.input->bias)),
                            wh = values_of(core_tensor(gru.hidden->weight)),
                            bh = values_of(core_tensor(gru.hidden->bias));
  auto sigmoid = [](double v) { return 1 / (1 + std::exp(-v)); };
  std::vector<double> expected_h;
  for (int64_t b = 0; b < 2; ++b) {
    std::vector<double> from_x(bx), from_h(bh);  // [3H] each
    for (int64_t c = 0; c < 6; ++c) {
      for (int64_t i = 0; i < 3; ++i) from_x[c] += xs[b * 3 + i] * wx[i * 6 + c];
      for (int64_t i = 0; i < 2; ++i) from_h[c] += hs[b * 2 + i] * wh[i * 6 + c];
    }
    for (int64_t u = 0; u < 2; ++u) {
      const double reset = sigmoid(from_x[u] + from_h[u]), update = sigmoid(from_x[2 + u] + from_h[2 + u]);
      const double candidate = std::tanh(from_x[4 + u] + reset * from_h[4 + u]);
      expected_h.push_back((1 - update) * candidate + update * hs[b * 2 + u]);
    }
  }
  check_close(core_tensor(gru.step(Tensor(x.select(1, 0)), Tensor(h0))), expected_h, 1e-12, 1e-12);

  auto [outputs, final_h] = gru.forward(Tensor(x));
  CHECK(outputs.shape() == core::Shape{2, 4, 2});
  Tensor h;
  for (int64_t t = 0; t < 4; ++t) {
    h = gru.step(Tensor(x.select(1, t)), h);
    check_close(core_tensor(outputs).select(1, t), values_of(core_tensor(h)), 1e-12, 1e-12);
  }
  check_close(core_tensor(final_h), values_of(core_tensor(h)), 0, 0);
  check_module("GRU", gru, x, [&](const Tensor& in) { return gru.forward(in).first; });
  CHECK_THROWS_WITH_AS(gru.forward(Tensor(core::zeros({2, 3}))), doctest::Contains("[GRU]"), Error);
  CHECK_THROWS_WITH_AS(gru.step(Tensor(core::zeros({2, 3})), Tensor(core::zeros({2, 5}))),
                       doctest::Contains("h [2, 2]"), Error);
}
