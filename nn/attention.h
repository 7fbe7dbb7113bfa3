// Axial attention (Ho et al., 2019, section 3.1): multi-head scaled dot-product attention along one
// axis of an N-dimensional tensor x [B, d1, ..., dn, D]. Every other axis is a batch axis: each
// row (axis 2 of an image [B, H, W, D]) or column (axis 1) attends only within itself.
//
// One Dense layer makes every position's query, key and value at once ([..., 3D]); the op
// `attention` (autograd/ops.h, core/cpu/attention.cpp) then runs, for every line along the axis
// and every head, softmax(q k^T / sqrt(Dh) + bias) v over the keys its mask lets each query see,
// and writes the heads side by side; the output Dense mixes them. The layer only picks the mask
// and the bias: masked attention is causal and inclusive (position i attends to positions 0..i
// of its axis); local attention's mask is local.h's; relative positions are a bias (relative.h).
//
// For sampling, masked attention can also run one position at a time (`forward_step`): each new
// position's key and value go into an AttentionCache, and its query attends over the cache. Along
// a line of length L that is O(L) work per position instead of O(L^2) for re-running `forward`.
//
// With relative positions (`AttentionOptions::relative_distance` M > 0, Shaw et al. 2018), every
// logit also scores the query against a learned embedding of the distance to the key, clipped to
// [-M, M], before the 1/sqrt(Dh) (`relative.h`; one table [2M + 1, Dh] shared by the heads). The
// fused kernel has no room for a bias, so the op attends with plain ops then: q k^T, the bias, the
// mask, softmax and the product with v, each on [..., heads, L, L].
//
// With local blocks (`AttentionOptions::local`, the Image Transformer's local attention, local.h)
// the attention is masked and runs over the grid of the last two spatial axes [..., R, C, D] as
// one line in raster order: each query sees only its block's neighbourhood, and the fused kernel
// computes only those scores. `axis` must then be the last spatial axis. For 1-D local attention
// over a raster sequence, give it as one row: [B, 1, L, D].
#pragma once

#include "layers.h"
#include "local.h"

namespace axiom::nn {

// The keys and values of the positions seen so far along a batch of lines, for `forward_step`.
// Storage for `capacity` positions is allocated at the first step (when the batch size and dtype
// are known) and filled one position per step; it is plain data, outside autograd.
struct AttentionCache {
  explicit AttentionCache(int64_t capacity = 0, int64_t grid_columns = 0)
      : capacity(capacity), grid_columns(grid_columns) {}
  Tensor keys;           // [B, heads, Dh, capacity] (transposed); positions 0..length-1 are filled
  Tensor values;         // [B, heads, capacity, Dh]
  int64_t capacity;      // the line's length L
  int64_t grid_columns;  // local attention: the positions are a grid this wide, in raster order
  int64_t length = 0;    // how many positions have been stepped
};

struct AttentionOptions {
  bool masked = false;                  // causal along the axis
  double output_init_scale = 1.0;       // 0 starts the output projection at zero
  DenseInit init = DenseInit::uniform;  // of both projections
  int64_t relative_distance = 0;        // > 0: relative position logits, distances clipped at this
  LocalBlocks local = {};               // active: local attention over the last two spatial axes (needs masked)
};
inline constexpr int64_t kMaxRelativeDistance = int64_t{1} << 20;

class AxialAttention : public Module {
 public:
  // `axis` is a spatial axis of the input: 1..n, or negative from the end (-2 is the last spatial axis).
  AxialAttention(int64_t features, int64_t heads, int64_t axis, Generator& gen, AttentionOptions options = {});
  Tensor forward(const Tensor& x) const;  // [B, d1, ..., dn, D] -> same shape
  Tensor operator()(const Tensor& x) const { return forward(x); }
  // forward(norm(x)), the same numbers, keeping x instead of norm(x) for the backward pass (a
  // pre-LayerNorm block's attention: the LayerNorm and the q, k, v projection in one op).
  Tensor forward(const LayerNorm& norm, const Tensor& x) const;
  // Masked attention for the next position t = cache.length of B lines at once, under NoGrad:
  // x_t [B, D] is that position's input; its key and value are appended to the cache, and its
  // query attends over positions 0..t. Stepping t = 0..L-1 gives what `forward` gives along the axis.
  // Local attention steps through its grid in raster order (t = 0..R*C-1, a cache made with the
  // grid's width) and attends over the part of 0..t that local_sees lets it.
  Tensor forward_step(const Tensor& x_t, AttentionCache& cache) const;  // [B, D] -> [B, D]

  std::shared_ptr<Dense> qkv;  // D -> 3D: queries, keys and values at once
  std::shared_ptr<Dense> out;  // D -> D
  Tensor relative;             // [2M + 1, Dh]: the distance embeddings (undefined without relative positions)
  int64_t features, heads, axis;
  bool masked;
  LocalBlocks local;

 private:
  int64_t checked_axis(const Tensor& x) const;               // the axis along which x's lines run, or an Error
  Tensor mix(const Tensor& qkv_x, int64_t line_axis) const;  // attention on the projections [..., 3D], then `out`
  Tensor attend_grid(const Tensor& qkv_x) const;             // local attention on [..., R, C, 3D] -> [..., R, C, D]
  std::vector<uint8_t> hidden_in_window(int64_t t, int64_t first, const AttentionCache& cache) const;
};

}  // namespace axiom::nn
