// Attention for translation: an encoder reads a sequence of tokens and a decoder writes another,
// looking back at the encoder's states through attention as it goes (the lecture's "RNN for
// machine translation", with attention: Bahdanau et al. 2015, Luong et al. 2015). Two models:
//
//   GruTranslator:          a GRU encoder; a GRU decoder that attends over the encoder's states
//                           with a dot product and feeds the last context back in with the next input
//   TransformerTranslator:  a small encoder-decoder Transformer (Vaswani et al. 2017): self-attention
//                           in the encoder, causal self-attention and cross-attention in the decoder
//
// As Learners (learner.h) they train on examples of two columns: the source tokens int64 [B, S]
// and the target tokens int64 [B, T], each padded with the pad token after its end. The decoder
// reads the target shifted right behind the begin token (teacher forcing); the loss is the mean
// cross-entropy (nats) over the target's tokens that are not padding, and the score counts the
// examples that greedy decoding writes exactly (every scored token right). The example
// apps/examples/translate.cpp trains both to reverse strings of digits.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "../nn/blocks.h"
#include "../nn/multi_head_attention.h"
#include "learner.h"

namespace axiom::models {

// Which translator, written by its name in a config.
enum class TranslatorKind { gru, transformer };
const char* name_of(TranslatorKind kind);

// A translator's config, as checkpoints record it:
//   {"translator": "gru", "vocabulary": 13, "source_length": 10, "target_length": 11,
//    "pad": 10, "begin": 11, "features": 64, "heads": 4, "layers": 2}
struct TranslatorConfig {
  TranslatorKind translator = TranslatorKind::gru;
  int64_t vocabulary = 13;                         // tokens 0 .. vocabulary-1, pad and begin among them
  int64_t source_length = 10, target_length = 11;  // S and T
  int64_t pad = 10;                                // fills sequences after their end; never attended to, never scored
  int64_t begin = 11;                              // the decoder's first input
  int64_t features = 64;                           // the GRU's hidden size, or the Transformer's D
  int64_t heads = 4, layers = 2;                   // the Transformer's heads, and its encoder and decoder layers

  void validate() const;  // throws axiom::Error("[config] ...") naming the bad key and value
  std::string to_json() const;
};
TranslatorConfig translator_config_from_json(const std::string& text, const std::string& origin);

// Greedy decoding of a batch: each step's most likely token is the next step's input.
struct Decoded {
  Tensor tokens;   // int64 [B, T]
  Tensor weights;  // float [B, T, S]: each output step's attention over the source
};

class Translator : public Learner {
 public:
  explicit Translator(const TranslatorConfig& config);
  const TranslatorConfig& config() const { return config_; }
  Device device() const override;
  int64_t columns() const override { return 2; }
  // columns: source int64 [B, S], target int64 [B, T]. The mean cross-entropy over the scored tokens.
  Tensor batch_loss(const std::vector<Tensor>& columns, Generator& gen) const override;
  // The cross-entropy summed over the scored tokens, and the examples decoded exactly.
  Score batch_score(const std::vector<Tensor>& columns) const override;

  // Teacher-forced logits [B, T, V]: source [B, S], decoder_in [B, T] (begin, then the target's tokens).
  virtual Tensor logits(const Tensor& source, const Tensor& decoder_in) const = 0;
  virtual Decoded decode(const Tensor& source) const = 0;  // greedy, under NoGrad; source [B, S]

 protected:
  Tensor source_padding(const Tensor& source) const;  // uint8 [B, S]: 1 at padding, which attention must not look at

 private:
  void check_tokens(const char* what, const Tensor& tokens, int64_t length) const;
  // A batch's columns, checked and moved to device(): source [B, S], target [B, T].
  struct Tokens {
    Tensor source, target;
  };
  Tokens tokens_of(const std::vector<Tensor>& columns) const;
  // The cross-entropy of the target's scored tokens (teacher-forced), summed, and how many they are: scalars.
  struct ScoredLoss {
    Tensor sum, tokens;
  };
  ScoredLoss scored_loss(const Tokens& tokens) const;
  int64_t decoded_exactly(const Tensor& decoded, const Tensor& target) const;
  TranslatorConfig config_;
};

std::unique_ptr<Translator> make_translator(const TranslatorConfig& config, Generator& gen);

// GRU encoder-decoder with dot-product attention and input feeding (Luong et al.):
//   states, h = GRU_enc(embed(source))                       [B, S, H], [B, H]
//   each step: h       = GRU_dec([embed(y_prev); context], h)  [B, H]
//              weights = softmax(states (W_a h), padding masked)  [B, S]
//              context = weights @ states                  [B, H]
//              logits  = Dense([h; context])               [B, V]
class GruTranslator : public Translator {
 public:
  GruTranslator(const TranslatorConfig& config, Generator& gen);
  const char* name() const override { return "GruTranslator"; }
  Tensor logits(const Tensor& source, const Tensor& decoder_in) const override;
  Decoded decode(const Tensor& source) const override;

 private:
  struct Step {
    Tensor logits, h, context, weights;
  };
  // token [B], h [B, H], context [B, H], states [B, S, H], pad uint8 [B, S]
  Step step(const Tensor& token, const Tensor& h, const Tensor& context, const Tensor& states, const Tensor& pad) const;

  std::shared_ptr<nn::Embedding> embed_;
  std::shared_ptr<nn::GRU> encoder_, decoder_;
  std::shared_ptr<nn::Dense> score_, out_;
};

// Pre-LayerNorm encoder-decoder Transformer, `layers` of each:
//   encoder layer: x = x + SelfAttention(LN(x), source padding blocked);       x = FeedforwardBlock(x)
//   decoder layer: y = y + SelfAttention(LN(y), later positions blocked);
//                  y = y + MultiHeadAttention(LN(y) over the encoder's output);    y = FeedforwardBlock(y)
//   logits = Dense(LN(y))                                                      [B, T, V]
class TransformerTranslator : public Translator {
 public:
  TransformerTranslator(const TranslatorConfig& config, Generator& gen);
  const char* name() const override { return "TransformerTranslator"; }
  Tensor logits(const Tensor& source, const Tensor& decoder_in) const override {
    return run(source, decoder_in, nullptr);
  }
  // Greedy: run the decoder on the tokens so far, take the last position's most likely token.
  // (The encoder runs again at every step too: plain, and cheap at a few steps.)
  Decoded decode(const Tensor& source) const override;

 private:
  struct EncoderLayer {
    std::shared_ptr<nn::LayerNorm> norm;
    std::shared_ptr<nn::MultiHeadAttention> attention;
    std::shared_ptr<nn::FeedforwardBlock> ff;  // x + Dense(GELU(Dense(LayerNorm(x)))), D -> 4D -> D
  };
  struct DecoderLayer {
    std::shared_ptr<nn::LayerNorm> norm;
    std::shared_ptr<nn::MultiHeadAttention> attention;
    std::shared_ptr<nn::FeedforwardBlock> ff;  // x + Dense(GELU(Dense(LayerNorm(x)))), D -> 4D -> D
    std::shared_ptr<nn::LayerNorm> cross_norm;
    std::shared_ptr<nn::MultiHeadAttention> cross;
  };

  Tensor embed(const Tensor& tokens) const;  // [B, T] -> [B, T, D], with the position table
  // Logits [B, T, V] of the decoder on `decoder_in`; *cross_weights (if asked) gets the last
  // layer's cross-attention averaged over the heads, [B, T, S].
  Tensor run(const Tensor& source, const Tensor& decoder_in, Tensor* cross_weights) const;

  std::shared_ptr<nn::Embedding> embed_;
  Tensor positions_;  // [max(S, T), D], shared by source and target
  std::vector<EncoderLayer> encoder_;
  std::vector<DecoderLayer> decoder_;
  std::shared_ptr<nn::LayerNorm> final_norm_;
  std::shared_ptr<nn::Dense> out_;
};

}  // namespace axiom::models
