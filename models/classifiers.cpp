#include "models/classifiers.h"

#include <array>

#include "autograd/factory.h"
#include "nn/init.h"
#include "core/error.h"
#include "core/formats/json.h"
#include "models/config.h"
#include "core/launch.h"

namespace axiom::models {

// --- the config ----------------------------------------------------------------------------------

namespace {
constexpr core::EnumNames<ClassifierKind, 3> kClassifierNames{
    {{ClassifierKind::vit, "vit"}, {ClassifierKind::gru, "gru"}, {ClassifierKind::lstm, "lstm"}}};

using Config = ClassifierConfig;
const std::array<core::JsonField<Config>, 9> kClassifierFields{{
    {"classifier", core::enum_field<&Config::classifier, kClassifierNames>()},
    {"height", &Config::height},
    {"width", &Config::width},
    {"classes", &Config::classes},
    {"features", &Config::features},
    {"heads", &Config::heads},
    {"layers", &Config::layers},
    {"ff_multiple", &Config::ff_multiple},
    {"patch", &Config::patch},
}};
}  // namespace

const char* name_of(ClassifierKind kind) { return core::name_of(kClassifierNames, kind); }

void ClassifierConfig::validate() const {
  constexpr int64_t kMaxSide = 1 << 16;
  check_in_range("height", height, 1, kMaxSide);
  check_in_range("width", width, 1, kMaxSide);
  check_in_range("classes", classes, 1, 1 << 20);
  check_in_range("features", features, 1, 1 << 20);
  check_in_range("heads", heads, 1, features);
  check_in_range("layers", layers, 0, 100000);
  check_in_range("ff_multiple", ff_multiple, 1, 1024);
  check_in_range("patch", patch, 1, kMaxSide);
  if (classifier != ClassifierKind::vit) return;
  if (features % heads != 0)
    throw Error("config", "features (", features, ") must be a multiple of heads (", heads, ")");
  if (height % patch != 0 || width % patch != 0) {
    throw Error("config", "patch (", patch, ") must divide the images' height and width (", height, " x ", width, ")");
  }
}

std::string ClassifierConfig::to_json() const { return core::write_fields(*this, kClassifierFields).dump(2); }

ClassifierConfig classifier_config_from_json(const std::string& text, const std::string& origin) {
  return core::read_validated(text, kClassifierFields, "config", origin, "classifier key");
}

std::unique_ptr<Classifier> make_classifier(const ClassifierConfig& c, Generator& gen) {
  c.validate();
  if (c.classifier == ClassifierKind::vit) {
    const VisionTransformerOptions options{.patch = c.patch,
                                           .features = c.features,
                                           .heads = c.heads,
                                           .layers = c.layers,
                                           .ff_multiple = c.ff_multiple,
                                           .classes = c.classes};
    return std::make_unique<VisionTransformer>(c.height, c.width, options, gen);
  }
  return std::make_unique<RowReader>(c.classifier, c.width, c.features, c.classes, gen);
}

// --- training and scoring -------------------------------------------------------------------------

Device Classifier::device() const { return parameters().at(0).device(); }

Tensor Classifier::logits_of(const std::vector<Tensor>& columns, Tensor& labels) const {
  if (columns.size() != 2) throw Error(name(), "examples are two columns, images and labels; got ", columns.size());
  const Tensor& images = columns[0];
  labels = columns[1];
  if (labels.dtype() != Dtype::int64 || labels.dim() != 1 || labels.size(0) != images.size(0)) {
    throw Error(name(), "labels must be int64 [", images.size(0), "], one per image, got ", labels.dtype(), " ",
                labels.shape());
  }
  labels = labels.to(device());
  return forward(pixels_to_unit(images.to(device())).to(parameters().at(0).dtype()));  // [B, classes]
}

Tensor Classifier::batch_loss(const std::vector<Tensor>& columns, Generator&) const {
  Tensor labels;
  const Tensor logits = logits_of(columns, labels);
  return cross_entropy(logits, labels);
}

Score Classifier::batch_score(const std::vector<Tensor>& columns) const {
  NoGrad no_grad;
  Tensor labels;
  const Tensor logits = logits_of(columns, labels);
  const int64_t b = labels.size(0);
  const double loss = cross_entropy(logits, labels, {.reduction = Reduction::sum}).item();
  const double right = sum(eq(argmax(logits, 1), labels).to(Dtype::int64)).item();
  return {.loss = loss, .count = b, .examples = b, .correct = static_cast<int64_t>(right)};
}

Tensor pixels_to_unit(const Tensor& images) {
  if (images.dtype() != Dtype::uint8) throw Error("pixels_to_unit", "expected uint8 images, got ", images.dtype());
  return mul(images.to(Dtype::float32), 1.0 / 255);
}

namespace {
void check_images(const char* model, const Tensor& images, int64_t height, int64_t width) {
  if (images.dim() != 3 || images.size(1) != height || images.size(2) != width) {
    throw Error(model, "expected images [B, ", height, ", ", width, "], got ", images.shape());
  }
}
}  // namespace

// --- Vision Transformer --------------------------------------------------------------------------

VisionTransformer::VisionTransformer(int64_t height, int64_t width, const VisionTransformerOptions& o, Generator& gen)
    : height_(height), width_(width), patch_(o.patch) {
  if (height <= 0 || width <= 0 || o.patch <= 0 || height % o.patch != 0 || width % o.patch != 0) {
    throw Error("VisionTransformer", "the patch size (", o.patch, ") must divide the image's ", height, " x ", width);
  }
  if (o.features <= 0 || o.heads <= 0 || o.features % o.heads != 0 || o.classes <= 0) {
    throw Error("VisionTransformer", "features (", o.features, ") must be a positive multiple of heads (", o.heads,
                ") and classes (", o.classes, ") positive");
  }
  const int64_t tokens = (height / o.patch) * (width / o.patch) + 1;  // the patches and the class token
  embed_ = register_module("embed", std::make_shared<nn::Dense>(o.patch * o.patch, o.features, gen));
  class_token_ = register_parameter("class_token", nn::init::normal({1, 1, o.features}, 0, 0.02, gen));
  positions_ = register_parameter("positions", nn::init::normal({tokens, o.features}, 0, 0.02, gen));
  blocks_ = register_module("blocks", std::make_shared<nn::ModuleList<nn::TransformerBlock>>());
  for (int64_t i = 0; i < o.layers; ++i) {
    blocks_->push_back(std::make_shared<nn::TransformerBlock>(
        o.features, /*axis=*/1, gen, nn::BlockOptions{.heads = o.heads, .ff_multiple = o.ff_multiple}));
  }
  norm_ = register_module("norm", std::make_shared<nn::LayerNorm>(o.features));
  head_ = register_module("head", std::make_shared<nn::Dense>(o.features, o.classes, gen));
}

Tensor VisionTransformer::patches(const Tensor& images) const {
  check_images("VisionTransformer", images, height_, width_);
  const int64_t batch = images.size(0), rows = height_ / patch_, columns = width_ / patch_;
  return images
      .reshape({batch, rows, patch_, columns, patch_})     // [B, rows, P, columns, P]
      .permute({0, 1, 3, 2, 4})                            // [B, rows, columns, P, P]
      .reshape({batch, rows * columns, patch_ * patch_});  // [B, N, P*P]
}

Tensor VisionTransformer::forward(const Tensor& images) const {
  const int64_t batch = images.size(0), features = class_token_.size(2);
  const Tensor tokens = embed_->forward(patches(images));        // [B, N, D]
  const Tensor cls = class_token_.expand({batch, 1, features});  // [B, 1, D]
  Tensor x = add(concat({cls, tokens}, 1), positions_);          // [B, N + 1, D]
  for (size_t i = 0; i < blocks_->size(); ++i) {
    const NameScope scope("blocks." + std::to_string(i));  // drawn as one box by to_dot
    x = (*blocks_)[i].forward(x);
  }
  return head_->forward(norm_->forward(x.select(1, 0)));  // [B, classes]
}

// --- a recurrent network reading rows -------------------------------------------------------------

RowReader::RowReader(ClassifierKind cell, int64_t width, int64_t hidden, int64_t classes, Generator& gen) {
  if (cell == ClassifierKind::gru) {
    gru_ = register_module("gru", std::make_shared<nn::GRU>(width, hidden, gen));
  } else if (cell == ClassifierKind::lstm) {
    lstm_ = register_module("lstm", std::make_shared<nn::LSTM>(width, hidden, gen));
  } else {
    throw Error("RowReader", "the cell must be gru or lstm, got ", name_of(cell));
  }
  head_ = register_module("head", std::make_shared<nn::Dense>(hidden, classes, gen));
}

Tensor RowReader::forward(const Tensor& images) const {
  const int64_t width = gru_ ? gru_->input->in_features() : lstm_->input->in_features();
  if (images.dim() != 3 || images.size(2) != width) {
    throw Error("RowReader", "expected images [B, H, ", width, "] (rows of ", width, " pixels), got ", images.shape());
  }
  const Tensor last = gru_ ? gru_->forward(images).second : lstm_->forward(images).second.h;  // [B, hidden]
  return head_->forward(last);                                                                // [B, classes]
}

}  // namespace axiom::models
