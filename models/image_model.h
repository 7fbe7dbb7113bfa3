// What every image model of axiom is: an autoregressive model of images whose pixels take 256
// values, in raster order, channel after channel. Two models are one (config.h, "attention"):
// the Axial Transformer (axial_transformer.h) and the decoder-only Transformers over the raster
// order that the paper compares it with (raster_transformer.h). They differ only in the decoder:
//
//   h = Embed(x_c)                                 [B, H, W, D]     the channel c being modelled
//   context = ChannelEncoder(x_0, ..., x_c-1; c)   [B, H, W, D]     for C > 1 (section 3.2.2)
//   logits = decode(h, context)                    [B, H, W, 256]   each model's own decoder,
//                                                                   ending in Dense_256(LayerNorm(z))
//
// so this class holds what they share: the embedding, the channel encoder, the final layer norm
// and logits, the loss and the exact likelihood, and activation checkpointing. The samplers
// (sampler.h) see a model through this interface alone: the naive one through logits(), the fast
// one through start_decoding().
//
// For C > 1 channels (or frames), channel c is modelled given channels 0..c-1 through a channel
// encoder of unmasked row and column blocks over their embedded values. The residual branches and
// the logits start at zero: an untrained model predicts the uniform distribution, 8 bits per dimension.
#pragma once

#include <memory>

#include "config.h"
#include "learner.h"

namespace axiom::models {

struct Likelihood {
  double nats = 0;    // -log p summed over every pixel and channel
  int64_t count = 0;  // how many values that is
  double bits_per_dim() const;
};

// A model's decoder one pixel at a time, for the fast sampler (under NoGrad): made by
// ImageModel::start_decoding for one channel of a batch of N images, it gives the logits of the
// pixels of that channel in raster order, each call the next pixel's: [N, 256], what logits()
// gives there. Before each call, the pixels before it must have been written into the images it
// was started on (the sampler draws into them). Each model keeps what it needs of the pixels
// already drawn (key/value caches, an LSTM's state), so a pixel costs far less than a whole pass.
class PixelDecoder {
 public:
  virtual ~PixelDecoder() = default;
  virtual Tensor next() = 0;
};

class ImageModel : public Learner {
 public:
  const ImageModelConfig& config() const { return config_; }
  // Where the parameters are. Images given to any method may be on the CPU or on this device: they
  // are moved here; so are the tensors the model makes itself.
  Device device() const override;

  // images: uint8 or int64, [B, H, W] (one channel) or [B, C, H, W]; channel: int64 [B], the
  // channel each example generates. Returns that channel's logits for every pixel, [B, H, W, 256].
  Tensor logits(const Tensor& images, const Tensor& channel) const;
  // The training loss in bits per dimension: one random channel per example (drawn from `gen`),
  // an unbiased estimate of the full likelihood.
  Tensor loss(const Tensor& images, Generator& gen) const;
  // The exact likelihood of a batch: every channel of every pixel (no graph is recorded).
  Likelihood evaluate(const Tensor& images) const;

  // As a Learner (learner.h), of examples that are images alone: loss() in bits/dim, and the
  // score's loss the bits of evaluate(), over every value.
  int64_t columns() const override { return 1; }
  Tensor batch_loss(const std::vector<Tensor>& columns, Generator& gen) const override;
  Score batch_score(const std::vector<Tensor>& columns) const override;

  // --- the pieces ---------------------------------------------------------------------------------
  Tensor as_channels(const Tensor& images) const;  // int64 [B, C, H, W] on device(), checked
  // logits() of images that as_channels has made (int64 [B, C, H, W] on device()): no check again.
  Tensor logits_of_values(const Tensor& values, const Tensor& channel) const;
  Tensor embed(const Tensor& values) const;                          // int64 [B, H, W] -> [B, H, W, D]
  Tensor encode(const Tensor& images, const Tensor& channel) const;  // [B, H, W, D], or undefined for C = 1
  // encode() with every image generating `channel`: a pixel decoder's context (images int64 [N, C, H, W]).
  Tensor encode_channel(const Tensor& images, int64_t channel) const;
  // Everything after the embedding: h [B, H, W, D] (and the encoder's context) -> logits [B, H, W, 256].
  virtual Tensor decode(const Tensor& h, const Tensor& context) const = 0;
  // The fast sampler's decoder for `channel` of images: int64 [N, C, H, W] on device(), whose
  // channels before `channel` are final and which the sampler fills in, pixel by pixel.
  virtual std::unique_ptr<PixelDecoder> start_decoding(const Tensor& images, int64_t channel) const = 0;

  // --- memory ------------------------------------------------------------------------------------
  // Activation checkpointing: the first `blocks` transformer blocks, counted in the order the
  // forward pass runs them (the channel encoder's, then the decoder's), keep only their input
  // for the backward pass and run again there (autograd/checkpoint.h). Gradients are bitwise the
  // same; a step costs up to one more forward pass, and each such block keeps D floats per pixel
  // instead of about 16 D. 0 (the default): none; at least block_count(): all.
  void set_checkpoint_blocks(int64_t blocks) override;
  int64_t checkpoint_blocks() const { return checkpoint_blocks_; }
  int64_t block_count() const { return encoder_blocks() + decoder_blocks(); }  // transformer blocks in the model

 protected:
  // The parameters are made in this order, so that a seed gives the same weights in every version:
  // this constructor makes the embedding, the model's constructor then its decoder, and last
  // add_encoder_and_logits() the channel encoder, the final layer norm and the logits layer.
  ImageModel(const ImageModelConfig& config, Generator& gen);
  void add_encoder_and_logits(Generator& gen);

  // What the decoders' layers are made with (config.h, "init"): the blocks' options, and the
  // standard deviation of the position tables.
  nn::BlockOptions block_options(bool masked) const;
  double position_std() const;
  std::shared_ptr<nn::FactorizedPositionEmbedding> make_positions(Generator& gen) const;  // [H, W] tables of D

  // x through each of `blocks` (registered as `name`) in turn, the first being block number `first`
  // in forward order; those among the first checkpoint_blocks() go through checkpoint(). Each block
  // records in a NameScope of its module name ("outer.3"), for to_dot to draw as one box.
  Tensor run_blocks(const nn::ModuleList<nn::TransformerBlock>& blocks, const std::string& name, Tensor x,
                    int64_t first) const;
  int64_t encoder_blocks() const;  // 0 without a channel encoder
  virtual int64_t decoder_blocks() const = 0;
  Tensor logits_of(const Tensor& z) const;  // the final LayerNorm and the logits layer: [..., D] -> [..., 256]
  Tensor dropout(const Tensor& x) const;    // on a decoder's input (the blocks draw no random numbers)
  // An Error unless z is one pixel of each image, [B, D]; `method` and `name` say whose argument.
  void check_pixel(const char* method, const char* name, const Tensor& z) const;

 private:
  double embedding_std() const;

  ImageModelConfig config_;
  std::shared_ptr<nn::Embedding> embedding_;
  std::shared_ptr<nn::Embedding> channel_values_, channel_marker_;
  std::shared_ptr<nn::FactorizedPositionEmbedding> encoder_position_;
  std::shared_ptr<nn::ModuleList<nn::TransformerBlock>> encoder_;
  std::shared_ptr<nn::LayerNorm> final_norm_;
  std::shared_ptr<nn::Dense> logits_;
  std::shared_ptr<nn::Dropout> dropout_;
  int64_t checkpoint_blocks_ = 0;
};

// The model that config.attention names: an AxialTransformer for "axial", a RasterTransformer for
// the others. An invalid config is an Error that names the bad key.
std::unique_ptr<ImageModel> make_image_model(const ImageModelConfig& config, Generator& gen);

}  // namespace axiom::models
