// The translators (models/translators.h): configs read and refused by key, gradchecks of both
// models' loss in float64, the Transformer decoder's causality, the score's exact matches counted
// as greedy decoding gives them, and a run through the Trainer that resumes bit for bit.
#include <unistd.h>

#include <filesystem>

#include "models/models.h"
#include "tests/support/gradients.h"
#include "autograd/internal.h"

using namespace axiom;
using test::check_grad;

namespace {

// Tokens 0..3, pad 4, begin 5; sources of 3 tokens, targets of 4.
models::TranslatorConfig tiny(models::TranslatorKind kind) {
  models::TranslatorConfig c;
  c.translator = kind, c.vocabulary = 6, c.source_length = 3, c.target_length = 4, c.pad = 4, c.begin = 5;
  c.features = 4, c.heads = 2, c.layers = 1;
  return c;
}

// Three examples, padded after their ends (the target's last real token plays the end token).
std::vector<Tensor> examples() {
  const Tensor source = axiom::from_vector<int64_t>({0, 1, 2, 3, 3, 4, 2, 4, 4}, {3, 3});
  const Tensor target = axiom::from_vector<int64_t>({2, 1, 0, 3, 3, 3, 1, 4, 2, 1, 4, 4}, {3, 4});
  return {source, target};
}

const std::vector<models::TranslatorKind> kKinds{models::TranslatorKind::gru, models::TranslatorKind::transformer};

}  // namespace

TEST_CASE("translator configs: JSON both ways, refused keys, and the ModelConfig that names them") {
  const models::TranslatorConfig c = tiny(models::TranslatorKind::transformer);
  CHECK(models::translator_config_from_json(c.to_json(), "t").to_json() == c.to_json());
  const models::ModelConfig any = models::model_config_from_json(c.to_json(), "t");
  REQUIRE(std::holds_alternative<models::TranslatorConfig>(any));
  CHECK_THROWS_WITH_AS(models::translator_config_from_json(R"({"translator": "lstm"})", "t"),
                       "[config] t: translator must be \"gru\" or \"transformer\", got \"lstm\"", Error);
  CHECK_THROWS_WITH_AS(models::translator_config_from_json(R"({"translator": "gru", "pad": 13})", "t"),
                       "[config] t: pad must be in [0, 12], got 13", Error);
  models::TranslatorConfig bad = c;
  bad.heads = 3;
  CHECK_THROWS_WITH_AS(bad.validate(), "[config] features (4) must be a multiple of heads (3)", Error);
}

TEST_CASE("translators: gradchecks of the loss in float64, with respect to every parameter") {
  for (const models::TranslatorKind kind : kKinds) {
    CAPTURE(models::name_of(kind));
    Generator gen(3);
    const std::unique_ptr<models::Translator> model = models::make_translator(tiny(kind), gen);
    model->to(Dtype::float64);
    const std::vector<Tensor> batch = examples();
    check_grad(models::name_of(kind), [&](const std::vector<Tensor>&) { return model->batch_loss(batch, gen); },
               model->parameters(), {.full_jacobian = false, .projections = 4});
  }
}

TEST_CASE("the Transformer translator's logits at step t do not depend on the decoder's later inputs") {
  Generator gen(4);
  const models::TransformerTranslator model(tiny(models::TranslatorKind::transformer), gen);
  const Tensor source = examples()[0];
  const Tensor in = axiom::from_vector<int64_t>({5, 0, 1, 2, 5, 3, 3, 3, 5, 2, 1, 0}, {3, 4});
  const core::Tensor base = core_tensor(model.logits(source, in));
  for (int64_t t = 1; t < 4; ++t) {
    CAPTURE(t);
    core::Tensor changed = core_tensor(in).clone();
    core::copy_into(core::full({3}, 3, Dtype::int64), changed.select(1, t));
    const core::Tensor after = core_tensor(model.logits(source, Tensor(changed)));
    CHECK(core::max(core::abs(core::sub(after.narrow(1, 0, t), base.narrow(1, 0, t)))).item() == 0);
    CHECK(core::max(core::abs(core::sub(after.narrow(1, t, 4 - t), base.narrow(1, t, 4 - t)))).item() >
          0);  // it can fail
  }
}

TEST_CASE("a translator's score: the scored tokens' cross-entropy, and the examples greedy decoding writes exactly") {
  for (const models::TranslatorKind kind : kKinds) {
    CAPTURE(models::name_of(kind));
    Generator gen(5);
    const std::unique_ptr<models::Translator> model = models::make_translator(tiny(kind), gen);
    const std::vector<Tensor> batch = examples();
    const models::Score score = model->batch_score(batch);
    CHECK(score.count == 9);  // 4 + 3 + 2 tokens before the padding
    CHECK(score.examples == 3);
    CHECK(score.mean_loss() == doctest::Approx(model->batch_loss(batch, gen).item()).epsilon(1e-6));
    // an example is right when its decoded tokens match the target wherever the target is not padding
    const core::Tensor decoded = core_tensor(model->decode(batch[0]).tokens);
    const core::Tensor target = core_tensor(batch[1]);
    int64_t right = 0;
    for (int64_t i = 0; i < 3; ++i) {
      bool all = true;
      for (int64_t t = 0; t < 4; ++t) all = all && (target.at({i, t}) == 4 || decoded.at({i, t}) == target.at({i, t}));
      right += all;
    }
    CHECK(score.correct == right);
    // its own greedy output, as the target, is decoded exactly; and still so with the last token
    // turned to padding, which is not scored
    CHECK(model->batch_score({batch[0], Tensor(decoded)}).correct == 3);
    core::Tensor padded = decoded.clone();
    core::copy_into(core::full({3}, 4, Dtype::int64), padded.select(1, 3));
    CHECK(core::sum(core::eq(padded, decoded).to(Dtype::int64)).item() <
          12);  // padding replaced some token: the test can fail
    CHECK(model->batch_score({batch[0], Tensor(padded)}).correct == 3);
  }
}

TEST_CASE("a translator trains through the Trainer, and a checkpoint resumes bit for bit") {
  models::TrainingOptions o;
  o.data = "made in the test", o.batch_size = 3, o.lr = 1e-2, o.warmup_steps = 1, o.seed = 2;
  const std::vector<Tensor> batch = examples();
  const data::TensorDataset dataset{{batch[0], batch[1]}};
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("axiom_translator_test_" + std::to_string(::getpid()));
  for (const models::TranslatorKind kind : kKinds) {
    CAPTURE(models::name_of(kind));
    models::Trainer straight(tiny(kind), o, dataset, {});
    for (int i = 0; i < 4; ++i) straight.step();
    models::Trainer first(tiny(kind), o, dataset, {});
    for (int i = 0; i < 2; ++i) first.step();
    first.save(dir.string());
    models::Trainer resumed(models::read_checkpoint(dir.string()), dataset, {});
    for (int i = 0; i < 2; ++i) resumed.step();
    const auto a = straight.model().named_parameters(), b = resumed.model().named_parameters();
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i)
      CHECK(test::values_of(core_tensor(a[i].second)) == test::values_of(core_tensor(b[i].second)));
    std::filesystem::remove_all(dir);
  }
}
