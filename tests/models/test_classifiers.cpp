// The classifiers of `axiom classify`: the ViT's patches in their documented order, logits of the
// right shape, gradchecks of both models in float64, and errors for images of the wrong shape.
#include "models/classifiers.h"
#include "tests/support/gradients.h"
#include "autograd/internal.h"

using namespace axiom;
using axiom::test::check_close;
using test::check_grad;

namespace {

// gradcheck of model.forward(images) with respect to the images and every parameter.
void check_classifier(const std::string& what, models::Classifier& model, const Tensor& images) {
  model.to(Dtype::float64);
  std::vector<Tensor> inputs{Tensor(core_tensor(images), true)};
  for (const Tensor& p : model.parameters()) inputs.push_back(p);
  check_grad(
      what, [&](const std::vector<Tensor>& in) { return model.forward(in[0]); }, inputs);
}

}  // namespace

TEST_CASE("ViT: patches in raster order, each patch's pixels in raster order") {
  Generator gen(1);
  models::VisionTransformer vit(4, 6, {.patch = 2, .features = 4, .heads = 2, .layers = 1}, gen);
  const Tensor image(core::arange(0, 24, 1, Dtype::float32).reshape({1, 4, 6}));  // pixel (r, c) holds 6 r + c
  const Tensor patches = vit.patches(image);                                      // [1, 6, 4]
  CHECK(patches.shape() == Shape{1, 6, 4});
  // patch 0: rows 0-1, columns 0-1; patch 1: columns 2-3; patch 3: rows 2-3, columns 0-1
  check_close(core_tensor(patches).select(1, 0), {0, 1, 6, 7}, 0, 0);
  check_close(core_tensor(patches).select(1, 1), {2, 3, 8, 9}, 0, 0);
  check_close(core_tensor(patches).select(1, 3), {12, 13, 18, 19}, 0, 0);
}

TEST_CASE("classifiers: logits [B, 10] and gradchecks in float64 of a tiny ViT, GRU and LSTM reader") {
  Generator gen(2);
  const Tensor images(core::uniform({2, 4, 4}, 0, 1, gen, Dtype::float64));
  models::VisionTransformer vit(4, 4, {.patch = 2, .features = 4, .heads = 2, .layers = 1, .classes = 10}, gen);
  CHECK(vit.forward(models::pixels_to_unit(axiom::zeros({3, 4, 4}, Dtype::uint8))).shape() == Shape{3, 10});
  check_classifier("VisionTransformer", vit, images);
  for (const models::ClassifierKind cell : {models::ClassifierKind::gru, models::ClassifierKind::lstm}) {
    CAPTURE(models::name_of(cell));
    models::RowReader reader(cell, 4, 3, 10, gen);
    CHECK(reader.forward(models::pixels_to_unit(axiom::zeros({3, 4, 4}, Dtype::uint8))).shape() == Shape{3, 10});
    check_classifier(models::name_of(cell), reader, images);
  }
}

TEST_CASE("classifiers: images of the wrong shape, a patch that does not divide the image, an unknown cell") {
  Generator gen(3);
  models::VisionTransformer vit(4, 4, {.patch = 2, .features = 4, .heads = 2, .layers = 1}, gen);
  CHECK_THROWS_WITH_AS(vit.forward(Tensor(core::zeros({2, 4, 6}))),
                       doctest::Contains("expected images [B, 4, 4], got [2, 4, 6]"), Error);
  CHECK_THROWS_WITH_AS(models::VisionTransformer(28, 28, {.patch = 5}, gen), doctest::Contains("patch size (5)"),
                       Error);
  models::RowReader reader(models::ClassifierKind::gru, 4, 3, 10, gen);
  CHECK_THROWS_WITH_AS(reader.forward(Tensor(core::zeros({2, 4, 5}))), doctest::Contains("rows of 4 pixels"), Error);
  CHECK_THROWS_WITH_AS(models::RowReader(models::ClassifierKind::vit, 4, 3, 10, gen),
                       doctest::Contains("gru or lstm, got vit"), Error);
  CHECK_THROWS_WITH_AS(models::pixels_to_unit(axiom::zeros({2, 4, 4})), doctest::Contains("uint8"), Error);
}
