#include "models/image_model.h"

#include <cmath>

#include "autograd/checkpoint.h"
#include "autograd/factory.h"
#include "core/error.h"
#include "models/axial_transformer.h"
#include "models/raster_transformer.h"

namespace axiom::models {

namespace {
constexpr int64_t kValues = 256;
constexpr int64_t kRowAxis = 2, kColumnAxis = 1;  // on [B, H, W, D]: attend along W (rows) or H (columns)
// Each example's own channel: all [B, C, H, W], channel [B] -> [B, H, W].
Tensor channel_of_each(const Tensor& all, const Tensor& channel) {
  const int64_t b = all.size(0);
  const Tensor pick = channel.reshape({b, 1, 1, 1}).expand({b, 1, all.size(2), all.size(3)}).contiguous();
  return gather(all, 1, pick).squeeze(1);
}
}  // namespace

double Likelihood::bits_per_dim() const { return nats / static_cast<double>(count) / std::log(2.0); }

std::unique_ptr<ImageModel> make_image_model(const ImageModelConfig& config, Generator& gen) {
  if (config.axial()) return std::make_unique<AxialTransformer>(config, gen);
  return std::make_unique<RasterTransformer>(config, gen);
}

ImageModel::ImageModel(const ImageModelConfig& config, Generator& gen) : config_(config) {
  config_.validate();
  embedding_ =
      register_module("embedding", std::make_shared<nn::Embedding>(kValues, config_.features, gen, embedding_std()));
}

// The initial values (config.h, "init"): the paper's released code, or PyTorch's defaults.
double ImageModel::embedding_std() const {
  return config_.init == Init::authors ? 5 / std::sqrt(static_cast<double>(config_.features)) : 1.0;
}

double ImageModel::position_std() const { return config_.init == Init::authors ? embedding_std() : 0.02; }

nn::BlockOptions ImageModel::block_options(bool masked) const {
  return {.heads = config_.heads,
          .ff_multiple = config_.ff_multiple,
          .masked = masked,
          .output_init_scale = 0,
          .init = config_.init == Init::authors ? nn::DenseInit::normal : nn::DenseInit::uniform,
          .relative_distance = config_.relative};
}

std::shared_ptr<nn::FactorizedPositionEmbedding> ImageModel::make_positions(Generator& gen) const {
  return std::make_shared<nn::FactorizedPositionEmbedding>(Shape{config_.height, config_.width}, config_.features, gen,
                                                           position_std());
}

void ImageModel::add_encoder_and_logits(Generator& gen) {
  const int64_t d = config_.features;
  if (config_.channels > 1) {
    channel_values_ = register_module(
        "channel_values", std::make_shared<nn::Embedding>(config_.channels * kValues, d, gen, embedding_std()));
    channel_marker_ =
        register_module("channel_marker", std::make_shared<nn::Embedding>(config_.channels, d, gen, embedding_std()));
    encoder_position_ = register_module("encoder_position", make_positions(gen));
    encoder_ = register_module("encoder", std::make_shared<nn::ModuleList<nn::TransformerBlock>>());
    for (int64_t i = 0; i < config_.encoder_layers; ++i) {
      encoder_->push_back(
          std::make_shared<nn::TransformerBlock>(d, i % 2 == 0 ? kRowAxis : kColumnAxis, gen, block_options(false)));
    }
  }
  final_norm_ = register_module("final_norm", std::make_shared<nn::LayerNorm>(d));
  logits_ = register_module("logits", std::make_shared<nn::Dense>(d, kValues, gen, nn::DenseOptions{.init_scale = 0}));
  dropout_ = register_module("dropout", std::make_shared<nn::Dropout>(config_.dropout, gen));
}

void ImageModel::check_pixel(const char* method, const char* name, const Tensor& z) const {
  if (z.dim() != 2 || z.size(1) != config_.features) {
    throw Error(this->name(), method, " takes one pixel of each image, ", name, " [B, ", config_.features, "], got ",
                z.shape());
  }
}

Tensor ImageModel::as_channels(const Tensor& images) const {
  const Shape& s = images.shape();
  const bool single = images.dim() == 3 && config_.channels == 1;
  const bool multi = images.dim() == 4 && s[1] == config_.channels;
  if (!(single || multi) || s[images.dim() - 2] != config_.height || s[images.dim() - 1] != config_.width) {
    throw Error(name(), "images must be [B, ", config_.height, ", ", config_.width, "] or [B, ", config_.channels, ", ",
                config_.height, ", ", config_.width, "], got ", s);
  }
  if (images.dtype() != Dtype::uint8 && images.dtype() != Dtype::int64) {
    throw Error(name(), "images must be uint8 or int64 values in [0, 255], got ", images.dtype());
  }
  const Tensor shaped = single ? images.unsqueeze(1) : images;
  if (images.dtype() == Dtype::int64 && images.numel() > 0) {  // read where the images are (uint8 needs no check)
    const double low = min(shaped).item(), high = max(shaped).item();
    if (low < 0 || high > 255) throw Error(name(), "pixel values must be in [0, 255], got ", low, " to ", high);
  }
  return shaped.to(device()).to(Dtype::int64);
}

Device ImageModel::device() const { return logits_->weight.device(); }

Tensor ImageModel::embed(const Tensor& values) const { return embedding_->forward(values); }

Tensor ImageModel::dropout(const Tensor& x) const { return dropout_->forward(x); }

// Context for generating `channel` (per example) from the channels before it:
//   sum over k < c of ChannelValues_k(x_k) + ChannelMarker(c) + positions, then the encoder blocks.
Tensor ImageModel::encode(const Tensor& images, const Tensor& channel) const {
  if (config_.channels == 1) return {};
  const int64_t b = images.size(0), c = config_.channels;
  const Tensor which = axiom::arange(c, images.device()).reshape({1, c, 1, 1});      // [1, C, 1, 1]
  const Tensor values = channel_values_->forward(add(images, mul(which, kValues)));  // [B, C, H, W, D]: value + 256 k
  const Tensor earlier = lt(which.reshape({1, c}), channel.reshape({b, 1}));         // [B, C]: k < c_b
  const Tensor keep = earlier.to(values.dtype()).reshape({b, c, 1, 1, 1});
  Tensor context = sum(mul(values, keep), {1});  // [B, H, W, D]
  context = add(context, channel_marker_->forward(channel).reshape({b, 1, 1, config_.features}));
  context = encoder_position_->forward(context);
  context = run_blocks(*encoder_, "encoder", context, 0);
  return context;
}

Tensor ImageModel::encode_channel(const Tensor& images, int64_t channel) const {
  return encode(images, axiom::full({images.size(0)}, static_cast<double>(channel), Dtype::int64, images.device()));
}

// Dense_256(LayerNorm(z)) in one op that keeps z, not LayerNorm(z), for the backward pass: [..., D] -> [..., 256]
Tensor ImageModel::logits_of(const Tensor& z) const {
  return layer_norm_linear(z, final_norm_->weight, final_norm_->bias, final_norm_->eps, logits_->weight, logits_->bias);
}

Tensor ImageModel::logits(const Tensor& images, const Tensor& channel) const {
  return logits_of_values(as_channels(images), channel);
}

Tensor ImageModel::logits_of_values(const Tensor& all, const Tensor& channel) const {
  const int64_t b = all.size(0);
  if (channel.dtype() != Dtype::int64 || channel.shape() != Shape{b}) {
    throw Error(name(), "channel must be int64 [", b, "], got ", channel.dtype(), " ", channel.shape());
  }
  const Tensor on_device = channel.to(all.device());
  return decode(embed(channel_of_each(all, on_device)), encode(all, on_device));
}

Tensor ImageModel::loss(const Tensor& images, Generator& gen) const {
  const Tensor all = as_channels(images);
  const int64_t b = all.size(0);
  const Tensor channel = config_.channels == 1 ? axiom::zeros({b}, Dtype::int64, all.device())
                                               : axiom::randint({b}, 0, config_.channels, gen, all.device());
  const Tensor targets = channel_of_each(all, channel);
  return div(cross_entropy(logits_of_values(all, channel), targets), std::log(2.0));  // nats -> bits
}

Likelihood ImageModel::evaluate(const Tensor& images) const {
  NoGrad no_grad;
  const Tensor all = as_channels(images);
  const int64_t b = all.size(0);
  Likelihood total;
  for (int64_t c = 0; c < config_.channels; ++c) {
    const Tensor channel = axiom::full({b}, static_cast<double>(c), Dtype::int64, all.device());
    const Tensor targets = all.select(1, c).contiguous();
    total.nats += cross_entropy(logits_of_values(all, channel), targets, {.reduction = Reduction::sum}).item();
    total.count += targets.numel();
  }
  return total;
}

Tensor ImageModel::batch_loss(const std::vector<Tensor>& columns, Generator& gen) const {
  return loss(columns.at(0), gen);
}

Score ImageModel::batch_score(const std::vector<Tensor>& columns) const {
  const Likelihood likelihood = evaluate(columns.at(0));
  return {.loss = likelihood.nats / std::log(2.0), .count = likelihood.count, .examples = columns.at(0).size(0)};
}

// --- memory ---------------------------------------------------------------------------------------

void ImageModel::set_checkpoint_blocks(int64_t blocks) {
  if (blocks < 0) throw Error(name(), "checkpoint_blocks must be >= 0, got ", blocks);
  checkpoint_blocks_ = blocks;
}

int64_t ImageModel::encoder_blocks() const { return encoder_ ? static_cast<int64_t>(encoder_->size()) : 0; }

Tensor ImageModel::run_blocks(const nn::ModuleList<nn::TransformerBlock>& blocks, const std::string& name, Tensor x,
                              int64_t first) const {
  for (size_t i = 0; i < blocks.size(); ++i) {
    const std::shared_ptr<nn::TransformerBlock>& block = blocks.at(i);
    const NameScope scope(name + "." + std::to_string(i));
    if (first + static_cast<int64_t>(i) >= checkpoint_blocks_) {
      x = block->forward(x);
    } else {  // blocks draw no random numbers (dropout acts on the decoders' inputs, outside them): no generator
      x = checkpoint([block](const Tensor& input) { return block->forward(input); }, x, block->parameters());
    }
  }
  return x;
}

}  // namespace axiom::models
