// The image models: the free sanity check at initialisation, causality in raster and channel
// order, the decoders stepped pixel by pixel, the two samplers agreeing, and gradients, for the
// Axial Transformer and for the RasterTransformer (attention full, local1d, local2d).
#include <cmath>
#include <utility>

#include "models/models.h"
#include "tests/support/gradients.h"
#include "autograd/internal.h"

using namespace axiom;

namespace {

models::ImageModelConfig tiny_config(int64_t channels = 1, models::Inner inner = models::Inner::transformer) {
  models::ImageModelConfig c;
  c.height = 4, c.width = 5, c.channels = channels, c.features = 8, c.heads = 2;
  c.upper_layers = 2, c.row_layers = 2, c.encoder_layers = 2, c.ff_multiple = 2, c.inner = inner;
  return c;
}

// The raster models on the same 4 x 5 images, with blocks that do not divide the image.
models::ImageModelConfig raster_config(models::Attention attention, int64_t channels = 1) {
  models::ImageModelConfig c = tiny_config(channels);
  c.attention = attention, c.local_length = 6, c.local_rows = 2, c.local_columns = 2;
  return c;
}
const std::vector<models::Attention> kRasterAttention{models::Attention::full, models::Attention::local1d,
                                                      models::Attention::local2d};

// Every parameter redrawn from N(0, 0.5): nothing near zero, so every path that exists shows up.
void randomize(models::ImageModel& model, uint64_t seed) {
  Generator gen(seed);
  for (const auto& [name, p] : model.named_parameters()) {
    core::copy_into(core::normal(p.shape(), 0, 0.5, gen, p.dtype()), core_tensor(p));
  }
}

Tensor random_images(const Shape& shape, uint64_t seed) {
  Generator gen(seed);
  return Tensor(core::randint(shape, 0, 256, gen, Dtype::uint8));
}

}  // namespace

TEST_CASE("an untrained model predicts the uniform distribution: 8.00 bits per dimension") {
  for (const models::Inner inner : {models::Inner::transformer, models::Inner::lstm}) {
    for (int64_t channels : {1, 3}) {
      for (const models::Init init : {models::Init::pytorch, models::Init::authors}) {
        for (const models::Positions positions : {models::Positions::separate, models::Positions::shared}) {
          CAPTURE(inner);
          CAPTURE(channels);
          CAPTURE(init);
          CAPTURE(positions);
          Generator gen(1);
          models::ImageModelConfig config = tiny_config(channels, inner);
          config.init = init, config.positions = positions;
          models::AxialTransformer model(config, gen);
          const Shape shape = channels == 1 ? Shape{3, 4, 5} : Shape{3, channels, 4, 5};
          CHECK(model.loss(random_images(shape, 2), gen).item() == doctest::Approx(8.0).epsilon(1e-6));
          CHECK(model.evaluate(random_images(shape, 3)).bits_per_dim() == doctest::Approx(8.0).epsilon(1e-6));
        }
      }
    }
  }
}

TEST_CASE("relative positions: 8.00 bits per dimension at initialisation, and a table in every attention layer") {
  for (int64_t channels : {1, 3}) {
    CAPTURE(channels);
    Generator gen(1);
    models::ImageModelConfig config = tiny_config(channels);
    config.relative = 2;
    models::AxialTransformer model(config, gen);
    const Shape shape = channels == 1 ? Shape{3, 4, 5} : Shape{3, channels, 4, 5};
    CHECK(model.loss(random_images(shape, 2), gen).item() == doctest::Approx(8.0).epsilon(1e-6));
    int64_t tables = 0;
    for (const auto& [name, p] : model.named_parameters()) {
      if (!name.ends_with("attention.relative")) continue;
      ++tables;
      CHECK(p.shape() == Shape{5, 4});  // [2M + 1, D / heads]
    }
    CHECK(tables == (channels == 1 ? 2 + 2 : 2 + 2 + 2));  // outer, inner (and encoder) blocks
  }
}

namespace {
core::Tensor parameter(const models::ImageModel& model, const std::string& name) {
  for (const auto& [n, p] : model.named_parameters()) {
    if (n == name) return core_tensor(p);
  }
  FAIL("no parameter named ", name);
  return {};
}

double standard_deviation(const core::Tensor& t) {
  const std::vector<double> v = test::values_of(t);
  double sum = 0, squares = 0;
  for (double x : v) sum += x, squares += x * x;
  const double mean = sum / static_cast<double>(v.size());
  return std::sqrt(squares / static_cast<double>(v.size()) - mean * mean);
}

bool all_zero(const core::Tensor& t) { return core::sum(core::abs(t)).item() == 0; }
}  // namespace

// The two inits of config.h, told apart by the spread of what they draw (thousands of values each:
// a deviation within a few percent of its target).
TEST_CASE("init: \"pytorch\" and \"authors\" draw the embeddings, positions and Dense layers as config.h says") {
  models::ImageModelConfig config;  // 28 x 28, D = 64
  config.features = 64, config.heads = 4, config.upper_layers = 2, config.row_layers = 1;
  Generator gen(21);
  config.init = models::Init::authors;
  const models::AxialTransformer authors(config, gen);
  const double d = 5 / std::sqrt(64.0);  // 5 / sqrt(D)
  CHECK(standard_deviation(parameter(authors, "embedding.weight")) == doctest::Approx(d).epsilon(0.03));
  CHECK(standard_deviation(parameter(authors, "outer_position.axis_1")) == doctest::Approx(d).epsilon(0.06));
  CHECK(standard_deviation(parameter(authors, "inner_position.axis_2")) == doctest::Approx(d).epsilon(0.06));
  CHECK(standard_deviation(parameter(authors, "outer.0.attention.attention.qkv.weight")) ==
        doctest::Approx(1 / 8.0).epsilon(0.03));
  CHECK(standard_deviation(parameter(authors, "inner.0.feedforward.up.weight")) ==
        doctest::Approx(1 / 8.0).epsilon(0.03));
  CHECK(standard_deviation(parameter(authors, "inner.0.feedforward.down.weight")) ==
        0);  // the residual branch starts at zero
  CHECK(all_zero(parameter(authors, "outer.0.attention.attention.qkv.bias")));
  CHECK(all_zero(parameter(authors, "outer.1.feedforward.up.bias")));
  CHECK(all_zero(parameter(authors, "outer.1.attention.attention.out.weight")));
  CHECK(all_zero(parameter(authors, "logits.weight")));

  config.init = models::Init::pytorch;
  const models::AxialTransformer pytorch(config, gen);
  CHECK(standard_deviation(parameter(pytorch, "embedding.weight")) == doctest::Approx(1.0).epsilon(0.03));
  CHECK(standard_deviation(parameter(pytorch, "outer_position.axis_1")) == doctest::Approx(0.02).epsilon(0.06));
  CHECK(standard_deviation(parameter(pytorch, "outer.0.attention.attention.qkv.weight")) ==
        doctest::Approx(1 / 8.0 / std::sqrt(3.0)).epsilon(0.03));  // U(-1/8, 1/8)
  CHECK_FALSE(all_zero(parameter(pytorch, "outer.0.attention.attention.qkv.bias")));
  CHECK(all_zero(parameter(pytorch, "outer.1.attention.attention.out.weight")));
}

TEST_CASE("positions: \"shared\" gives both decoders one set of tables; \"separate\" one each") {
  models::ImageModelConfig config = tiny_config(2);
  config.positions = models::Positions::shared;
  Generator gen(22);
  const models::AxialTransformer shared(config, gen);
  for (const auto& [name, p] : shared.named_parameters()) CHECK_MESSAGE(name.rfind("inner_position", 0) != 0, name);
  CHECK(test::values_of(core_tensor(shared.inner_position(0, 4))) ==
        test::values_of(core::add(parameter(shared, "outer_position.axis_1").reshape({4, 1, 8}),
                                  parameter(shared, "outer_position.axis_2").reshape({1, 5, 8}))));
  CHECK_FALSE(all_zero(parameter(shared, "encoder_position.axis_1")));  // the channel encoder keeps its own
  config.positions = models::Positions::separate;
  const models::AxialTransformer separate(config, gen);
  CHECK(separate.named_parameters().size() == shared.named_parameters().size() + 2);
  CHECK_FALSE(all_zero(parameter(separate, "inner_position.axis_1")));
}

// The log-probability of pixel (i, j) must not depend on the embedding of (i, j) itself or of any
// pixel after it in raster order, and must depend on some before it. Removing ShiftRight, ShiftDown
// or a mask breaks this (tried: each makes this test fail at the first pixel that sees itself or
// the row below).
TEST_CASE("the logits of every pixel depend only on the pixels before it in raster order") {
  std::vector<models::ImageModelConfig> configs{tiny_config(1, models::Inner::transformer),
                                                tiny_config(1, models::Inner::lstm), tiny_config(1)};
  configs[2].relative = 2;
  for (const models::Attention attention : kRasterAttention) configs.push_back(raster_config(attention));
  for (const models::ImageModelConfig& config : configs) {
    CAPTURE(config.to_json());
    Generator gen(3);
    const std::unique_ptr<models::ImageModel> made = models::make_image_model(config, gen);
    models::ImageModel& model = *made;
    model.to(Dtype::float64);
    randomize(model, 4);
    const core::Tensor images = core_tensor(model.as_channels(random_images({2, 4, 5}, 5)));
    const core::Tensor values = images.select(1, 0).contiguous();
    const int64_t h = 4, w = 5;
    for (int64_t i = 0; i < h; ++i) {
      for (int64_t j = 0; j < w; ++j) {
        const Tensor embedded(core_tensor(model.embed(Tensor(values))),
                              /*requires_grad=*/true);                     // the input embeddings, a leaf
        const Tensor log_p = log_softmax(model.decode(embedded, {}), -1);  // [B, H, W, 256]
        sum(log_p.select(1, i).select(1, j).select(-1, 7)).backward();
        const core::Tensor influence = core::sum(core::abs(core_tensor(embedded.grad())), {0, 3});  // [H, W]
        bool some_earlier = i == 0 && j == 0;
        for (int64_t r = 0; r < h; ++r) {
          for (int64_t c = 0; c < w; ++c) {
            const bool earlier = r < i || (r == i && c < j);
            const double g = influence.at({r, c});
            if (!earlier) CHECK_MESSAGE(g == 0, "pixel (", i, ", ", j, ") depends on (", r, ", ", c, ")");
            some_earlier = some_earlier || (earlier && g > 0);
          }
        }
        CHECK_MESSAGE(some_earlier, "pixel (", i, ", ", j, ") depends on nothing before it");
      }
    }
  }
}

TEST_CASE("channel c depends on channels before it and not on itself or later ones") {
  for (const models::Attention attention : {models::Attention::axial, models::Attention::local2d}) {
    CAPTURE(attention);
    Generator gen(6);
    const std::unique_ptr<models::ImageModel> made = models::make_image_model(raster_config(attention, 3), gen);
    models::ImageModel& model = *made;
    model.to(Dtype::float64);
    randomize(model, 7);
    const Tensor images = random_images({2, 3, 4, 5}, 8).to(Dtype::int64);
    for (int64_t c = 0; c < 3; ++c) {
      const Tensor channel = axiom::full({2}, static_cast<double>(c), Dtype::int64);
      const core::Tensor base = core_tensor(model.logits(images, channel));
      for (int64_t k = 0; k < 3; ++k) {
        if (k == c) continue;  // its own channel is the decoder's input, checked above
        core::Tensor changed = core_tensor(images).clone();
        core::copy_into(core::full({2, 4, 5}, 255 - 3.0 * k, Dtype::int64), changed.select(1, k));
        const double difference =
            core::max(core::abs(core::sub(core_tensor(model.logits(Tensor(changed), channel)), base))).item();
        if (k < c) CHECK_MESSAGE(difference > 0, "channel ", c, " ignores earlier channel ", k);
        if (k > c) CHECK_MESSAGE(difference == 0, "channel ", c, " depends on later channel ", k);
      }
    }
  }
}

// What sample_fast relies on: the inner decoder stepped pixel by pixel (key/value caches, or the
// LSTM's state) gives, for every pixel of a row, the logits the whole-row inner() gives.
TEST_CASE("the inner decoder stepped one pixel at a time equals the inner decoder on the whole row") {
  for (const models::Inner inner : {models::Inner::transformer, models::Inner::lstm}) {
    CAPTURE(inner);
    Generator gen(18);
    models::AxialTransformer model(tiny_config(1, inner), gen);
    model.to(Dtype::float64);
    randomize(model, 19);
    NoGrad no_grad;
    const Tensor z(core::randn({3, 1, 5, 8}, gen, Dtype::float64));       // [B, 1 row, W, D]
    const core::Tensor whole = core_tensor(model.inner(z)).select(1, 0);  // [B, W, 256]
    models::InnerRowState row = model.start_inner_row();
    for (int64_t j = 0; j < 5; ++j) {
      CAPTURE(j);
      const core::Tensor step = core_tensor(model.inner_step(z.select(1, 0).select(1, j), row));  // [B, 256]
      CHECK(core::max(core::abs(core::sub(step, whole.select(1, j)))).item() < 1e-10);
    }
  }
}

// The other half of sample_fast: the outer decoder stepped row by row (the column blocks' caches)
// gives, for every row, what outer() gives on the whole image; with the channel encoder's context too.
TEST_CASE("the outer decoder stepped one row at a time equals the outer decoder on the whole image") {
  for (int64_t channels : {1, 2}) {
    CAPTURE(channels);
    Generator gen(20);
    models::AxialTransformer model(tiny_config(channels), gen);
    model.to(Dtype::float64);
    randomize(model, 21);
    NoGrad no_grad;
    const Tensor images = random_images(channels == 1 ? Shape{3, 4, 5} : Shape{3, channels, 4, 5}, 22);
    const core::Tensor all = core_tensor(model.as_channels(images));  // [B, C, H, W]
    const Tensor channel = axiom::full({3}, static_cast<double>(channels - 1), Dtype::int64);
    const Tensor h = model.embed(Tensor(all.select(1, channels - 1).contiguous()));  // [B, H, W, D]
    const Tensor context = model.encode(Tensor(all), channel);
    const core::Tensor whole = core_tensor(model.outer(h, context));  // [B, H, W, D]
    models::OuterRowState rows = model.start_outer_rows();
    for (int64_t i = 0; i < 4; ++i) {
      CAPTURE(i);
      const Tensor context_row = context.defined() ? context.select(1, i) : Tensor();
      const core::Tensor step = core_tensor(model.outer_step(h.select(1, i), context_row, rows));  // [B, W, D]
      CHECK(core::max(core::abs(core::sub(step, whole.select(1, i)))).item() < 1e-10);
    }
    CHECK_THROWS_WITH_AS(model.outer_step(h.select(1, 0), Tensor(), rows), doctest::Contains("all 4 rows"), Error);
  }
}

// sample_fast steps the outer and inner decoders with their caches (or the LSTM's state);
// sample_naive runs the whole model. Both inner decoders, one and two channels, separate and shared
// position tables.
TEST_CASE("the semi-parallel sampler makes exactly the naive sampler's images") {
  struct Case {
    int64_t channels;
    models::Inner inner;
    models::Positions positions;
    int64_t relative = 0;
    models::Attention attention = models::Attention::axial;
  };
  constexpr auto T = models::Inner::transformer, L = models::Inner::lstm;
  constexpr auto S = models::Positions::separate, SH = models::Positions::shared;
  for (const Case& c :
       {Case{1, T, S}, Case{1, L, S}, Case{2, T, S}, Case{2, L, S}, Case{1, T, SH}, Case{2, T, SH}, Case{1, T, S, 2},
        Case{2, T, S, 3}, Case{1, T, S, 0, models::Attention::full}, Case{2, T, S, 0, models::Attention::local1d},
        Case{1, T, S, 0, models::Attention::local2d}, Case{2, T, S, 0, models::Attention::local2d}}) {
    CAPTURE(c.channels);
    CAPTURE(c.inner);
    CAPTURE(c.positions);
    CAPTURE(c.relative);
    CAPTURE(c.attention);
    Generator gen(9);
    models::ImageModelConfig config = raster_config(c.attention, c.channels);
    config.inner = c.inner, config.positions = c.positions, config.relative = c.relative;
    const std::unique_ptr<models::ImageModel> made = models::make_image_model(config, gen);
    models::ImageModel& model = *made;
    randomize(model, 10);
    const models::SampleOptions options{.count = 2, .temperature = 1.0, .seed = 11};
    const core::Tensor naive = core_tensor(models::sample_naive(model, options));
    const core::Tensor fast = core_tensor(models::sample_fast(model, options));
    CHECK(naive.shape() == (c.channels == 1 ? Shape{2, 4, 5} : Shape{2, c.channels, 4, 5}));
    CHECK(core::sum(core::ne(naive, fast)).item() == 0);
    // not a constant image: the test can fail
    CHECK(core::max(naive.to(Dtype::int64)).item() != core::max(core::neg(naive.to(Dtype::int64))).item() * -1);
    const core::Tensor other = core_tensor(models::sample_fast(model, {.count = 2, .temperature = 1.0, .seed = 12}));
    CHECK(core::sum(core::ne(naive, other)).item() > 0);
  }
}

// The noise of image n is a function of the seed and n alone: a batch's first image is the image
// that the same seed draws alone.
TEST_CASE("a sampled image does not depend on the batch it is drawn in") {
  for (const models::Attention attention : {models::Attention::axial, models::Attention::local2d}) {
    CAPTURE(attention);
    Generator gen(9);
    const std::unique_ptr<models::ImageModel> made = models::make_image_model(raster_config(attention, 2), gen);
    models::ImageModel& model = *made;
    randomize(model, 10);
    const core::Tensor alone = core_tensor(models::sample_fast(model, {.count = 1, .temperature = 1.0, .seed = 5}));
    const core::Tensor batch = core_tensor(models::sample_fast(model, {.count = 3, .temperature = 1.0, .seed = 5}));
    CHECK(core::sum(core::ne(alone.select(0, 0), batch.select(0, 0))).item() == 0);
    CHECK(core::sum(core::ne(batch.select(0, 0), batch.select(0, 1))).item() >
          0);  // the images differ: the test can fail
  }
}

TEST_CASE("gradcheck of the whole tiny model in float64") {
  Generator gen(13);
  models::ImageModelConfig config = tiny_config(2);
  config.height = 2, config.width = 3, config.upper_layers = 2, config.row_layers = 1, config.encoder_layers = 1;
  models::AxialTransformer model(config, gen);
  model.to(Dtype::float64);
  randomize(model, 14);
  const Tensor images = random_images({2, 2, 2, 3}, 15);
  const std::vector<Tensor> parameters = model.parameters();
  test::check_grad("AxialTransformer loss",
                   [&](const std::vector<Tensor>&) {
                     Generator fixed(16);  // the same channel choice every call
                     return model.loss(images, fixed);
                   },
                   parameters, {.full_jacobian = false, .projections = 4});
}

// --- the raster models --------------------------------------------------------------------------

TEST_CASE(
    "raster models: 8.00 bits per dimension at initialisation, upper_layers + row_layers blocks, one set of "
    "positions") {
  for (const models::Attention attention : kRasterAttention) {
    for (int64_t channels : {1, 3}) {
      CAPTURE(attention);
      CAPTURE(channels);
      Generator gen(1);
      models::RasterTransformer model(raster_config(attention, channels), gen);
      const Shape shape = channels == 1 ? Shape{3, 4, 5} : Shape{3, channels, 4, 5};
      CHECK(model.loss(random_images(shape, 2), gen).item() == doctest::Approx(8.0).epsilon(1e-6));
      CHECK(model.evaluate(random_images(shape, 3)).bits_per_dim() == doctest::Approx(8.0).epsilon(1e-6));
      CHECK(model.block_count() == 4 + (channels == 1 ? 0 : 2));  // 2 + 2 decoder blocks (and the encoder's 2)
      int64_t position_tables = 0;
      for (const auto& [name, p] : model.named_parameters()) position_tables += name.starts_with("position.") ? 1 : 0;
      CHECK(position_tables == 2);  // one table per axis
    }
  }
}

// What the raster sampler relies on: the decoder stepped pixel by pixel with its caches gives the
// logits that decode() gives on the whole image, with the channel encoder's context too.
TEST_CASE("raster models: the decoder stepped one pixel at a time equals the decoder on the whole image") {
  for (const models::Attention attention : kRasterAttention) {
    CAPTURE(attention);
    Generator gen(23);
    models::RasterTransformer model(raster_config(attention, 2), gen);
    model.to(Dtype::float64);
    randomize(model, 24);
    NoGrad no_grad;
    const core::Tensor all = core_tensor(model.as_channels(random_images({3, 2, 4, 5}, 25)));  // [B, C, H, W]
    const Tensor channel = axiom::full({3}, 1.0, Dtype::int64);
    const core::Tensor values = all.select(1, 1).contiguous();
    const Tensor context = model.encode(Tensor(all), channel);
    const core::Tensor whole = core_tensor(model.decode(model.embed(Tensor(values)), context));  // [B, H, W, 256]
    models::RasterState state = model.start_raster();
    for (int64_t t = 0; t < 20; ++t) {
      CAPTURE(t);
      const int64_t i = t / 5, j = t % 5;
      Tensor z = add(model.positions().select(0, i).select(0, j), context.select(1, i).select(1, j));  // [B, D]
      if (t > 0) z = add(z, model.embed(Tensor(values.select(1, (t - 1) / 5).select(1, (t - 1) % 5).contiguous())));
      const core::Tensor step = core_tensor(model.raster_step(z, state));  // [B, 256]
      CHECK(core::max(core::abs(core::sub(step, whole.select(1, i).select(1, j)))).item() < 1e-10);
    }
  }
}

TEST_CASE("raster models: gradcheck of the whole model in float64") {
  for (const models::Attention attention : kRasterAttention) {
    CAPTURE(attention);
    Generator gen(26);
    models::ImageModelConfig config = raster_config(attention, 2);
    config.height = 3, config.width = 3, config.upper_layers = 0, config.row_layers = 2, config.encoder_layers = 1;
    models::RasterTransformer model(config, gen);
    model.to(Dtype::float64);
    randomize(model, 27);
    const Tensor images = random_images({2, 2, 3, 3}, 28);
    test::check_grad("raster model loss",
                     [&](const std::vector<Tensor>&) {
                       Generator fixed(29);
                       return model.loss(images, fixed);
                     },
                     model.parameters(), {.full_jacobian = false, .projections = 4});
  }
}

TEST_CASE("each model class takes only its own configs, and make_image_model picks the class") {
  Generator gen(30);
  CHECK_THROWS_WITH_AS(models::AxialTransformer(raster_config(models::Attention::local1d), gen),
                       "[AxialTransformer] attention must be \"axial\", got \"local1d\" (a RasterTransformer; "
                       "make_image_model picks the class)",
                       Error);
  CHECK_THROWS_WITH_AS(models::RasterTransformer(tiny_config(), gen),
                       doctest::Contains("got \"axial\" (an AxialTransformer"), Error);
  CHECK(std::string(models::make_image_model(tiny_config(), gen)->name()) == "AxialTransformer");
  for (const models::Attention attention : kRasterAttention) {
    CHECK(std::string(models::make_image_model(raster_config(attention), gen)->name()) == "RasterTransformer");
  }
  models::ImageModelConfig bad = tiny_config();
  bad.heads = 3;  // does not divide D = 8
  CHECK_THROWS_WITH_AS(models::make_image_model(bad, gen), doctest::Contains("multiple of heads"), Error);
}

TEST_CASE("the decoders' steps check their input, and a pixel decoder stops at the channel's end") {
  Generator gen(31);
  const models::RasterTransformer raster(raster_config(models::Attention::local1d), gen);
  NoGrad no_grad;
  models::RasterState state = raster.start_raster();
  CHECK_THROWS_WITH_AS(raster.raster_step(Tensor(core::zeros({2, 3})), state), doctest::Contains("z_t [B, 8]"), Error);
  const models::AxialTransformer axial(tiny_config(), gen);
  models::InnerRowState row = axial.start_inner_row();
  CHECK_THROWS_WITH_AS(axial.inner_step(Tensor(core::zeros({2, 3})), row), doctest::Contains("z_j [B, 8]"), Error);
  for (const models::ImageModel* model : std::initializer_list<const models::ImageModel*>{&raster, &axial}) {
    CAPTURE(model->name());
    const Tensor images = axiom::zeros({2, 1, 4, 5}, Dtype::int64);
    const std::unique_ptr<models::PixelDecoder> decoder = model->start_decoding(images, 0);
    for (int64_t t = 0; t < 20; ++t) CHECK(decoder->next().shape() == Shape{2, 256});
    CHECK_THROWS_WITH_AS(decoder->next(), doctest::Contains("every pixel of the channel has been decoded"), Error);
  }
}

TEST_CASE("bad images are errors that say what was expected") {
  Generator gen(17);
  models::AxialTransformer model(tiny_config(), gen);
  CHECK_THROWS_WITH_AS(model.loss(axiom::zeros({2, 4, 6}, Dtype::uint8), gen), doctest::Contains("[AxialTransformer]"),
                       Error);
  CHECK_THROWS_AS(model.loss(axiom::zeros({2, 4, 5}), gen), Error);                    // float pixels
  CHECK_THROWS_AS(model.loss(axiom::full({2, 4, 5}, 300, Dtype::int64), gen), Error);  // out of range
}

TEST_CASE(
    "the Hessian-vector product of a small Axial Transformer's loss agrees with finite differences of its gradient") {
  Generator gen(11);
  models::AxialTransformer model(tiny_config(1), gen);
  model.to(Dtype::float64);
  randomize(model, 12);
  const Tensor images(random_images({2, 4, 5}, 13));
  const std::vector<Tensor> parameters = model.parameters();
  auto loss = [&] {
    Generator channels(14);  // the same channels every time (one channel here anyway)
    return model.loss(images, channels);
  };
  std::vector<Tensor> direction;  // v: one random tensor per parameter
  Generator draw(15);
  for (const Tensor& p : parameters) direction.emplace_back(core::randn(p.shape(), draw, Dtype::float64));
  // H v: the gradient of <grad loss, v>, through a graph of the backward pass
  const std::vector<Tensor> first = grad({loss()}, parameters, {}, {.create_graph = true, .allow_unused = true});
  Tensor projected;
  for (size_t i = 0; i < parameters.size(); ++i) {
    if (!first[i].defined()) continue;
    const Tensor term = sum(mul(first[i], direction[i]));
    projected = projected.defined() ? add(projected, term) : term;
  }
  const std::vector<Tensor> hv = grad({projected}, parameters, {}, {.allow_unused = true});
  // (grad(p + eps v) - grad(p - eps v)) / (2 eps), every parameter moved at once
  const double eps = 1e-5;
  auto gradient_moved_by = [&](double step) {
    for (size_t i = 0; i < parameters.size(); ++i) {
      core::copy_into(core::add(core_tensor(parameters[i]), core::mul(core_tensor(direction[i]), step)),
                      core_tensor(parameters[i]));
    }
    std::vector<Tensor> g = grad({loss()}, parameters, {}, {.allow_unused = true});
    for (size_t i = 0; i < parameters.size(); ++i) {
      core::copy_into(core::sub(core_tensor(parameters[i]), core::mul(core_tensor(direction[i]), step)),
                      core_tensor(parameters[i]));
    }
    return g;
  };
  const std::vector<Tensor> plus = gradient_moved_by(eps), minus = gradient_moved_by(-eps);
  double difference = 0, size = 0;
  int64_t compared = 0;
  for (size_t i = 0; i < parameters.size(); ++i) {
    if (!hv[i].defined()) continue;
    const core::Tensor numerical = core::div(core::sub(core_tensor(plus[i]), core_tensor(minus[i])), 2 * eps);
    const core::Tensor error = core::sub(numerical, core_tensor(hv[i]));
    difference += core::sum(core::mul(error, error)).item();
    size += core::sum(core::mul(numerical, numerical)).item();
    compared += hv[i].numel();
  }
  MESSAGE("H v over ", compared,
          " parameters: |numerical - analytical| / |numerical| = ", std::sqrt(difference / size));
  CHECK(compared > 1000);
  CHECK(size > 0);
  CHECK(std::sqrt(difference / size) < 1e-6);
}
