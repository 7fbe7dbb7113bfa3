// The residual blocks of the Axial Transformer (section 3.1), pre-LayerNorm:
//   FeedforwardBlock(x)   = x + Dense_D(Activation(Dense_D'(LayerNorm(x))))
//   AttentionBlock_k(x)   = x + Dense_D(Attention_k(LayerNorm(x)))        (Dense_D: the attention's output projection)
//   TransformerBlock_k(x) = FeedforwardBlock(AttentionBlock_k(x))
// MaskedTransformerBlock_k is TransformerBlock_k with masked (causal) attention along axis k.
// output_init_scale = 0 starts both residual branches at zero: the block starts as the identity.
//
// A masked block can also run one position at a time along its axis (`forward_step`, for sampling):
// LayerNorm and the feed-forward act on each position alone, so only the attention needs a cache.
#pragma once

#include "attention.h"

namespace axiom::nn {

struct BlockOptions {
  int64_t heads = 4;
  int64_t ff_multiple = 4;  // D' = ff_multiple * D
  bool masked = false;
  Activation nonlinearity = Activation::gelu;  // gelu, gelu_tanh or relu (autograd/ops.h)
  double output_init_scale = 1.0;
  DenseInit init = DenseInit::uniform;  // of every Dense layer in the block
  int64_t relative_distance = 0;        // > 0: the attention adds relative position logits (attention.h)
  LocalBlocks local = {};               // active: local attention over the last two spatial axes (local.h)
};

class AttentionBlock : public Module {
 public:
  AttentionBlock(int64_t features, int64_t axis, Generator& gen, const BlockOptions& options = {});
  Tensor forward(const Tensor& x) const { return add(x, attention->forward(*norm, x)); }  // keeps x, not norm(x)
  Tensor operator()(const Tensor& x) const { return forward(x); }
  // x_t [B, D] at the next position of B lines -> [B, D]; see AxialAttention::forward_step.
  Tensor forward_step(const Tensor& x_t, AttentionCache& cache) const {
    return add(x_t, attention->forward_step(norm->forward(x_t), cache));
  }
  std::shared_ptr<LayerNorm> norm;
  std::shared_ptr<AxialAttention> attention;
};

class FeedforwardBlock : public Module {
 public:
  FeedforwardBlock(int64_t features, Generator& gen, const BlockOptions& options = {});
  Tensor forward(const Tensor& x) const;
  Tensor operator()(const Tensor& x) const { return forward(x); }
  std::shared_ptr<LayerNorm> norm;
  std::shared_ptr<Dense> up;    // D -> D'
  std::shared_ptr<Dense> down;  // D' -> D
  Activation nonlinearity;
};

class TransformerBlock : public Module {
 public:
  TransformerBlock(int64_t features, int64_t axis, Generator& gen, const BlockOptions& options = {});
  Tensor forward(const Tensor& x) const { return feedforward->forward(attention->forward(x)); }
  Tensor operator()(const Tensor& x) const { return forward(x); }
  // x_t [B, D] at the next position of B lines -> [B, D]. Masked blocks only, under NoGrad; one
  // cache per block, stepped t = 0, 1, ... along the block's axis.
  Tensor forward_step(const Tensor& x_t, AttentionCache& cache) const {
    return feedforward->forward(attention->forward_step(x_t, cache));
  }
  std::shared_ptr<AttentionBlock> attention;
  std::shared_ptr<FeedforwardBlock> feedforward;
};

// TransformerBlock_k with causal attention along axis k.
inline std::shared_ptr<TransformerBlock> masked_transformer_block(int64_t features, int64_t axis, Generator& gen,
                                                                  BlockOptions options = {}) {
  options.masked = true;
  return std::make_shared<TransformerBlock>(features, axis, gen, options);
}

}  // namespace axiom::nn
