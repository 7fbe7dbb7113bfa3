#include "nn/attention.h"

#include <cmath>
#include <vector>

#include "autograd/factory.h"
#include "nn/init.h"
#include "core/error.h"
#include "core/factory.h"
#include "core/launch.h"
#include "nn/relative.h"

namespace axiom::nn {

AxialAttention::AxialAttention(int64_t features, int64_t heads, int64_t axis, Generator& gen, AttentionOptions options)
    : features(features), heads(heads), axis(axis), masked(options.masked), local(options.local) {
  if (heads <= 0 || features <= 0 || features % heads != 0) {
    throw Error("AxialAttention", "features (", features, ") must be a positive multiple of heads (", heads, ")");
  }
  if (axis == 0)
    throw Error("AxialAttention", "axis 0 is the batch axis; attend along a spatial axis (1, 2, ... or -2)");
  if (options.relative_distance < 0 || options.relative_distance > kMaxRelativeDistance) {
    throw Error("AxialAttention", "relative_distance must be in [0, ", kMaxRelativeDistance,
                "] (0: no relative positions), got ", options.relative_distance);
  }
  if (local.active() && (!masked || local.columns < 1 || options.relative_distance > 0)) {
    throw Error("AxialAttention",
                "local attention is masked, with blocks of at least 1 x 1 and no relative positions; got masked ",
                masked, ", blocks ", local.rows, " x ", local.columns, ", relative_distance ",
                options.relative_distance);
  }
  if (local.active() && axis != -2)
    throw Error("AxialAttention", "local attention runs over the last two spatial axes: axis must be -2, got ", axis);
  qkv =
      register_module("qkv", std::make_shared<Dense>(features, 3 * features, gen, DenseOptions{.init = options.init}));
  out = register_module(
      "out", std::make_shared<Dense>(features, features, gen,
                                     DenseOptions{.init_scale = options.output_init_scale, .init = options.init}));
  if (options.relative_distance > 0) {  // N(0, 1): q . E starts at the scale of q . k
    relative =
        register_parameter("relative", init::normal({2 * options.relative_distance + 1, features / heads}, 0, 1, gen));
  }
}

int64_t AxialAttention::checked_axis(const Tensor& x) const {
  const int64_t rank = x.dim();
  const int64_t a = axis < 0 ? axis + rank : axis;  // -2 -> rank - 2, the last spatial axis
  if (local.active() && rank < 4) {
    throw Error("AxialAttention", "local attention takes a grid [B, ..., R, C, ", features,
                "] (one row [B, 1, L, D] for 1-D), got ", x.shape());
  }
  if (rank < 3 || a < 1 || a > rank - 2 || x.size(-1) != features) {
    throw Error("AxialAttention", "input ", x.shape(), " must be [B, d1, ..., dn, ", features, "] with axis ", axis,
                " one of its spatial axes");
  }
  return a;
}

// softmax(q k^T / sqrt(Dh) + bias) v for every line along the axis and every head, in one op
// (autograd/ops.h attention) that reads q, k and v from the packed projections [..., 3D] and writes
// the heads side by side: [..., D]; then the output projection. The layer only says which keys a
// query sees (the mask: all, causal, or local blocks) and what adds to the scores (the bias of
// relative positions); the op fuses what its device can fuse.
Tensor AxialAttention::mix(const Tensor& qkv_x, int64_t line_axis) const {
  if (local.active()) return out->forward(attend_grid(qkv_x));
  const Tensor bias =
      relative.defined() ? relative_bias(attention_queries(qkv_x, line_axis, heads), relative) : Tensor();
  return out->forward(attention(qkv_x, line_axis, heads, AttentionMask::causal_if(masked), bias));
}

// Local attention on a grid qkv_x [..., R, C, 3D]: one line of R*C positions in raster order, and
// the local blocks' mask (local.h) -> [..., R, C, D].
Tensor AxialAttention::attend_grid(const Tensor& qkv_x) const {
  const int64_t rows = qkv_x.size(-3), columns = qkv_x.size(-2);
  Shape line(qkv_x.shape().begin(), qkv_x.shape().end() - 3);  // [..., R*C, 3D]
  line.insert(line.end(), {rows * columns, 3 * features});
  Shape grid = qkv_x.shape();
  grid.back() = features;
  return attention(qkv_x.reshape(line), -2, heads, local_mask(local, rows, columns)).reshape(grid);
}

Tensor AxialAttention::forward(const Tensor& x) const { return mix(qkv->forward(x), checked_axis(x)); }

// Without local blocks or relative positions, one op from the normalized input to the heads'
// output (layer_norm_attention: under bfloat16 products, qkv is kept in bfloat16).
Tensor AxialAttention::forward(const LayerNorm& norm, const Tensor& x) const {
  const int64_t a = checked_axis(x);
  if (local.active() || relative.defined())
    return mix(layer_norm_linear(x, norm.weight, norm.bias, norm.eps, qkv->weight, qkv->bias), a);
  return out->forward(layer_norm_attention(x, norm.weight, norm.bias, norm.eps, qkv->weight, qkv->bias, a, heads,
                                           AttentionMask::causal_if(masked)));
}

// --- one position at a time ---------------------------------------------------------------------

namespace {

// Everything forward_step needs before it may write into the cache.
void check_step(const AxialAttention& a, const Tensor& x_t, const AttentionCache& cache) {
  if (grad_enabled()) throw Error("AxialAttention", "forward_step is for inference: call it under NoGrad");
  if (!a.masked)
    throw Error("AxialAttention", "forward_step needs masked attention (unmasked attention sees the whole line)");
  if (x_t.dim() != 2 || x_t.size(1) != a.features) {
    throw Error("AxialAttention", "a step takes x_t [B, ", a.features, "], got ", x_t.shape());
  }
  if (cache.length >= cache.capacity) {
    throw Error("AxialAttention", "the cache is full: it holds ", cache.capacity, " positions");
  }
  if (a.local.active() && (cache.grid_columns < 1 || cache.capacity % cache.grid_columns != 0)) {
    throw Error("AxialAttention",
                "local attention steps through a grid: make the cache with its width, a divisor of its capacity ",
                cache.capacity, ", got ", cache.grid_columns);
  }
  if (cache.length > 0 && (cache.keys.size(0) != x_t.size(0) || cache.keys.dtype() != x_t.dtype())) {
    throw Error("AxialAttention", "x_t ", x_t.dtype(), " ", x_t.shape(), " does not match the cache's batch of ",
                cache.keys.size(0), " ", cache.keys.dtype(), " lines");
  }
}

// At the first step: room for every position of the line in x_t's dtype, keys [B, H, Dh, L]
// (transposed: a step's scores q K^T read them row by row) and values [B, H, L, Dh].
void allocate(AttentionCache& cache, const Tensor& x_t, int64_t heads, int64_t head_features) {
  cache.keys = axiom::zeros({x_t.size(0), heads, head_features, cache.capacity}, x_t.dtype(), x_t.device());
  cache.values = axiom::zeros({x_t.size(0), heads, cache.capacity, head_features}, x_t.dtype(), x_t.device());
}

}  // namespace

Tensor AxialAttention::forward_step(const Tensor& x_t, AttentionCache& cache) const {
  check_step(*this, x_t, cache);
  const int64_t batch = x_t.size(0), head_features = features / heads, t = cache.length;
  if (t == 0) allocate(cache, x_t, heads, head_features);

  const Tensor qkv_t = qkv->forward(x_t);  // q, k, v of position t alone: [B, 3D]
  // the positions t may see lie in first..t: all of 0..t, or local attention's neighbourhood
  const int64_t first = local.active() ? local_first_visible(local, cache.grid_columns, t) : 0;
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_features));
  if (!relative.defined()) {  // one fused op: append k and v to the cache, softmax(q K^T) V over first..t
    const Tensor mixed =
        attention_step_cached(qkv_t, cache.keys, cache.values, t, first, scale, hidden_in_window(t, first, cache));
    cache.length = t + 1;
    return out->forward(mixed);  // [B, D]
  }
  // with relative logits, which add a term to the scores, the same in plain ops
  auto part = [&](int64_t i) {  // [B, 3D] -> [B, H, Dh], a view
    return qkv_t.narrow(-1, i * features, features).reshape({batch, heads, head_features});
  };
  copy_into(part(1), cache.keys.select(3, t));  // cache[:, :, t, :] = k, v
  copy_into(part(2), cache.values.select(2, t));
  cache.length = t + 1;
  const int64_t seen = t + 1 - first;
  const Tensor keys_t = cache.keys.narrow(3, first, seen);    // [B, H, Dh, seen]
  const Tensor values = cache.values.narrow(2, first, seen);  // [B, H, seen, Dh]
  const Tensor q = part(0).unsqueeze(2);                      // [B, H, 1, Dh]
  // mixed = softmax(scale (q K^T + relative)) v : [B, H, 1, seen] x [B, H, seen, Dh] -> [B, H, 1, Dh]
  const Tensor mixed =
      matmul(softmax(mul(add(matmul(q, keys_t), relative_logits_step(q, relative, t, t + 1)), scale), -1), values);
  return out->forward(mixed.reshape({batch, features}));  // heads back together: [B, D]
}

// The positions first..t that position t may not see: none without local blocks, else those
// outside its neighbourhood (local_sees). (Causality needs no mask: the cache holds 0..t only.)
std::vector<uint8_t> AxialAttention::hidden_in_window(int64_t t, int64_t first, const AttentionCache& cache) const {
  if (!local.active()) return {};
  const int64_t width = cache.grid_columns;
  std::vector<uint8_t> hidden;  // [t + 1 - first]
  for (int64_t s = first; s <= t; ++s)
    hidden.push_back(local_sees(local, t / width, t % width, s / width, s % width) ? 0 : 1);
  return hidden;
}

}  // namespace axiom::nn
