// Attention for translation: an encoder reads a string of digits and a decoder writes it reversed,
// looking back at the encoder's states through attention as it goes (the lecture's "RNN for
// machine translation", with attention: Bahdanau et al. 2015, Luong et al. 2015). Two models:
//
//   gru:          a GRU encoder; a GRU decoder that attends over the encoder's states with a dot
//                 product and feeds the last context back in with the next input
//   transformer:  a small encoder-decoder Transformer (Vaswani et al. 2017): self-attention in the
//                 encoder, causal self-attention and cross-attention in the decoder
//
// The task is made in code: "3 1 4 1 5" -> "5 1 4 1 3", 3 to 10 digits. A fifth of all strings (by
// a hash of their digits) never appears in training; the exact-match accuracy is measured on those.
// At the end the decoder's attention over one held-out string is drawn as a picture: row t is the
// t-th output digit, column s the s-th input digit, darker is more attention (a reversal draws
// the anti-diagonal).
//
// Run: build/apps/translate_example gru attention.png        (or: transformer attention.png;
//      a third argument sets the number of training steps: 3000 for gru, 2000 for transformer)
#include <cmath>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "apps/pictures.h"
#include "apps/progress.h"
#include "autograd/factory.h"
#include "core/error.h"
#include "core/factory.h"
#include "core/ops.h"
#include "nn/nn.h"
#include "optim/optim.h"

using namespace axiom;

namespace {

// --- 1. the task --------------------------------------------------------------------------------
// Tokens: the digits 0..9, then padding, begin and end.
constexpr int64_t kPad = 10, kBegin = 11, kEnd = 12, kVocabulary = 13;
constexpr int64_t kMinDigits = 3, kMaxDigits = 10;
constexpr int64_t kSource = kMaxDigits, kTarget = kMaxDigits + 1;  // the end token follows the digits

// A fifth of all strings is held out of training: those whose FNV-1a hash is 0 mod 5.
bool held_out(const std::vector<int64_t>& digits) {
  uint64_t hash = 14695981039346656037ull;
  for (int64_t d : digits) hash = (hash ^ static_cast<uint64_t>(d + 1)) * 1099511628211ull;
  return hash % 5 == 0;
}

struct Batch {
  std::vector<std::vector<int64_t>> digits;  // the source strings
  Tensor source;       // int64 [B, S]: digits, then padding
  Tensor decoder_in;   // int64 [B, T]: begin, the reversed digits, padding
  Tensor target;       // int64 [B, T]: the reversed digits, end, padding (padding is not scored)
  Tensor source_pad;   // uint8 [B, S]: 1 at padding, which attention must not look at
  Tensor target_mask;  // float [B, T]: 1 where the target is scored
};

Batch make_batch(int64_t count, bool from_held_out, std::mt19937_64& rng) {
  Batch b;
  std::vector<int64_t> source, decoder_in, target, pad;
  std::vector<float> mask;
  std::uniform_int_distribution<int64_t> length_of(kMinDigits, kMaxDigits), digit(0, 9);
  while (static_cast<int64_t>(b.digits.size()) < count) {
    std::vector<int64_t> digits(length_of(rng));
    for (int64_t& d : digits) d = digit(rng);
    if (held_out(digits) != from_held_out) continue;
    const std::vector<int64_t> reversed(digits.rbegin(), digits.rend());
    const int64_t n = static_cast<int64_t>(digits.size());
    for (int64_t s = 0; s < kSource; ++s) source.push_back(s < n ? digits[s] : kPad), pad.push_back(s < n ? 0 : 1);
    for (int64_t t = 0; t < kTarget; ++t) {
      decoder_in.push_back(t == 0 ? kBegin : t <= n ? reversed[t - 1] : kPad);
      target.push_back(t < n ? reversed[t] : t == n ? kEnd : kPad);
      mask.push_back(t <= n ? 1.0f : 0.0f);
    }
    b.digits.push_back(digits);
  }
  auto ints = [count](const std::vector<int64_t>& v, int64_t length) { return Tensor(core::from_vector(v, {count, length})); };
  b.source = ints(source, kSource), b.decoder_in = ints(decoder_in, kTarget), b.target = ints(target, kTarget);
  b.source_pad = Tensor(core::from_vector(pad, {count, kSource}).to(Dtype::uint8));
  b.target_mask = Tensor(core::from_vector(mask, {count, kTarget}));
  return b;
}

// --- 2. the models --------------------------------------------------------------------------------
// Both give teacher-forced logits for training, and decode greedily (each step's most likely
// token is the next step's input) returning the tokens and the attention over the source.

struct Decoded {
  std::vector<int64_t> tokens;                  // of example 0 ... of the batch: [B][T] flattened
  core::Tensor weights;                         // float [B, T, S]: each output step's attention over the source
};

class Translator : public nn::Module {
 public:
  virtual Tensor logits(const Batch& b) const = 0;   // [B, T, V], the target's tokens fed in
  virtual Decoded decode(const Batch& b) const = 0;  // greedy, under NoGrad
};

// GRU encoder-decoder with dot-product attention and input feeding (Luong et al.):
//   states, h = GRU_enc(embed(source))                       [B, S, H], [B, H]
//   each step: h       = GRU_dec([embed(y_prev); context], h)  [B, H]
//              weights = softmax(states (W_a h), padding masked)  [B, S]
//              context = weights @ states                  [B, H]
//              logits  = Dense([h; context])               [B, V]
class GruTranslator : public Translator {
 public:
  GruTranslator(int64_t hidden, core::Generator& gen) {
    embed_ = register_module("embed", std::make_shared<nn::Embedding>(kVocabulary, hidden, gen));
    encoder_ = register_module("encoder", std::make_shared<nn::GRU>(hidden, hidden, gen));
    decoder_ = register_module("decoder", std::make_shared<nn::GRU>(2 * hidden, hidden, gen));
    score_ = register_module("score", std::make_shared<nn::Dense>(hidden, hidden, gen, nn::DenseOptions{.bias = false}));
    out_ = register_module("out", std::make_shared<nn::Dense>(2 * hidden, kVocabulary, gen));
  }

  Tensor logits(const Batch& b) const override {
    auto [states, h] = encoder_->forward(embed_->forward(b.source));
    Tensor context = zeros_of(h);
    std::vector<Tensor> all;
    for (int64_t t = 0; t < kTarget; ++t) {
      Step s = step(b.decoder_in.select(1, t), h, context, states, b.source_pad);
      h = s.h, context = s.context;
      all.push_back(s.logits);
    }
    return stack(all, 1);  // [B, T, V]
  }

  Decoded decode(const Batch& b) const override {
    NoGrad no_grad;
    auto [states, h] = encoder_->forward(embed_->forward(b.source));
    Tensor context = zeros_of(h), token = axiom::full({b.source.size(0)}, kBegin, Dtype::int64);
    std::vector<Tensor> tokens, weights;
    for (int64_t t = 0; t < kTarget; ++t) {
      Step s = step(token, h, context, states, b.source_pad);
      h = s.h, context = s.context, token = argmax(s.logits, 1);
      tokens.push_back(token), weights.push_back(s.weights);
    }
    return {values(stack(tokens, 1)), stack(weights, 1).data()};
  }

 private:
  struct Step {
    Tensor logits, h, context, weights;
  };
  // token [B], h [B, H], context [B, H], states [B, S, H], pad uint8 [B, S]
  Step step(const Tensor& token, const Tensor& h, const Tensor& context, const Tensor& states, const Tensor& pad) const {
    const Tensor h_next = decoder_->step(concat({embed_->forward(token), context}, 1), h);               // [B, H]
    Tensor scores = matmul(states, score_->forward(h_next).unsqueeze(-1)).squeeze(-1);                  // [B, S]
    const Tensor weights = softmax(masked_fill(scores, pad, -std::numeric_limits<double>::infinity()), 1);
    const Tensor context_next = matmul(weights.unsqueeze(1), states).squeeze(1);                        // [B, H]
    return {out_->forward(concat({h_next, context_next}, 1)), h_next, context_next, weights};
  }
  static Tensor zeros_of(const Tensor& x) { return axiom::zeros(x.shape(), x.dtype(), x.device()); }
  static std::vector<int64_t> values(const Tensor& t) { return t.data().to_vector<int64_t>(); }

  std::shared_ptr<nn::Embedding> embed_;
  std::shared_ptr<nn::GRU> encoder_, decoder_;
  std::shared_ptr<nn::Dense> score_, out_;
};

// Multi-head attention of queries [B, Tq, D] over keys and values [B, Tk, D]. `blocked` is uint8,
// 1 where a query may not look, and broadcasts to [B, heads, Tq, Tk]. Returns the mixed values
// [B, Tq, D] and the weights [B, heads, Tq, Tk].
class Attention : public nn::Module {
 public:
  Attention(int64_t features, int64_t heads, core::Generator& gen) : heads_(heads) {
    if (heads <= 0 || features % heads != 0) throw Error("Attention", "features (", features, ") must be a multiple of heads (", heads, ")");
    for (const char* name : {"query", "key", "value", "out"}) {
      layers_.push_back(register_module(name, std::make_shared<nn::Dense>(features, features, gen)));
    }
  }
  std::pair<Tensor, Tensor> forward(const Tensor& x, const Tensor& memory, const Tensor& blocked) const {
    const int64_t batch = x.size(0), features = x.size(2), depth = features / heads_;
    auto split = [&](const Tensor& t) { return t.reshape({batch, t.size(1), heads_, depth}).transpose(1, 2); };  // [B, h, T, Dh]
    const Tensor q = split(layers_[0]->forward(x)), k = split(layers_[1]->forward(memory)), v = split(layers_[2]->forward(memory));
    const Tensor scores = mul(matmul(q, k.transpose(-1, -2)), 1 / std::sqrt(static_cast<double>(depth)));  // [B, h, Tq, Tk]
    const Tensor weights = softmax(masked_fill(scores, blocked, -std::numeric_limits<double>::infinity()), -1);
    const Tensor mixed = matmul(weights, v).transpose(1, 2).reshape({batch, x.size(1), features});          // [B, Tq, D]
    return {layers_[3]->forward(mixed), weights};
  }

 private:
  int64_t heads_;
  std::vector<std::shared_ptr<nn::Dense>> layers_;  // query, key, value, out
};

// x + Dense(GELU(Dense(LayerNorm(x)))), widths D -> 4D -> D
class FeedForward : public nn::Module {
 public:
  FeedForward(int64_t features, core::Generator& gen) {
    norm_ = register_module("norm", std::make_shared<nn::LayerNorm>(features));
    up_ = register_module("up", std::make_shared<nn::Dense>(features, 4 * features, gen));
    down_ = register_module("down", std::make_shared<nn::Dense>(4 * features, features, gen));
  }
  Tensor forward(const Tensor& x) const { return add(x, down_->forward(gelu(up_->forward(norm_->forward(x))))); }

 private:
  std::shared_ptr<nn::LayerNorm> norm_;
  std::shared_ptr<nn::Dense> up_, down_;
};

// Pre-LayerNorm encoder-decoder Transformer, `layers` of each:
//   encoder layer: x = x + SelfAttention(LN(x), source padding blocked);       x = FeedForward(x)
//   decoder layer: y = y + SelfAttention(LN(y), later positions blocked);
//                  y = y + CrossAttention(LN(y) over the encoder's output);    y = FeedForward(y)
//   logits = Dense(LN(y))                                                      [B, T, V]
class TransformerTranslator : public Translator {
 public:
  TransformerTranslator(int64_t features, int64_t heads, int64_t layers, core::Generator& gen) {
    embed_ = register_module("embed", std::make_shared<nn::Embedding>(kVocabulary, features, gen));
    positions_ = register_parameter("positions", axiom::normal({kTarget, features}, 0, 0.1, gen));
    for (int64_t i = 0; i < layers; ++i) {
      const std::string n = std::to_string(i);
      encoder_.push_back({register_module("encoder_norm" + n, std::make_shared<nn::LayerNorm>(features)),
                          register_module("encoder_attention" + n, std::make_shared<Attention>(features, heads, gen)),
                          register_module("encoder_ff" + n, std::make_shared<FeedForward>(features, gen))});
      decoder_.push_back({register_module("decoder_norm" + n, std::make_shared<nn::LayerNorm>(features)),
                          register_module("decoder_attention" + n, std::make_shared<Attention>(features, heads, gen)),
                          register_module("decoder_ff" + n, std::make_shared<FeedForward>(features, gen)),
                          register_module("cross_norm" + n, std::make_shared<nn::LayerNorm>(features)),
                          register_module("cross_attention" + n, std::make_shared<Attention>(features, heads, gen))});
    }
    final_norm_ = register_module("final_norm", std::make_shared<nn::LayerNorm>(features));
    out_ = register_module("out", std::make_shared<nn::Dense>(features, kVocabulary, gen));
  }

  Tensor logits(const Batch& b) const override { return run(b, b.decoder_in, nullptr); }

  // Greedy: run the decoder on the tokens so far, take the last position's most likely token.
  // (The encoder runs again at every step too: plain, and cheap at 11 steps.)
  Decoded decode(const Batch& b) const override {
    NoGrad no_grad;
    const int64_t batch = b.source.size(0);
    std::vector<int64_t> tokens(batch * kTarget, kPad);
    core::Tensor in = core::full({batch, kTarget}, kPad, Dtype::int64), weights;
    for (int64_t t = 0; t < kTarget; ++t) {
      for (int64_t i = 0; i < batch; ++i) in.set({i, t}, t == 0 ? kBegin : tokens[i * kTarget + t - 1]);
      const core::Tensor next = argmax(run(b, Tensor(in), &weights).select(1, t), 1).data().contiguous();  // [B]
      for (int64_t i = 0; i < batch; ++i) tokens[i * kTarget + t] = static_cast<int64_t>(next.at({i}));
    }
    return {tokens, weights};
  }

 private:
  struct EncoderLayer {
    std::shared_ptr<nn::LayerNorm> norm;
    std::shared_ptr<Attention> attention;
    std::shared_ptr<FeedForward> ff;
  };
  struct DecoderLayer {
    std::shared_ptr<nn::LayerNorm> norm;
    std::shared_ptr<Attention> attention;
    std::shared_ptr<FeedForward> ff;
    std::shared_ptr<nn::LayerNorm> cross_norm;
    std::shared_ptr<Attention> cross;
  };

  Tensor embed(const Tensor& tokens) const {  // [B, T] -> [B, T, D], with the position table
    return add(embed_->forward(tokens), positions_.narrow(0, 0, tokens.size(1)));
  }

  // Logits [B, T, V] of the decoder on `decoder_in`; *cross_weights (if asked) gets the last layer's
  // cross-attention averaged over the heads, [B, T, S].
  Tensor run(const Batch& b, const Tensor& decoder_in, core::Tensor* cross_weights) const {
    const int64_t batch = b.source.size(0);
    const Tensor source_blocked = b.source_pad.reshape({batch, 1, 1, kSource});  // [B, 1, 1, S]
    const core::Tensor positions = core::arange(kTarget);
    const Tensor later_blocked(core::gt(positions.reshape({1, kTarget}), positions.reshape({kTarget, 1})));  // [T, T]
    Tensor x = embed(b.source);
    for (const EncoderLayer& l : encoder_) {
      const Tensor normed = l.norm->forward(x);
      x = l.ff->forward(add(x, l.attention->forward(normed, normed, source_blocked).first));
    }
    Tensor y = embed(decoder_in);
    for (const DecoderLayer& l : decoder_) {
      const Tensor normed = l.norm->forward(y);
      y = add(y, l.attention->forward(normed, normed, later_blocked).first);
      auto [mixed, weights] = l.cross->forward(l.cross_norm->forward(y), x, source_blocked);
      y = l.ff->forward(add(y, mixed));
      if (cross_weights) *cross_weights = mean(weights, {1}).data();  // [B, T, S]
    }
    return out_->forward(final_norm_->forward(y));
  }

  std::shared_ptr<nn::Embedding> embed_;
  Tensor positions_;  // [T, D], shared by source and target (T >= S)
  std::vector<EncoderLayer> encoder_;
  std::vector<DecoderLayer> decoder_;
  std::shared_ptr<nn::LayerNorm> final_norm_;
  std::shared_ptr<nn::Dense> out_;
};

// --- 3. training and measuring -------------------------------------------------------------------

// Mean cross-entropy over the scored target positions (padding after the end token is not scored).
Tensor loss_of(const Translator& model, const Batch& b) {
  const Tensor each = cross_entropy(model.logits(b), b.target, {.reduction = Reduction::none});  // [B, T]
  return div(sum(mul(each, b.target_mask)), sum(b.target_mask));
}

// The share of the batch decoded exactly: the reversed digits, then the end token.
double exact_match(const Translator& model, const Batch& b) {
  const Decoded d = model.decode(b);
  int64_t right = 0;
  for (size_t i = 0; i < b.digits.size(); ++i) {
    const std::vector<int64_t>& digits = b.digits[i];
    const int64_t n = static_cast<int64_t>(digits.size());
    bool same = d.tokens[i * kTarget + n] == kEnd;
    for (int64_t t = 0; t < n; ++t) same = same && d.tokens[i * kTarget + t] == digits[n - 1 - t];
    right += same;
  }
  return static_cast<double>(right) / static_cast<double>(b.digits.size());
}

// The attention of example 0 as a picture: one square of `zoom` pixels per (output, input) pair,
// darker where the weight is larger; the rows run to its end token, the columns over its digits.
void draw_attention(const Translator& model, const Batch& b, const std::string& path) {
  const Decoded d = model.decode(b);
  const int64_t n = static_cast<int64_t>(b.digits[0].size()), zoom = 24;
  const core::Tensor weights = d.weights.select(0, 0).narrow(0, 0, n + 1).narrow(1, 0, n);  // [n + 1, n]
  core::Tensor picture = core::empty({(n + 1) * zoom, n * zoom}, Dtype::uint8);
  for (int64_t r = 0; r < picture.size(0); ++r) {
    for (int64_t c = 0; c < picture.size(1); ++c) {
      picture.set({r, c}, std::round(255 * (1 - weights.at({r / zoom, c / zoom}))));
    }
  }
  apps::write_png(path, picture);
  std::printf("attention of the decoder over \"");
  for (int64_t x : b.digits[0]) std::printf("%lld", static_cast<long long>(x));
  std::printf("\" written to %s (rows: output digits and the end token, columns: input digits)\n", path.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  const std::string which = argc > 1 ? argv[1] : "gru", picture = argc > 2 ? argv[2] : "attention.png";
  int64_t steps = which == "gru" ? 3000 : 2000;
  const bool steps_ok = argc <= 3 || std::from_chars(argv[3], argv[3] + std::strlen(argv[3]), steps).ptr == argv[3] + std::strlen(argv[3]);
  if ((which != "gru" && which != "transformer") || !steps_ok || steps <= 100 || steps > 1000000 || argc > 4) {
    std::fprintf(stderr, "usage: translate_example [gru|transformer] [attention.png] [steps: 101 .. 1000000]\n");
    return 2;
  }
  core::Generator gen(1);
  std::mt19937_64 rng(2);
  std::unique_ptr<Translator> model;
  if (which == "gru") model = std::make_unique<GruTranslator>(64, gen);
  else model = std::make_unique<TransformerTranslator>(64, 4, 2, gen);

  const double peak_lr = which == "gru" ? 3e-3 : 1e-3;
  optim::Adam adam(model->named_parameters(), {.lr = peak_lr, .betas = {0.9, 0.98}});
  const optim::Schedule schedule = optim::Schedule::linear(peak_lr, {.steps = 100}, steps - 100);  // 0 at the last step
  const Batch held = make_batch(2000, /*from_held_out=*/true, rng);
  apps::Stopwatch clock;
  for (int64_t step = 0; step < steps; ++step) {
    const Batch b = make_batch(64, /*from_held_out=*/false, rng);
    adam.set_lr(schedule.lr(step));
    const Tensor loss = loss_of(*model, b);
    adam.zero_grad();
    loss.backward();
    adam.step();
    if ((step + 1) % 250 == 0) {
      std::printf("step %5lld  loss %.4f  %s\n", static_cast<long long>(step + 1), loss.item(),
                  apps::format_duration(clock.seconds()).c_str());
      std::fflush(stdout);
    }
  }
  const double trained = clock.seconds();
  std::printf("%s: exact match %.2f%% on %zu held-out strings (trained %lld steps of 64 in %s)\n", which.c_str(),
              100 * exact_match(*model, held), held.digits.size(), static_cast<long long>(steps),
              apps::format_duration(trained).c_str());
  draw_attention(*model, held, picture);
  return 0;
}
