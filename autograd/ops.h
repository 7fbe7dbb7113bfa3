// The differentiable ops: the same names as core's (core/launch.h), on axiom::Tensor. Each one
// computes its value with core and records how its gradient flows back (the rule sits beside the
// forward call in ops_<family>.cpp, with the shape of every formula).
#pragma once

#include <vector>

#include "tensor.h"
#include "../core/attention_mask.h"
#include "../core/random.h"

namespace axiom {

// --- elementwise (ops_elementwise.cpp) --------------------------------------------------------
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);  // ties split the gradient evenly
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor add(const Tensor& a, double b);
Tensor sub(const Tensor& a, double b);
Tensor mul(const Tensor& a, double b);
Tensor div(const Tensor& a, double b);
Tensor pow(const Tensor& x, double exponent);
Tensor neg(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor gelu(const Tensor& x);
Tensor gelu_tanh(const Tensor& x);
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);  // cond: uint8, no gradient
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value);

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& x);

// Comparisons give uint8 tensors and no gradient.
Tensor eq(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);

// Zeroes each element with probability p and scales the rest by 1 / (1 - p), with a mask drawn from
// `gen`; the identity when `training` is false or p is 0.
Tensor dropout(const Tensor& x, double p, bool training, Generator& gen = default_generator());

// --- reductions (ops_reduce.cpp); an empty axes list means every axis ---------------------------
Tensor sum(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false);
Tensor mean(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false);
Tensor var(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false, int64_t correction = 1);
Tensor max(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false);  // ties share
Tensor min(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false);  // ties share
// Where the maximum along `axis` is (int64; the first one on ties): no gradient.
Tensor argmax(const Tensor& x, int64_t axis, bool keepdim = false);

// --- matrix product (ops_matmul.cpp) -----------------------------------------------------------
Tensor matmul(const Tensor& a, const Tensor& b);
// x [..., K] @ weight [K, N] + bias [N] -> [..., N], the bias added inside the product (Dense);
// an undefined bias is none: matmul(x, weight).
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias);

// The nonlinearities of a feed-forward layer.
enum class Activation { gelu, gelu_tanh, relu };
Tensor activate(Activation activation, const Tensor& x);  // gelu(x), gelu_tanh(x) or relu(x)
// linear(activate(activation, h), weight, bias) with the same numbers and gradients, keeping only
// h for the backward pass: activate(h), as wide as h, is recomputed there instead of kept.
// h [..., K], weight [K, N], bias [N] or undefined -> [..., N].
Tensor activation_linear(Activation activation, const Tensor& h, const Tensor& weight, const Tensor& bias);

// --- shape (ops_shape.cpp; the view methods are on Tensor) --------------------------------------
Tensor concat(const std::vector<Tensor>& tensors, int64_t axis);
Tensor stack(const std::vector<Tensor>& tensors, int64_t axis);
Tensor pad(const Tensor& x, int64_t axis, int64_t before, int64_t after, double value = 0);
Tensor shift(const Tensor& x, int64_t axis, int64_t amount);

// --- attention (ops_attention.cpp) ----------------------------------------------------------------
// Multi-head self-attention along `axis` from packed projections qkv [..., 3D] -> [..., D]:
//   out = softmax(Q K^T / sqrt(Dh) + bias, over the keys `mask` lets each query see) V, per line and head
// The mask says which keys a query sees (core/attention_mask.h: all, causal, or a block pattern
// such as nn::local_mask); the bias (optional, differentiable) adds to the scaled scores, laid out
// as attention_queries' output: [..., H, L, L] (or broadcast to it; nn::relative_bias makes one).
// Fused (core::attention) when there is no bias and the device's backend fuses the mask; else the
// same from plain ops, differentiated like any composite.
using core::AttentionMask;
Tensor attention(const Tensor& qkv, int64_t axis, int64_t heads, const AttentionMask& mask, const Tensor& bias = {});
// attention(layer_norm_linear(x, norm_weight, norm_bias, eps, weight, bias), axis, heads, mask):
// an attention layer's input normalized, projected to qkv [..., 3D] (weight [D, 3D]) and attended
// -> [..., D]. Under MatmulPrecision::bfloat16 (a product that rounds, a mask the device fuses
// along lines), one fused op: qkv is written, kept and read in bfloat16 (the projection's sums
// rounded as they are written, half the bytes), and the backward pass goes from qkv's gradient
// straight into the projection's. Otherwise the two ops themselves.
Tensor layer_norm_attention(const Tensor& x, const Tensor& norm_weight, const Tensor& norm_bias, double eps,
                            const Tensor& weight, const Tensor& bias, int64_t axis, int64_t heads,
                            const AttentionMask& mask);
// The queries of qkv [..., L (at axis), ..., 3D] split into heads, each line's axis moved next to
// the features: [..., H, L, Dh], the other axes in their order (the layout of a bias).
Tensor attention_queries(const Tensor& qkv, int64_t axis, int64_t heads);
// One query per line against that line's cached keys and values, fused (core::attention_step):
// softmax(scale * q K^T) V for q [..., 1, Dh], keys_t [..., Dh, S], values [..., S, Dh] -> [..., 1, Dh].
// For inference (a sampler's step): with gradients recorded and an input that needs one, an Error.
// `hidden` (empty, or S flags): keys no query sees (a local attention's step).
Tensor attention_step(const Tensor& q, const Tensor& keys_t, const Tensor& values, double scale,
                      const std::vector<uint8_t>& hidden = {});
// The same step with its key/value cache, in one op (core::attention_step_cached): position t's
// qkv_t [B, 3D] writes its key and value into keys_t [B, H, Dh, L] and values [B, H, L, Dh], and
// its query attends over positions first..t -> [B, D]. For inference, as attention_step.
Tensor attention_step_cached(const Tensor& qkv_t, const Tensor& keys_t, const Tensor& values, int64_t t, int64_t first,
                             double scale, const std::vector<uint8_t>& hidden = {});

// --- indexing (ops_index.cpp) ---------------------------------------------------------------------
// out[i][j][k] = x[i][index[i][j][k]][k] for axis 1 (any rank); index: int64, x's shape but on `axis`.
Tensor gather(const Tensor& x, int64_t axis, const Tensor& index);
// x's slices along `axis` at index (int64, 1-D, any order, repeats allowed): out.size(axis) == index.numel().
Tensor index_select(const Tensor& x, int64_t axis, const Tensor& index);

// weight [V, D] at indices [...] (int64) -> [..., D]; the gradient goes to weight only.
Tensor embedding(const Tensor& weight, const Tensor& indices);

// --- writing into a tensor (ops_shape.cpp) --------------------------------------------------------
// dst[...] = src[...] (converting dtype), dst a tensor or a view of one: a sampler filling in the
// image it draws. Never recorded, so dst must not require a gradient; a graph that saw dst's old
// values refuses to go backward (the write bumps its storage's version).
void copy_into(const Tensor& src, const Tensor& dst);

// --- normalizing: softmax, layer norm, cross-entropy (ops_normalize.cpp) -------------------------
Tensor softmax(const Tensor& x, int64_t axis = -1);
Tensor log_softmax(const Tensor& x, int64_t axis = -1);
// A value drawn from each row of logits [..., V] with probability softmax(logits / temperature),
// chosen by uniforms [...] in [0, 1): int64 [...], no gradient (core::categorical says how).
Tensor categorical(const Tensor& logits, const Tensor& uniforms, double temperature = 1);
// Over the last axis; weight and bias [D] may be undefined Tensors.
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps = 1e-5);
// linear(layer_norm(x, norm_weight, norm_bias, eps), weight, bias) with the same numbers and
// gradients, keeping x for the backward pass instead of the normalized x (recomputed there).
// x [..., D], norm_weight and norm_bias [D] or undefined, weight [D, N], bias [N] or undefined -> [..., N].
Tensor layer_norm_linear(const Tensor& x, const Tensor& norm_weight, const Tensor& norm_bias, double eps,
                         const Tensor& weight, const Tensor& bias);
// activation_linear(activation, layer_norm_linear(x, norm_weight, norm_bias, eps, up_weight,
// up_bias), down_weight, down_bias): a feed-forward layer's input normalized, projected up to h
// [..., D'] (up_weight [D, D']), activated and projected down (down_weight [D', N]) -> [..., N].
// Under MatmulPrecision::bfloat16 (products that round), one fused op: h is written, kept and read
// in bfloat16 (half the bytes; with an up_bias, its sums rounded as they are written), and the
// activation's backward pass writes h's gradient rounded, with its sums for up_bias. Otherwise the
// two ops themselves.
Tensor layer_norm_feedforward(const Tensor& x, const Tensor& norm_weight, const Tensor& norm_bias, double eps,
                              const Tensor& up_weight, const Tensor& up_bias, Activation activation,
                              const Tensor& down_weight, const Tensor& down_bias);

enum class Reduction { mean, sum, none };
struct CrossEntropyOptions {
  double label_smoothing = 0;  // mix the target with the uniform distribution: (1 - s) onehot + s / C
  Reduction reduction = Reduction::mean;
};
// Softmax cross-entropy of logits [..., C] against integer targets [...] (int64 in [0, C)),
// fused with log_softmax. Mean, sum or per-element (none) loss, in nats.
Tensor cross_entropy(const Tensor& logits, const Tensor& targets, const CrossEntropyOptions& options = {});

}  // namespace axiom
