#include "nn/attention.h"

#include <cmath>
#include <limits>
#include <vector>

#include "autograd/factory.h"
#include "core/error.h"
#include "core/factory.h"
#include "core/ops.h"
#include "autograd/factory.h"
#include "nn/relative.h"

namespace axiom::nn {

AxialAttention::AxialAttention(int64_t features, int64_t heads, int64_t axis, Generator& gen,
                               AttentionOptions options)
    : features(features), heads(heads), axis(axis), masked(options.masked), local(options.local) {
  if (heads <= 0 || features <= 0 || features % heads != 0) {
    throw Error("AxialAttention", "features (", features, ") must be a positive multiple of heads (", heads, ")");
  }
  if (axis == 0) throw Error("AxialAttention", "axis 0 is the batch axis; attend along a spatial axis (1, 2, ... or -2)");
  if (options.relative_distance < 0 || options.relative_distance > kMaxRelativeDistance) {
    throw Error("AxialAttention", "relative_distance must be in [0, ", kMaxRelativeDistance, "] (0: no relative positions), got ",
                options.relative_distance);
  }
  if (local.active() && (!masked || local.columns < 1 || options.relative_distance > 0)) {
    throw Error("AxialAttention", "local attention is masked, with blocks of at least 1 x 1 and no relative positions; got masked ",
                masked, ", blocks ", local.rows, " x ", local.columns, ", relative_distance ", options.relative_distance);
  }
  if (local.active() && axis != -2) throw Error("AxialAttention", "local attention runs over the last two spatial axes: axis must be -2, got ", axis);
  qkv = register_module("qkv", std::make_shared<Dense>(features, 3 * features, gen, DenseOptions{.init = options.init}));
  out = register_module("out", std::make_shared<Dense>(features, features, gen,
                                                       DenseOptions{.init_scale = options.output_init_scale, .init = options.init}));
  if (options.relative_distance > 0) {  // N(0, 1): q . E starts at the scale of q . k
    relative = register_parameter("relative", axiom::normal({2 * options.relative_distance + 1, features / heads}, 0, 1, gen));
  }
}

int64_t AxialAttention::checked_axis(const Tensor& x) const {
  const int64_t rank = x.dim();
  const int64_t a = axis < 0 ? axis + rank : axis;  // -2 -> rank - 2, the last spatial axis
  if (local.active() && rank < 4) {
    throw Error("AxialAttention", "local attention takes a grid [B, ..., R, C, ", features, "] (one row [B, 1, L, D] for 1-D), got ", x.shape());
  }
  if (rank < 3 || a < 1 || a > rank - 2 || x.size(-1) != features) {
    throw Error("AxialAttention", "input ", x.shape(), " must be [B, d1, ..., dn, ", features, "] with axis ", axis,
                " one of its spatial axes");
  }
  return a;
}

// softmax(q k^T / sqrt(Dh)) v for every line along the axis and every head, in one fused op
// (core/cpu/attention.cpp) that reads q, k and v in place from the packed projections [..., 3D]
// and writes the heads side by side: [..., D]; then the output projection.
Tensor AxialAttention::mix(const Tensor& qkv_x, int64_t line_axis) const {
  if (relative.defined()) return out->forward(attend_relative(qkv_x, line_axis));
  if (local.active()) return out->forward(attend_local(qkv_x));
  return out->forward(attention(qkv_x, line_axis, heads, masked));
}

// The same attention with relative logits, from plain ops. The line's axis moves next to the
// features, every other axis is a batch axis, and the heads get an axis of their own:
//   q, k, v   = qkv_x split, as [..., H, L, Dh]
//   scores    = (q k^T + relative_logits(q, E)) / sqrt(Dh)    [..., H, L, L]
//   mixed     = softmax(masked scores) v                      [..., H, L, Dh] -> back to [..., D]
Tensor AxialAttention::attend_relative(const Tensor& qkv_x, int64_t line_axis) const {
  const int64_t head_features = features / heads;
  const Tensor lines = qkv_x.movedim(line_axis, -2);  // [B, ..., L, 3D]
  const int64_t length = lines.size(-2);
  Shape split_shape(lines.shape().begin(), lines.shape().end() - 1);  // [B, ..., L, H, Dh]
  split_shape.insert(split_shape.end(), {heads, head_features});
  auto part = [&](int64_t i) { return lines.narrow(-1, i * features, features).reshape(split_shape).transpose(-2, -3); };
  const Tensor q = part(0), k = part(1), v = part(2);  // [B, ..., H, L, Dh]
  Tensor scores = mul(add(matmul(q, k.transpose(-1, -2)), relative_logits_skewed(q, relative)),
                      1 / std::sqrt(static_cast<double>(head_features)));
  if (masked) {  // key j after query i: [L, L], 1 where j > i
    const core::Tensor positions = core::arange(length).to(qkv_x.device());
    scores = masked_fill(scores, Tensor(core::gt(positions.reshape({1, length}), positions.reshape({length, 1}))),
                         -std::numeric_limits<double>::infinity());
  }
  const Tensor mixed = matmul(softmax(scores, -1), v);  // [B, ..., H, L, Dh]
  Shape merged_shape = lines.shape();
  merged_shape.back() = features;  // [B, ..., L, D]
  return mixed.transpose(-2, -3).reshape(merged_shape).movedim(-2, line_axis);
}

// Local attention from the projections qkv_x [..., R, C, 3D]: the heads get an axis before the grid,
// q, k, v [..., H, R, C, Dh]; local_attention (local.h); the heads back side by side [..., R, C, D].
Tensor AxialAttention::attend_local(const Tensor& qkv_x) const {
  Shape split_shape(qkv_x.shape().begin(), qkv_x.shape().end() - 1);  // [..., R, C, H, Dh]
  split_shape.insert(split_shape.end(), {heads, features / heads});
  auto part = [&](int64_t i) { return qkv_x.narrow(-1, i * features, features).reshape(split_shape).movedim(-2, -4); };
  const Tensor mixed = local_attention(part(0), part(1), part(2), local);  // [..., H, R, C, Dh]
  Shape merged_shape = qkv_x.shape();
  merged_shape.back() = features;
  return mixed.movedim(-4, -2).reshape(merged_shape);
}

Tensor AxialAttention::forward(const Tensor& x) const { return mix(qkv->forward(x), checked_axis(x)); }

Tensor AxialAttention::forward(const LayerNorm& norm, const Tensor& x) const {
  const int64_t a = checked_axis(x);
  return mix(layer_norm_linear(x, norm.weight, norm.bias, norm.eps, qkv->weight, qkv->bias), a);
}

// --- one position at a time ---------------------------------------------------------------------

namespace {

// Everything forward_step needs before it may write into the cache.
void check_step(const AxialAttention& a, const Tensor& x_t, const AttentionCache& cache) {
  if (grad_enabled()) throw Error("AxialAttention", "forward_step is for inference: call it under NoGrad");
  if (!a.masked) throw Error("AxialAttention", "forward_step needs masked attention (unmasked attention sees the whole line)");
  if (x_t.dim() != 2 || x_t.size(1) != a.features) {
    throw Error("AxialAttention", "a step takes x_t [B, ", a.features, "], got ", x_t.shape());
  }
  if (cache.length >= cache.capacity) {
    throw Error("AxialAttention", "the cache is full: it holds ", cache.capacity, " positions");
  }
  if (a.local.active() && (cache.grid_columns < 1 || cache.capacity % cache.grid_columns != 0)) {
    throw Error("AxialAttention", "local attention steps through a grid: make the cache with its width, a divisor of its capacity ",
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

  // q, k, v of position t alone: [B, 3D] -> three [B, H, Dh]   (views)
  const Tensor qkv_t = qkv->forward(x_t);
  auto part = [&](int64_t i) { return qkv_t.narrow(-1, i * features, features).reshape({batch, heads, head_features}); };
  // append its key and value: cache[:, :, t, :] = k, v
  copy_into(part(1), cache.keys.select(3, t));
  copy_into(part(2), cache.values.select(2, t));
  cache.length = t + 1;
  // the positions t may see lie in first..t: all of 0..t, or local attention's neighbourhood
  const int64_t first = local.active() ? local_first_visible(local, cache.grid_columns, t) : 0, seen = t + 1 - first;
  const Tensor keys_t = cache.keys.narrow(3, first, seen);     // [B, H, Dh, seen]
  const Tensor values = cache.values.narrow(2, first, seen);   // [B, H, seen, Dh]
  const Tensor q = part(0).unsqueeze(2);  // [B, H, 1, Dh]
  // mixed = softmax(scores) v : [B, H, 1, seen] x [B, H, seen, Dh] -> [B, H, 1, Dh]; without
  // relative logits or local masks, one fused op
  const Tensor mixed = relative.defined() || local.active()
                           ? matmul(softmax(step_scores(q, keys_t, t, first, cache), -1), values)
                           : attention_step(q, keys_t, values, 1.0 / std::sqrt(static_cast<double>(head_features)));
  return out->forward(mixed.reshape({batch, features}));  // heads back together: [B, D]
}

// Position t's scores against the cached keys of positions first..t: q [B, H, 1, Dh], keys_t [B, H, Dh, seen] -> [B, H, 1, seen]
//   q k^T (+ the relative logits) / sqrt(Dh); local attention hides the keys outside t's neighbourhood.
// (Causality needs no mask: the cache holds positions 0..t only.)
Tensor AxialAttention::step_scores(const Tensor& q, const Tensor& keys_t, int64_t t, int64_t first, const AttentionCache& cache) const {
  Tensor scores = matmul(q, keys_t);
  if (relative.defined()) scores = add(scores, relative_logits_step(q, relative, t, t + 1));  // position t against 0..t
  scores = mul(scores, 1.0 / std::sqrt(static_cast<double>(features / heads)));
  if (!local.active()) return scores;
  const int64_t width = cache.grid_columns;
  std::vector<uint8_t> hidden;  // [seen]: 1 where t may not see position s
  for (int64_t s = first; s <= t; ++s) hidden.push_back(local_sees(local, t / width, t % width, s / width, s % width) ? 0 : 1);
  const core::Tensor mask = core::from_vector(hidden, {t + 1 - first}, q.device());
  return masked_fill(scores, Tensor(mask), -std::numeric_limits<double>::infinity());
}

}  // namespace axiom::nn
