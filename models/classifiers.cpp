#include "models/classifiers.h"

#include "autograd/factory.h"
#include "core/error.h"
#include "core/ops.h"

namespace axiom::models {

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
  class_token_ = register_parameter("class_token", axiom::normal({1, 1, o.features}, 0, 0.02, gen));
  positions_ = register_parameter("positions", axiom::normal({tokens, o.features}, 0, 0.02, gen));
  blocks_ = register_module("blocks", std::make_shared<nn::ModuleList<nn::TransformerBlock>>());
  for (int64_t i = 0; i < o.layers; ++i) {
    blocks_->push_back(std::make_shared<nn::TransformerBlock>(o.features, /*axis=*/1, gen,
                                                              nn::BlockOptions{.heads = o.heads, .ff_multiple = o.ff_multiple}));
  }
  norm_ = register_module("norm", std::make_shared<nn::LayerNorm>(o.features));
  head_ = register_module("head", std::make_shared<nn::Dense>(o.features, o.classes, gen));
}

Tensor VisionTransformer::patches(const Tensor& images) const {
  check_images("VisionTransformer", images, height_, width_);
  const int64_t batch = images.size(0), rows = height_ / patch_, columns = width_ / patch_;
  return images.reshape({batch, rows, patch_, columns, patch_})  // [B, rows, P, columns, P]
      .permute({0, 1, 3, 2, 4})                                   // [B, rows, columns, P, P]
      .reshape({batch, rows * columns, patch_ * patch_});          // [B, N, P*P]
}

Tensor VisionTransformer::forward(const Tensor& images) const {
  const int64_t batch = images.size(0), features = class_token_.size(2);
  const Tensor tokens = embed_->forward(patches(images));                         // [B, N, D]
  const Tensor cls = class_token_.expand({batch, 1, features});                   // [B, 1, D]
  Tensor x = add(concat({cls, tokens}, 1), positions_);                            // [B, N + 1, D]
  for (const auto& block : *blocks_) x = block->forward(x);
  return head_->forward(norm_->forward(x.select(1, 0)));                          // [B, classes]
}

// --- a recurrent network reading rows -------------------------------------------------------------

RowReader::RowReader(const std::string& cell, int64_t width, int64_t hidden, int64_t classes, Generator& gen) {
  if (cell == "gru") {
    gru_ = register_module("gru", std::make_shared<nn::GRU>(width, hidden, gen));
  } else if (cell == "lstm") {
    lstm_ = register_module("lstm", std::make_shared<nn::LSTM>(width, hidden, gen));
  } else {
    throw Error("RowReader", "the cell must be \"gru\" or \"lstm\", got \"", cell, "\"");
  }
  head_ = register_module("head", std::make_shared<nn::Dense>(hidden, classes, gen));
}

Tensor RowReader::forward(const Tensor& images) const {
  const int64_t width = gru_ ? gru_->input->in_features() : lstm_->input->in_features();
  if (images.dim() != 3 || images.size(2) != width) {
    throw Error("RowReader", "expected images [B, H, ", width, "] (rows of ", width, " pixels), got ", images.shape());
  }
  const Tensor last = gru_ ? gru_->forward(images).second : lstm_->forward(images).second.h;  // [B, hidden]
  return head_->forward(last);                                                              // [B, classes]
}

}  // namespace axiom::models
