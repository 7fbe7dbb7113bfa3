// Attention for translation: an encoder reads a string of digits and a decoder writes it reversed,
// looking back at the encoder's states through attention as it goes. The two models are
// models/translators.h's: a GRU encoder-decoder with dot-product attention, and a small
// encoder-decoder Transformer. They train through models::Trainer, as every model of axiom does
// (Adam, a warmup and a linear decay to 0 at the last step; trainer.save() would keep a checkpoint).
//
// The task is made in code: "3 1 4 1 5" -> "5 1 4 1 3", 3 to 10 digits. A fifth of all strings (by
// a hash of their digits) never appears in training; the exact-match accuracy is measured on those.
// At the end the decoder's attention over one held-out string is drawn as a picture: row t is the
// t-th output digit, column s the s-th input digit, darker is more attention (a reversal draws
// the anti-diagonal).
//
// Run: build/apps/translate_example gru attention.png        (or: transformer attention.png;
//      a third argument sets the number of training steps: 3000 for gru, 2000 for transformer)
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "apps/pictures.h"
#include "apps/progress.h"
#include "autograd/factory.h"
#include "models/models.h"

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

// `count` strings and their reversals, as the translators' examples: the source tokens [N, S]
// (the digits, then padding) and the target tokens [N, T] (the reversed digits, the end token, padding).
struct Strings {
  std::vector<std::vector<int64_t>> digits;
  Tensor source, target;
  data::TensorDataset examples() const { return {{source, target}}; }
};

Strings make_strings(int64_t count, bool from_held_out, std::mt19937_64& rng) {
  Strings strings;
  std::vector<int64_t> source, target;
  std::uniform_int_distribution<int64_t> length_of(kMinDigits, kMaxDigits), digit(0, 9);
  while (static_cast<int64_t>(strings.digits.size()) < count) {
    std::vector<int64_t> digits(length_of(rng));
    for (int64_t& d : digits) d = digit(rng);
    if (held_out(digits) != from_held_out) continue;
    const int64_t n = static_cast<int64_t>(digits.size());
    for (int64_t s = 0; s < kSource; ++s) source.push_back(s < n ? digits[s] : kPad);
    for (int64_t t = 0; t < kTarget; ++t) target.push_back(t < n ? digits[n - 1 - t] : t == n ? kEnd : kPad);
    strings.digits.push_back(digits);
  }
  strings.source = axiom::from_vector(source, {count, kSource});
  strings.target = axiom::from_vector(target, {count, kTarget});
  return strings;
}

// --- 2. the models and their training -------------------------------------------------------------

models::TranslatorConfig config_of(const std::string& which) {
  models::TranslatorConfig c;
  c.translator = which == "gru" ? models::TranslatorKind::gru : models::TranslatorKind::transformer;
  c.vocabulary = kVocabulary, c.source_length = kSource, c.target_length = kTarget, c.pad = kPad, c.begin = kBegin;
  c.features = 64, c.heads = 4, c.layers = 2;
  return c;
}

// Adam at a peak rate after 100 steps of warmup, then a linear decay to 0 at the last step; 64
// strings a step, each training string seen once.
models::TrainingOptions options_of(const std::string& which, int64_t steps) {
  models::TrainingOptions o;
  o.data = "digit reversal (made in code)";
  o.batch_size = 64, o.lr = which == "gru" ? 3e-3 : 1e-3, o.warmup_steps = 100;
  o.schedule = models::LrSchedule::linear, o.steps = steps, o.seed = 1;
  return o;
}

// The attention of example 0 as a picture: one square of `zoom` pixels per (output, input) pair,
// darker where the weight is larger; the rows run to its end token, the columns over its digits.
void draw_attention(const models::Translator& model, const Strings& strings, const std::string& path) {
  const models::Decoded d = model.decode(strings.source.narrow(0, 0, 1));
  const int64_t n = static_cast<int64_t>(strings.digits[0].size()), zoom = 24;
  const Tensor weights = d.weights.detach().select(0, 0).narrow(0, 0, n + 1).narrow(1, 0, n);  // [n + 1, n]
  std::vector<uint8_t> pixels;                                                                 // [(n + 1) zoom, n zoom]
  for (int64_t r = 0; r < (n + 1) * zoom; ++r) {
    for (int64_t c = 0; c < n * zoom; ++c) {
      pixels.push_back(static_cast<uint8_t>(std::round(255 * (1 - weights.at({r / zoom, c / zoom})))));
    }
  }
  apps::write_png(path, from_vector<uint8_t>(pixels, {(n + 1) * zoom, n * zoom}));
  std::printf("attention of the decoder over \"");
  for (int64_t x : strings.digits[0]) std::printf("%lld", static_cast<long long>(x));
  std::printf("\" written to %s (rows: output digits and the end token, columns: input digits)\n", path.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  const std::string which = argc > 1 ? argv[1] : "gru", picture = argc > 2 ? argv[2] : "attention.png";
  int64_t steps = which == "gru" ? 3000 : 2000;
  const bool steps_ok = argc <= 3 || std::from_chars(argv[3], argv[3] + std::strlen(argv[3]), steps).ptr ==
                                         argv[3] + std::strlen(argv[3]);
  if ((which != "gru" && which != "transformer") || !steps_ok || steps <= 100 || steps > 1000000 || argc > 4) {
    std::fprintf(stderr, "usage: translate_example [gru|transformer] [attention.png] [steps: 101 .. 1000000]\n");
    return 2;
  }
  std::mt19937_64 rng(2);
  const Strings held = make_strings(2000, /*from_held_out=*/true, rng);
  const Strings train = make_strings(64 * steps, /*from_held_out=*/false, rng);
  models::Trainer trainer(config_of(which), options_of(which, steps), train.examples(), models::Placement{});
  apps::Stopwatch clock;
  while (trainer.steps_done() < steps) {
    const double loss = trainer.step();
    if (trainer.steps_done() % 250 == 0) {
      std::printf("step %5lld  loss %.4f  %s\n", static_cast<long long>(trainer.steps_done()), loss,
                  apps::format_duration(clock.seconds()).c_str());
      std::fflush(stdout);
    }
  }
  const double trained = clock.seconds();
  const models::Score score = models::evaluate(trainer.model(), held.examples(), 500);
  std::printf("%s: exact match %.2f%% on %lld held-out strings (trained %lld steps of 64 in %s)\n", which.c_str(),
              100 * score.accuracy(), static_cast<long long>(score.examples), static_cast<long long>(steps),
              apps::format_duration(trained).c_str());
  draw_attention(dynamic_cast<const models::Translator&>(trainer.model()), held, picture);
  return 0;
}
