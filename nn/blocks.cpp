#include "nn/blocks.h"

#include "core/error.h"

namespace axiom::nn {

AttentionBlock::AttentionBlock(int64_t features, int64_t axis, Generator& gen, const BlockOptions& options)
    : norm(register_module("norm", std::make_shared<LayerNorm>(features))),
      attention(register_module(
          "attention", std::make_shared<AxialAttention>(features, options.heads, axis, gen,
                                                        AttentionOptions{.masked = options.masked,
                                                                         .output_init_scale = options.output_init_scale,
                                                                         .init = options.init,
                                                                         .relative_distance = options.relative_distance,
                                                                         .local = options.local}))) {}

FeedforwardBlock::FeedforwardBlock(int64_t features, Generator& gen, const BlockOptions& options)
    : nonlinearity(options.nonlinearity) {
  if (options.ff_multiple <= 0)
    throw Error("FeedforwardBlock", "ff_multiple must be positive, got ", options.ff_multiple);
  const int64_t hidden = options.ff_multiple * features;
  norm = register_module("norm", std::make_shared<LayerNorm>(features));
  up = register_module("up", std::make_shared<Dense>(features, hidden, gen, DenseOptions{.init = options.init}));
  down = register_module(
      "down", std::make_shared<Dense>(hidden, features, gen,
                                      DenseOptions{.init_scale = options.output_init_scale, .init = options.init}));
}

// Two fused ops in one call (autograd/ops.h), so that the backward pass keeps x and the first
// Dense's output h only: the LayerNorm's output and the nonlinearity's (4 times wider) are
// recomputed there. Under bfloat16 products it is one op that keeps h in bfloat16.
Tensor FeedforwardBlock::forward(const Tensor& x) const {
  return add(x, layer_norm_feedforward(x, norm->weight, norm->bias, norm->eps, up->weight, up->bias, nonlinearity,
                                       down->weight, down->bias));
}

TransformerBlock::TransformerBlock(int64_t features, int64_t axis, Generator& gen, const BlockOptions& options)
    : attention(register_module("attention", std::make_shared<AttentionBlock>(features, axis, gen, options))),
      feedforward(register_module("feedforward", std::make_shared<FeedforwardBlock>(features, gen, options))) {}

}  // namespace axiom::nn
