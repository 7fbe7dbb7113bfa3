#include "models/translators.h"

#include <array>
#include <cmath>
#include <limits>

#include "autograd/factory.h"
#include "nn/init.h"
#include "core/error.h"
#include "core/formats/json.h"
#include "models/config.h"

namespace axiom::models {

// --- the config ----------------------------------------------------------------------------------

namespace {
constexpr core::EnumNames<TranslatorKind, 2> kTranslatorNames{
    {{TranslatorKind::gru, "gru"}, {TranslatorKind::transformer, "transformer"}}};

using Config = TranslatorConfig;
const std::array<core::JsonField<Config>, 9> kTranslatorFields{{
    {"translator", core::enum_field<&Config::translator, kTranslatorNames>()},
    {"vocabulary", &Config::vocabulary},
    {"source_length", &Config::source_length},
    {"target_length", &Config::target_length},
    {"pad", &Config::pad},
    {"begin", &Config::begin},
    {"features", &Config::features},
    {"heads", &Config::heads},
    {"layers", &Config::layers},
}};

constexpr double kMinusInfinity = -std::numeric_limits<double>::infinity();

// uint8, 1 where `tokens` hold `token`.
Tensor equals(const Tensor& tokens, int64_t token) {
  return eq(tokens, axiom::scalar(static_cast<double>(token), Dtype::int64, tokens.device()));
}

}  // namespace

const char* name_of(TranslatorKind kind) { return core::name_of(kTranslatorNames, kind); }

void TranslatorConfig::validate() const {
  check_in_range("vocabulary", vocabulary, 2, 1 << 24);
  check_in_range("source_length", source_length, 1, 1 << 16);
  check_in_range("target_length", target_length, 1, 1 << 16);
  check_in_range("pad", pad, 0, vocabulary - 1);
  check_in_range("begin", begin, 0, vocabulary - 1);
  check_in_range("features", features, 1, 1 << 20);
  check_in_range("heads", heads, 1, features);
  check_in_range("layers", layers, 0, 1000);
  if (translator == TranslatorKind::transformer && features % heads != 0) {
    throw Error("config", "features (", features, ") must be a multiple of heads (", heads, ")");
  }
}

std::string TranslatorConfig::to_json() const { return core::write_fields(*this, kTranslatorFields).dump(2); }

TranslatorConfig translator_config_from_json(const std::string& text, const std::string& origin) {
  return core::read_validated(text, kTranslatorFields, "config", origin, "translator key");
}

std::unique_ptr<Translator> make_translator(const TranslatorConfig& config, Generator& gen) {
  config.validate();
  if (config.translator == TranslatorKind::gru) return std::make_unique<GruTranslator>(config, gen);
  return std::make_unique<TransformerTranslator>(config, gen);
}

// --- training and scoring -------------------------------------------------------------------------

Translator::Translator(const TranslatorConfig& config) : config_(config) { config_.validate(); }

Device Translator::device() const { return parameters().at(0).device(); }

void Translator::check_tokens(const char* what, const Tensor& tokens, int64_t length) const {
  if (tokens.dtype() != Dtype::int64 || tokens.dim() != 2 || tokens.size(1) != length) {
    throw Error(name(), what, " must be int64 [B, ", length, "], got ", tokens.dtype(), " ", tokens.shape());
  }
}

Tensor Translator::source_padding(const Tensor& source) const { return equals(source, config_.pad); }

namespace {
// What the decoder reads while learning: the begin token, then the target's tokens but its last, [B, T].
Tensor shifted_right(const Tensor& target, int64_t begin) {
  const Tensor first = axiom::full({target.size(0), 1}, static_cast<double>(begin), Dtype::int64, target.device());
  return concat({first, target.narrow(1, 0, target.size(1) - 1)}, 1);
}
}  // namespace

Translator::Tokens Translator::tokens_of(const std::vector<Tensor>& columns) const {
  if (columns.size() != 2)
    throw Error(name(), "examples are two columns, source and target tokens; got ", columns.size());
  check_tokens("the source", columns[0], config_.source_length);
  check_tokens("the target", columns[1], config_.target_length);
  return {columns[0].to(device()), columns[1].to(device())};
}

Translator::ScoredLoss Translator::scored_loss(const Tokens& tokens) const {
  const Tensor& source = tokens.source;
  const Tensor& target = tokens.target;
  const Tensor each = cross_entropy(logits(source, shifted_right(target, config_.begin)), target,
                                    {.reduction = Reduction::none});  // [B, T]
  const Tensor scored =
      mul(sub(equals(target, config_.pad).to(each.dtype()), 1.0), -1.0);  // [B, T]: 1 where not padding
  return {sum(mul(each, scored)), sum(scored)};
}

Tensor Translator::batch_loss(const std::vector<Tensor>& columns, Generator&) const {
  const ScoredLoss loss = scored_loss(tokens_of(columns));
  return div(loss.sum, loss.tokens);
}

Score Translator::batch_score(const std::vector<Tensor>& columns) const {
  NoGrad no_grad;
  const Tokens tokens = tokens_of(columns);
  const ScoredLoss loss = scored_loss(tokens);
  return {.loss = loss.sum.item(),
          .count = static_cast<int64_t>(loss.tokens.item()),
          .examples = tokens.target.size(0),
          .correct = decoded_exactly(decode(tokens.source).tokens, tokens.target)};
}

// How many rows of `decoded` get every token right that their target scores (target, decoded: int64 [B, T]).
int64_t Translator::decoded_exactly(const Tensor& decoded, const Tensor& target) const {
  const Tensor fine =
      add(equals(target, config_.pad).to(Dtype::int64), eq(decoded, target).to(Dtype::int64));  // [B, T]: 0 where wrong
  const Tensor wrong_tokens = sum(equals(fine, 0).to(Dtype::int64), {1});                       // [B]
  return static_cast<int64_t>(sum(equals(wrong_tokens, 0).to(Dtype::int64)).item());
}

// --- the GRU translator ---------------------------------------------------------------------------

GruTranslator::GruTranslator(const TranslatorConfig& c, Generator& gen) : Translator(c) {
  const int64_t hidden = c.features;
  embed_ = register_module("embed", std::make_shared<nn::Embedding>(c.vocabulary, hidden, gen));
  encoder_ = register_module("encoder", std::make_shared<nn::GRU>(hidden, hidden, gen));
  decoder_ = register_module("decoder", std::make_shared<nn::GRU>(2 * hidden, hidden, gen));
  score_ = register_module("score", std::make_shared<nn::Dense>(hidden, hidden, gen, nn::DenseOptions{.bias = false}));
  out_ = register_module("out", std::make_shared<nn::Dense>(2 * hidden, c.vocabulary, gen));
}

GruTranslator::Step GruTranslator::step(const Tensor& token, const Tensor& h, const Tensor& context,
                                        const Tensor& states, const Tensor& pad) const {
  const Tensor h_next = decoder_->step(concat({embed_->forward(token), context}, 1), h);    // [B, H]
  const Tensor scores = matmul(states, score_->forward(h_next).unsqueeze(-1)).squeeze(-1);  // [B, S]
  const Tensor weights = softmax(masked_fill(scores, pad, kMinusInfinity), 1);
  const Tensor context_next = matmul(weights.unsqueeze(1), states).squeeze(1);  // [B, H]
  return {out_->forward(concat({h_next, context_next}, 1)), h_next, context_next, weights};
}

Tensor GruTranslator::logits(const Tensor& source, const Tensor& decoder_in) const {
  auto [states, h] = encoder_->forward(embed_->forward(source));
  const Tensor pad = source_padding(source);
  Tensor context = zeros_like(h);
  std::vector<Tensor> all;
  for (int64_t t = 0; t < decoder_in.size(1); ++t) {
    const Step s = step(decoder_in.select(1, t), h, context, states, pad);
    h = s.h, context = s.context;
    all.push_back(s.logits);
  }
  return stack(all, 1);  // [B, T, V]
}

Decoded GruTranslator::decode(const Tensor& source) const {
  NoGrad no_grad;
  auto [states, h] = encoder_->forward(embed_->forward(source));
  const Tensor pad = source_padding(source);
  Tensor context = zeros_like(h);
  Tensor token = axiom::full({source.size(0)}, static_cast<double>(config().begin), Dtype::int64, source.device());
  std::vector<Tensor> tokens, weights;
  for (int64_t t = 0; t < config().target_length; ++t) {
    const Step s = step(token, h, context, states, pad);
    h = s.h, context = s.context, token = argmax(s.logits, 1);
    tokens.push_back(token), weights.push_back(s.weights);
  }
  return {stack(tokens, 1), stack(weights, 1)};
}

// --- the Transformer translator -------------------------------------------------------------------

TransformerTranslator::TransformerTranslator(const TranslatorConfig& c, Generator& gen) : Translator(c) {
  const int64_t d = c.features;
  embed_ = register_module("embed", std::make_shared<nn::Embedding>(c.vocabulary, d, gen));
  positions_ =
      register_parameter("positions", nn::init::normal({std::max(c.source_length, c.target_length), d}, 0, 0.1, gen));
  for (int64_t i = 0; i < c.layers; ++i) {
    const std::string n = std::to_string(i);
    encoder_.push_back(
        {register_module("encoder_norm" + n, std::make_shared<nn::LayerNorm>(d)),
         register_module("encoder_attention" + n, std::make_shared<nn::MultiHeadAttention>(d, c.heads, gen)),
         register_module("encoder_ff" + n, std::make_shared<nn::FeedforwardBlock>(d, gen))});
    decoder_.push_back(
        {register_module("decoder_norm" + n, std::make_shared<nn::LayerNorm>(d)),
         register_module("decoder_attention" + n, std::make_shared<nn::MultiHeadAttention>(d, c.heads, gen)),
         register_module("decoder_ff" + n, std::make_shared<nn::FeedforwardBlock>(d, gen)),
         register_module("cross_norm" + n, std::make_shared<nn::LayerNorm>(d)),
         register_module("cross_attention" + n, std::make_shared<nn::MultiHeadAttention>(d, c.heads, gen))});
  }
  final_norm_ = register_module("final_norm", std::make_shared<nn::LayerNorm>(d));
  out_ = register_module("out", std::make_shared<nn::Dense>(d, c.vocabulary, gen));
}

Tensor TransformerTranslator::embed(const Tensor& tokens) const {
  return add(embed_->forward(tokens), positions_.narrow(0, 0, tokens.size(1)));
}

Tensor TransformerTranslator::run(const Tensor& source, const Tensor& decoder_in, Tensor* cross_weights) const {
  const int64_t batch = source.size(0), s = source.size(1), t = decoder_in.size(1);
  const Tensor source_blocked = source_padding(source).reshape({batch, 1, 1, s});  // [B, 1, 1, S]
  const Tensor positions = axiom::arange(t, source.device());
  const Tensor later_blocked = gt(positions.reshape({1, t}), positions.reshape({t, 1}));  // [T, T]
  Tensor x = embed(source);
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
    if (cross_weights) *cross_weights = mean(weights, {1});  // [B, T, S]
  }
  return out_->forward(final_norm_->forward(y));
}

Decoded TransformerTranslator::decode(const Tensor& source) const {
  NoGrad no_grad;
  const int64_t batch = source.size(0), length = config().target_length;
  Tensor in = axiom::full({batch, length}, static_cast<double>(config().pad), Dtype::int64, source.device());
  copy_into(axiom::full({batch}, static_cast<double>(config().begin), Dtype::int64, source.device()), in.select(1, 0));
  Tensor weights;
  std::vector<Tensor> tokens;
  for (int64_t t = 0; t < length; ++t) {
    tokens.push_back(argmax(run(source, in, &weights).select(1, t), 1));  // [B]
    if (t + 1 < length) copy_into(tokens.back(), in.select(1, t + 1));    // the next step's input
  }
  return {stack(tokens, 1), weights};
}

}  // namespace axiom::models
