// Multi-head attention along one axis and its backward rule. The op function that checks and
// sizes is core/launch_attention.cpp; the kernels are core/cpu/attention.cpp and
// core/cuda/attention.cu; the masks are core/attention_mask.h; the layer that uses it is
// nn/attention.cpp.
#include <algorithm>
#include <cmath>
#include <limits>

#include "autograd/bfloat16_products.h"
#include "autograd/ops.h"
#include "core/error.h"
#include "core/factory.h"
#include "core/launch.h"
#include "core/shape.h"
#include "autograd/internal.h"

namespace axiom {

namespace {

// Part i of qkv (0: queries, 1: keys, 2: values) split into heads: [..., H, L, Dh].
Tensor heads_of(const Tensor& qkv, int64_t axis, int64_t heads, int64_t part) {
  const int64_t d = qkv.size(-1) / 3;
  const Tensor lines = qkv.movedim(core::normalize_axis("attention", axis, qkv.dim()), -2);  // [..., L, 3D]
  Shape shape = lines.shape();
  shape.back() = heads;
  shape.push_back(d / heads);
  return lines.narrow(-1, part * d, d).reshape(shape).movedim(-2, -3);
}

// uint8 [L, L]: 1 where query i may not see key j.
Tensor hidden_keys(const core::AttentionMask& mask, int64_t length, Device device) {
  std::vector<uint8_t> hidden = mask.table(length);
  for (uint8_t& h : hidden) h = !h;
  return Tensor(core::from_vector(hidden, {length, length}, device));
}

// A bias must add to the scores [..., H, L, L] without changing their shape.
void check_bias(const Tensor& bias, const Shape& scores) {
  bool fits = bias.dim() <= static_cast<int64_t>(scores.size());
  for (int64_t i = 1; fits && i <= bias.dim(); ++i) fits = bias.size(-i) == 1 || bias.size(-i) == scores.end()[-i];
  if (!fits) throw Error("attention", "a bias ", bias.shape(), " does not broadcast to the scores ", scores);
}

// The heads of mixed [..., H, L, Dh] side by side again, the line back at `axis`: [..., D].
Tensor joined_heads(const Tensor& mixed, int axis) {
  const Tensor lines = mixed.movedim(-3, -2);  // [..., L, H, Dh]
  Shape joined = lines.shape();
  joined.pop_back();
  joined.back() *= mixed.size(-1);
  return lines.reshape(joined).movedim(-2, axis);
}

// The same attention in smaller differentiable ops (the fallback, and what a graph of the
// backward pass goes through), every query against every key of its line. qkv [..., L (at axis), ..., 3D] -> [..., D]:
//   Q, K, V = the thirds of qkv, each split into heads: [..., H, L, Dh]
//   out = softmax(Q K^T / sqrt(Dh) + bias, hidden keys at -inf) V, heads joined again
Tensor line_attention_composite(const Tensor& qkv, int axis, int64_t heads, const core::AttentionMask& mask,
                                const Tensor& bias) {
  const int64_t dh = qkv.size(-1) / 3 / heads, length = qkv.size(axis);
  Tensor scores = mul(matmul(heads_of(qkv, axis, heads, 0), heads_of(qkv, axis, heads, 1).transpose(-1, -2)),
                      1 / std::sqrt(static_cast<double>(dh)));  // [..., H, L, L]
  if (bias.defined()) {
    check_bias(bias, scores.shape());
    scores = add(scores, bias);
  }
  if (mask.kind() != core::AttentionMask::Kind::all) {
    scores = masked_fill(scores, hidden_keys(mask, length, qkv.device()), -std::numeric_limits<double>::infinity());
  }
  return joined_heads(matmul(softmax(scores, -1), heads_of(qkv, axis, heads, 2)), axis);
}

// A block pattern's positions as an int64 index: none (-1) becomes 0, a real position whose
// scores are hidden or whose row is dropped.
Tensor block_positions(const std::vector<int64_t>& positions, Device device) {
  std::vector<int64_t> index(positions);
  for (int64_t& p : index) p = std::max<int64_t>(p, 0);
  return Tensor(core::from_vector(index, {static_cast<int64_t>(index.size())}, device));
}

// uint8 [blocks, P, M]: 1 where a query may not see a key of its block's memory. A padding query
// sees its first key: its row is dropped, but a row of -inf alone would be NaN.
Tensor hidden_in_blocks(const core::BlockPattern& b, Device device) {
  std::vector<uint8_t> hidden(b.visible.size());
  for (size_t at = 0; at < hidden.size(); ++at) {
    const size_t row = at / static_cast<size_t>(b.block_keys), column = at % static_cast<size_t>(b.block_keys);
    hidden[at] =
        b.queries[row] < 0
            ? column != 0
            : !b.visible[at] ||
                  b.keys[row / static_cast<size_t>(b.block_queries) * static_cast<size_t>(b.block_keys) + column] < 0;
  }
  return Tensor(core::from_vector(hidden, {b.blocks(), b.block_queries, b.block_keys}, device));
}

// Where each position of the line is among the blocks' queries [blocks * P]: int64 [L].
Tensor query_slots(const core::BlockPattern& b, Device device) {
  std::vector<int64_t> slot(static_cast<size_t>(b.length));
  for (size_t n = 0; n < b.queries.size(); ++n) {
    if (b.queries[n] >= 0) slot[static_cast<size_t>(b.queries[n])] = static_cast<int64_t>(n);
  }
  return Tensor(core::from_vector(slot, {b.length}, device));
}

// A block pattern's attention from plain ops, block by block as the fused kernel computes it:
//   Q [..., H, blocks, P, Dh], K and V [..., H, blocks, M, Dh]: picked from [..., H, L, Dh] by position
//   mixed = softmax(Q K^T / sqrt(Dh), hidden keys at -inf) V      [..., H, blocks, P, Dh]
//   out   = each position's row of mixed, heads joined               [..., D]
Tensor block_attention_composite(const Tensor& qkv, int axis, int64_t heads, const core::BlockPattern& b) {
  const int64_t dh = qkv.size(-1) / 3 / heads;
  auto blocks_of = [&](int64_t part, const std::vector<int64_t>& positions, int64_t per_block) {
    const Tensor picked = index_select(heads_of(qkv, axis, heads, part), -2, block_positions(positions, qkv.device()));
    Shape shape(picked.shape().begin(), picked.shape().end() - 2);  // [..., H]
    shape.insert(shape.end(), {b.blocks(), per_block, dh});
    return picked.reshape(shape);
  };
  Tensor scores =
      mul(matmul(blocks_of(0, b.queries, b.block_queries), blocks_of(1, b.keys, b.block_keys).transpose(-1, -2)),
          1 / std::sqrt(static_cast<double>(dh)));  // [..., H, blocks, P, M]
  scores = masked_fill(scores, hidden_in_blocks(b, qkv.device()), -std::numeric_limits<double>::infinity());
  const Tensor mixed = matmul(softmax(scores, -1), blocks_of(2, b.keys, b.block_keys));  // [..., H, blocks, P, Dh]
  Shape flat(mixed.shape().begin(), mixed.shape().end() - 3);
  flat.insert(flat.end(), {b.blocks() * b.block_queries, dh});  // [..., H, blocks * P, Dh]
  return joined_heads(index_select(mixed.reshape(flat), -2, query_slots(b, qkv.device())), axis);
}

// The op from plain ops: block by block for a block pattern (without a bias), else line by line.
Tensor attention_composite(const Tensor& qkv, int64_t axis, int64_t heads, const core::AttentionMask& mask,
                           const Tensor& bias) {
  const int a = core::normalize_axis("attention", axis, qkv.dim());
  if (mask.kind() == core::AttentionMask::Kind::blocks && !bias.defined())
    return block_attention_composite(qkv, a, heads, mask.pattern());
  return line_attention_composite(qkv, a, heads, mask, bias);
}

}  // namespace

Tensor attention_queries(const Tensor& qkv, int64_t axis, int64_t heads) {
  core::check_attention(core_tensor(qkv), axis, heads, core::AttentionMask::all());
  return heads_of(qkv, axis, heads, 0);
}

// out = softmax(Q K^T / sqrt(Dh), masked) V per line and head, Q, K, V the three thirds of qkv [..., 3D].
//   dL/dqkv [..., 3D]: one fused kernel from the saved softmax weights (core::attention_backward):
//   dV = P^T dO, dS = P * (dO V^T - rowsum(P * dO V^T)) / sqrt(Dh), dQ = dS K, dK = dS^T Q
// Fused: a graph of the backward pass goes through attention_composite instead.
Tensor attention(const Tensor& qkv, int64_t axis, int64_t heads, const core::AttentionMask& mask, const Tensor& bias) {
  if (bias.defined() || !core::attention_fused(qkv.device(), mask)) {
    core::check_attention(core_tensor(qkv), axis, heads, mask);
    return attention_composite(qkv, axis, heads, mask, bias);
  }
  core::AttentionResult r = core::attention(core_tensor(qkv), axis, heads, mask);
  return record_fused(
      "attention", {qkv}, r.output,
      [qkv = core_tensor(qkv), probs = r.probs, axis, heads, mask](const Tensor& g, const Needs&) {
        return Grads{Tensor(core::attention_backward(qkv, probs, core_tensor(g), axis, heads, mask))};
      },
      [axis, heads, mask](const std::vector<Tensor>& in) {
        return attention_composite(in[0], axis, heads, mask, Tensor());
      });
}

// Under MatmulPrecision::bfloat16, with qkv16 = layer_norm_product (autograd/bfloat16_products.h)
// written in bfloat16:
//   forward   qkv16 = round(layer_norm(x) rounded @ weight rounded + bias)    [..., 3D], bfloat16
//             out   = attention(qkv16), the kernel widening qkv16 as it reads it
//   backward  dqkv  = attention's rule from qkv16 and the saved probs, written rounded to
//                     bfloat16 [..., 3D] with its sums over the rows [3D] (the bias's gradient)
//             then layer_norm_linear's bfloat16 rule from them (layer_norm_product_grads)
// The gradients are those of the two ops with qkv rounded once in between and that rounding passed
// over (its derivative taken as 1), but for the bias's, whose float32 sums may add line by line
// (core::attention_backward_to_bfloat16). A graph of the backward pass goes through the two ops.
Tensor layer_norm_attention(const Tensor& x, const Tensor& norm_weight, const Tensor& norm_bias, double eps,
                            const Tensor& weight, const Tensor& bias, int64_t axis, int64_t heads,
                            const AttentionMask& mask) {
  const bool rounded_qkv = bfloat16_products::wanted(core_tensor(x), core_tensor(weight)) &&
                           mask.kind() != AttentionMask::Kind::blocks && core::attention_fused(x.device(), mask);
  if (!rounded_qkv)
    return attention(layer_norm_linear(x, norm_weight, norm_bias, eps, weight, bias), axis, heads, mask);
  bfloat16_products::LayerNormProduct kept;
  const core::Tensor qkv16 = bfloat16_products::layer_norm_product(
      core_tensor(x), data_or_undefined(norm_weight), data_or_undefined(norm_bias), eps, core_tensor(weight),
      data_or_undefined(bias), Dtype::bfloat16, weight.requires_grad(), kept);
  core::AttentionResult r = core::attention(qkv16, axis, heads, mask);
  return record_fused(
      "layer_norm_attention", {x, norm_weight, norm_bias, weight, bias}, r.output,
      [kept, qkv16, probs = r.probs, axis, heads, mask](const Tensor& g, const Needs& needs) {
        const core::RoundedWithSums dqkv =
            core::attention_backward_to_bfloat16(qkv16, probs, core_tensor(g), axis, heads, mask);
        return bfloat16_products::layer_norm_product_grads(kept, dqkv, needs);
      },
      [eps, axis, heads, mask](const std::vector<Tensor>& in) {
        return attention(layer_norm_linear(in[0], in[1], in[2], eps, in[3], in[4]), axis, heads, mask);
      });
}

Tensor attention_step(const Tensor& q, const Tensor& keys_t, const Tensor& values, double scale,
                      const std::vector<uint8_t>& hidden) {
  if (grad_enabled() && (q.requires_grad() || keys_t.requires_grad() || values.requires_grad())) {
    throw Error("attention_step", "has no backward rule: call it under NoGrad (for training, use attention)");
  }
  return Tensor(core::attention_step(core_tensor(q), core_tensor(keys_t), core_tensor(values), scale, hidden));
}

Tensor attention_step_cached(const Tensor& qkv_t, const Tensor& keys_t, const Tensor& values, int64_t t, int64_t first,
                             double scale, const std::vector<uint8_t>& hidden) {
  if (grad_enabled() && (qkv_t.requires_grad() || keys_t.requires_grad() || values.requires_grad())) {
    throw Error("attention_step_cached", "has no backward rule: call it under NoGrad (for training, use attention)");
  }
  return Tensor(core::attention_step_cached(core_tensor(qkv_t), core_tensor(keys_t), core_tensor(values), t, first,
                                            scale, hidden));
}

}  // namespace axiom
