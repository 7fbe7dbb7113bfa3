// The Axial Transformer (Ho et al., 2019, section 3.2): an autoregressive model of images whose
// pixels take 256 values, in raster order, channel after channel.
//
//   h = Embed(x)                                                   [B, H, W, D]
//   u = h + PositionEmbeddings (+ the channel encoder's context)
//   u = MaskedTransformerBlock_1(TransformerBlock_2(u))  x L_upper/2      (the outer decoder)
//   z = ShiftRight(h) + ShiftDown(u) + PositionEmbeddings
//   z = MaskedTransformerBlock_2(z)  x L_row                          (the inner decoder; or one LSTM)
//   logits = Dense_256(LayerNorm(z))                               [B, H, W, 256]
//
// Masks are inclusive; the two shifts make the model strictly causal: the logits of pixel (i, j)
// see rows above i through ShiftDown(u) and pixels left of j through ShiftRight(h).
// For C > 1 channels (or frames), channel c is modelled given channels 0..c-1 through a channel
// encoder of unmasked row and column blocks over their embedded values (section 3.2.2).
// The residual branches and the logits start at zero: an untrained model predicts the uniform
// distribution, 8 bits per dimension.
//
// With config.attention "full", "local1d" or "local2d" the same class is instead the decoder-only
// Transformer over the raster order that the paper compares with (config.h): the embedding, the
// channel encoder, the logits and the training and sampling around them are shared; the outer
// and inner decoders give way to one stack of masked blocks over all pixels.
#pragma once

#include "config.h"
#include "../nn/nn.h"

namespace axiom::models {

struct Likelihood {
  double nats = 0;    // -log p summed over every pixel and channel
  int64_t count = 0;  // how many values that is
  double bits_per_dim() const;
};

// What the inner decoder remembers, while sampling, of the pixels already drawn on the current row:
// a key/value cache for each masked row block, or the LSTM's state.
struct InnerRowState {
  std::vector<nn::AttentionCache> caches;  // one per inner block, room for W positions each
  nn::LSTMState lstm;                      // undefined before the first pixel (zeros)
};

// What the outer decoder remembers, while sampling, of the rows already drawn: a key/value cache
// for each masked column block, over the N * W columns of the batch.
struct OuterRowState {
  std::vector<nn::AttentionCache> caches;  // one per masked column block, room for H rows each
  int64_t rows = 0;                        // rows stepped so far
};

// What a raster model remembers, while sampling, of the pixels already drawn: a key/value cache for
// each block, over the H W pixels in raster order.
struct RasterState {
  std::vector<nn::AttentionCache> caches;
};

class AxialTransformer : public nn::Module {
 public:
  AxialTransformer(const AxialTransformerConfig& config, Generator& gen);
  const AxialTransformerConfig& config() const { return config_; }
  // Where the parameters are (Module::to moves them). Images given to any method may be on the CPU
  // or on this device: they are moved here; so are the tensors the model makes itself.
  Device device() const;

  // images: uint8 or int64, [B, H, W] (one channel) or [B, C, H, W]; channel: int64 [B], the
  // channel each example generates. Returns that channel's logits for every pixel, [B, H, W, 256].
  Tensor logits(const Tensor& images, const Tensor& channel) const;
  // The training loss in bits per dimension: one random channel per example (drawn from `gen`),
  // an unbiased estimate of the full likelihood.
  Tensor loss(const Tensor& images, Generator& gen) const;
  // The exact likelihood of a batch: every channel of every pixel (no graph is recorded).
  Likelihood evaluate(const Tensor& images) const;

  // --- the pieces, for the samplers --------------------------------------------------------------
  Tensor as_channels(const Tensor& images) const;  // int64 [B, C, H, W] on device(), checked
  // logits() of images that as_channels has made (int64 [B, C, H, W] on device()): no check again.
  Tensor logits_of_values(const Tensor& values, const Tensor& channel) const;
  Tensor embed(const Tensor& values) const;        // int64 [B, H, W] -> [B, H, W, D]
  Tensor encode(const Tensor& images, const Tensor& channel) const;  // [B, H, W, D], or undefined for C = 1
  Tensor outer(const Tensor& h, const Tensor& context) const;  // u before its shift
  // Everything after the embedding: h [B, H, W, D] (and the encoder's context) -> logits [B, H, W, 256].
  Tensor decode(const Tensor& h, const Tensor& context) const;
  // The inner decoder on whole rows: z [B, R, W, D], its input (ShiftRight(h) + ShiftDown(u) +
  // positions, for R rows of the image) -> logits [B, R, W, 256]. Each row is decoded on its own.
  Tensor inner(const Tensor& z) const;
  Tensor inner_position(int64_t first_row, int64_t rows) const;  // [rows, W, D]
  // The inner decoder one pixel at a time along a row, for sampling (under NoGrad): take a fresh
  // state for each row, then step j = 0, 1, ..., W-1 with z_j [B, D], pixel j's inner decoder input
  // (ShiftRight(h) + ShiftDown(u) + positions). Returns pixel j's logits [B, 256], those that
  // inner() gives for pixel j of the whole row, at O(j) cost instead of O(W^2).
  InnerRowState start_inner_row() const;
  Tensor inner_step(const Tensor& z_j, InnerRowState& state) const;
  // The outer decoder one row at a time, for sampling (under NoGrad): take a fresh state for each
  // image, then step i = 0, 1, ..., H-1 with row i of h [B, W, D] (and of the encoder's context,
  // or undefined). Returns row i of u [B, W, D], what outer() gives for row i of the whole image:
  // the row blocks see the row alone, the masked column blocks attend over the cached rows 0..i.
  // Each row costs one row's work instead of re-running the outer decoder on the whole image.
  OuterRowState start_outer_rows() const;
  Tensor outer_step(const Tensor& h_row, const Tensor& context_row, OuterRowState& state) const;

  // --- the raster models' pieces (attention other than "axial"), for their sampler ----------------
  Tensor positions() const;  // [H, W, D]: what the decoder adds at each pixel
  // The decoder one pixel at a time in raster order (under NoGrad): take a fresh state for each
  // image, then step t = i W + j = 0, 1, ... with z_t [B, D], the decoder's input at pixel (i, j):
  // the embedding of pixel t - 1 (zeros at t = 0) + positions()[i][j] (+ the context there).
  // Returns pixel t's logits [B, 256], what decode() gives there, attending over cached pixels.
  RasterState start_raster() const;
  Tensor raster_step(const Tensor& z_t, RasterState& state) const;

  // --- memory ------------------------------------------------------------------------------------
  // Activation checkpointing: the first `blocks` transformer blocks, counted in the order the
  // forward pass runs them (channel encoder, outer decoder, inner decoder), keep only their input
  // for the backward pass and run again there (autograd/checkpoint.h). Gradients are bitwise the
  // same; a step costs up to one more forward pass, and each such block keeps D floats per pixel
  // instead of about 16 D. 0 (the default): none; at least block_count(): all.
  void set_checkpoint_blocks(int64_t blocks);
  int64_t checkpoint_blocks() const { return checkpoint_blocks_; }
  int64_t block_count() const;  // transformer blocks in the model

 private:
  // x through each of `blocks` in turn, the first being block number `first` in forward order; those
  // among the first checkpoint_blocks_ go through checkpoint().
  Tensor run_blocks(const nn::ModuleList<nn::TransformerBlock>& blocks, Tensor x, int64_t first) const;
  int64_t encoder_blocks() const;  // 0 without a channel encoder
  Tensor logits_of(const Tensor& z) const;  // the final LayerNorm and the logits layer
  void build_raster(nn::BlockOptions masked, double position_std, Generator& gen);
  Tensor decode_raster(const Tensor& h, const Tensor& context) const;
  void require(bool axial, const char* method) const;  // an Error when `method` is not for this decoder
  void check_pixel(const char* method, const char* name, const Tensor& z) const;  // z: one pixel of each image, [B, D]

  AxialTransformerConfig config_;
  std::shared_ptr<nn::Embedding> embedding_;
  std::shared_ptr<nn::FactorizedPositionEmbedding> outer_position_, inner_position_, encoder_position_;
  std::shared_ptr<nn::ModuleList<nn::TransformerBlock>> outer_, inner_, encoder_;
  std::shared_ptr<nn::FactorizedPositionEmbedding> raster_position_;  // raster models
  std::shared_ptr<nn::ModuleList<nn::TransformerBlock>> raster_;
  std::shared_ptr<nn::LSTM> inner_lstm_;
  std::shared_ptr<nn::Embedding> channel_values_, channel_marker_;
  std::shared_ptr<nn::LayerNorm> final_norm_;
  std::shared_ptr<nn::Dense> logits_;
  std::shared_ptr<nn::Dropout> dropout_;
  int64_t checkpoint_blocks_ = 0;
};

}  // namespace axiom::models
