// The kernels' launch layer: one function per op that checks its inputs (shapes, dtypes, devices,
// axes), allocates the output and calls one backend kernel. It is internal to axiom: users, and
// every layer above autograd/, call the differentiable ops of autograd/ops.h on axiom::Tensor,
// whose rules call these functions for the numbers. This header is not installed.
//
// Each function throws an axiom::Error naming the op and the offending values. Outputs are fresh
// contiguous tensors unless the comment says otherwise.
//
// Dtypes: both operands of a binary op must have the same dtype (convert with .to(dtype)).
// Ops that only make sense on real numbers (exp, div, softmax, matmul, ...) take float32/float64.
// Comparisons return uint8 tensors of 0 and 1, which where() and masked_fill() take as masks.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "attention_mask.h"
#include "matmul_precision.h"
#include "adam_step.h"
#include "tensor.h"

namespace axiom::core {

enum class UnaryOp;  // core/backend.h

// --- unary (float32/float64, except neg, abs and relu, which also take integers) --------------
Tensor neg(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);  // 1 / sqrt(x)
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor gelu(const Tensor& x);       // x * Phi(x), with the exact erf
Tensor gelu_tanh(const Tensor& x);  // the tanh approximation of GPT-2
Tensor pow(const Tensor& x, double exponent);
// The derivatives of gelu and gelu_tanh, elementwise (for backward passes).
Tensor gelu_derivative(const Tensor& x);
Tensor gelu_tanh_derivative(const Tensor& x);

// --- binary, with NumPy broadcasting ----------------------------------------------------------
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);  // float only
Tensor pow(const Tensor& a, const Tensor& b);  // float only
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
// The same with a scalar on the right, taken in the tensor's dtype.
Tensor add(const Tensor& a, double b);
Tensor sub(const Tensor& a, double b);
Tensor mul(const Tensor& a, double b);
Tensor div(const Tensor& a, double b);

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& x);

// cond ? a : b, broadcast together; cond is uint8.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
// x where mask is 0, value where mask is 1; mask (uint8) broadcasts to x's shape.
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value);

// --- reductions over a set of axes (empty = all axes) -----------------------------------------
Tensor sum(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false);
Tensor mean(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false);
// Divides by (count - correction): 1 is the unbiased sample variance, 0 the population one.
Tensor var(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false, int64_t correction = 1);
Tensor max(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false);
Tensor min(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false);  // NaN wins, as for max
// The maximum along one axis and where it is (int64; the first one on ties, NaN wins).
std::pair<Tensor, Tensor> max_with_indices(const Tensor& x, int64_t axis, bool keepdim = false);
Tensor argmax(const Tensor& x, int64_t axis, bool keepdim = false);
// How many elements of all the tensors (floating, on one device) are NaN or infinite: a float64
// scalar on their device, made without a copy to the host (a GPU counts many tensors a launch).
// A training step checks every weight this way and reads the count with its loss.
Tensor count_non_finite(const std::vector<Tensor>& tensors);

// --- normalisation ----------------------------------------------------------------------------
Tensor softmax(const Tensor& x, int64_t axis = -1);
Tensor log_softmax(const Tensor& x, int64_t axis = -1);
// A value drawn from each row of logits [..., V]: v with probability softmax(logits / temperature)_v
// (temperature > 0), chosen by the uniforms [...] (in [0, 1), logits' dtype): the first v whose
// cumulative probability passes the row's uniform (core/categorical.h, which also says what a row
// with a NaN or an infinity draws). int64 [...], on the logits' device. Not differentiable.
Tensor categorical(const Tensor& logits, const Tensor& uniforms, double temperature = 1);
struct LayerNormResult {
  Tensor output;  // x's shape
  Tensor mean;    // x's shape without the last axis: saved for the backward pass
  Tensor rstd;    // 1 / sqrt(var + eps), same shape as mean
};
// Over the last axis, with optional weight and bias of shape [D] (pass Tensor() to omit).
LayerNormResult layer_norm(const Tensor& x, const Tensor& weight = {}, const Tensor& bias = {}, double eps = 1e-5);
// The same with the output in `output_dtype`: x's dtype, or bfloat16 for a float32 x on the CPU
// (rounded as it is written: the operand of layer_norm_linear's bfloat16 product; the values of
// x made contiguous). mean and rstd stay in x's dtype.
LayerNormResult layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, Dtype output_dtype);
// The gradients of layer_norm's weight and bias, [D] each in x's dtype, from the forward's x [..., D],
// mean and rstd and grad_out (x's shape): sums over the rows of grad_out * (x - mean) * rstd and of
// grad_out, with the bits of core::sum of those products, without temporaries the size of x.
struct LayerNormParamGrads {
  Tensor weight, bias;
};
LayerNormParamGrads layer_norm_param_grads(const Tensor& x, const Tensor& mean, const Tensor& rstd,
                                           const Tensor& grad_out);
// d loss / d x of layer_norm, from the forward's x, weight (or Tensor()), mean and rstd, and
// grad_out = d loss / d output (x's shape). (The weight and bias gradients are plain sums.)
Tensor layer_norm_backward(const Tensor& x, const Tensor& weight, const Tensor& mean, const Tensor& rstd,
                           const Tensor& grad_out);

// --- cross-entropy ----------------------------------------------------------------------------
struct CrossEntropyResult {
  Tensor losses;  // targets' shape: one loss per row
  Tensor lse;     // the same shape: log sum exp of each row of logits, saved for the backward pass
};
// Softmax cross-entropy of logits [..., C] against targets [...] (int64 classes in [0, C)), fused
// (no log-probabilities are kept), with label smoothing s in [0, 1]:
//   loss = -sum_c q_c log softmax(x)_c,  q = (1 - s) onehot(target) + s / C
CrossEntropyResult cross_entropy(const Tensor& logits, const Tensor& targets, double label_smoothing = 0);
// d loss / d logits [..., C] = (softmax(x) - q) * grad_losses, from the forward's logits and lse,
// and grad_losses (targets' shape).
Tensor cross_entropy_backward(const Tensor& logits, const Tensor& targets, const Tensor& lse, const Tensor& grad_losses,
                              double label_smoothing = 0);

// --- attention --------------------------------------------------------------------------------
struct AttentionResult {
  Tensor output;  // [..., D]
  Tensor probs;   // the softmax weights, saved for the backward pass: [lines, heads, L, L], or
                  // [lines, heads, blocks, P, M] for a block pattern (core/attention_mask.h)
};
// Multi-head scaled dot-product self-attention along `axis` (not the last), fused: qkv [..., 3D]
// holds each position's query, key and value (each D = heads * Dh wide); every position attends to
// the positions of its line along `axis` that `mask` lets it see.
//   out = softmax(Q K^T / sqrt(Dh), over the keys the mask lets each query see) V, per line and head  -> [..., D]
// An Error when the backend does not fuse this kind of mask (attention_fused says whether it does).
// On the CPU, qkv may be bfloat16 (a rounded product's output): the kernel widens each line to
// float32 as it copies it (half the bytes to read) where it copies lines (short ones, no block
// pattern: core/cpu/attention.cpp), else the whole qkv first; out and probs are float32.
AttentionResult attention(const Tensor& qkv, int64_t axis, int64_t heads, const AttentionMask& mask);
// d loss / d qkv [..., 3D] from grad_out [..., D] and the forward's qkv, mask and probs (for a
// bfloat16 qkv: float32 probs and grad_out, and a float32 result).
Tensor attention_backward(const Tensor& qkv, const Tensor& probs, const Tensor& grad_out, int64_t axis, int64_t heads,
                          const AttentionMask& mask);
// The same for a bfloat16 qkv, with d loss / d qkv as the projection's bfloat16 backward products
// take it (layer_norm_attention): rounded to bfloat16 [..., 3D], and summed over every axis but the
// last ([3D], float32, from the values before rounding: the projection's bias gradient). Where
// the CPU kernel copies lines, both as it writes each line, the sums per line and then over the
// lines in order (the same bits on any number of threads, not core::sum's); elsewhere, the float32
// gradient first, then to_bfloat16_with_sums.
// A gradient rounded to bfloat16, with its sums over every axis but the last (a bias's gradient):
// what a layer's bfloat16 backward products take (to_bfloat16_with_sums, with the conversions).
struct RoundedWithSums {
  Tensor rounded;  // bfloat16, the gradient's shape [..., N]
  Tensor sums;     // float32 [N]
};
RoundedWithSums attention_backward_to_bfloat16(const Tensor& qkv, const Tensor& probs, const Tensor& grad_out,
                                               int64_t axis, int64_t heads, const AttentionMask& mask);
// Whether `device`'s backend runs attention with this kind of mask fused (else a caller composes it).
bool attention_fused(Device device, const AttentionMask& mask);
// The Errors attention gives for qkv, axis, heads and mask, alone (for a caller that composes it).
void check_attention(const Tensor& qkv, int64_t axis, int64_t heads, const AttentionMask& mask);
// One query per line against that line's cached keys and values (a sampler's step), fused, not
// differentiable:  out = softmax(scale * q K^T) V  per line:
//   q [..., 1, Dh], keys_t [..., Dh, S] (the keys transposed), values [..., S, Dh] -> [..., 1, Dh],
// the batch axes of the three alike (no broadcasting), S >= 1. `hidden` (empty, or S flags on the
// host) masks keys out: 1 where no line's query sees key s; at least one key must be seen.
Tensor attention_step(const Tensor& q, const Tensor& keys_t, const Tensor& values, double scale,
                      const std::vector<uint8_t>& hidden = {});
// A sampler's step with a key/value cache, in one op: qkv_t [B, 3D] holds position t's query, key
// and value of B lines (heads side by side, as attention's qkv), keys_t [B, H, Dh, L] and values
// [B, H, L, Dh] the caches (D = H Dh). Writes position t's key into keys_t[:, :, :, t] and its
// value into values[:, :, t, :] (a write, like copy_into), then attends its query over positions
// first..t (attention_step; `hidden`: t + 1 - first flags, or none) -> [B, D].
Tensor attention_step_cached(const Tensor& qkv_t, const Tensor& keys_t, const Tensor& values, int64_t t, int64_t first,
                             double scale, const std::vector<uint8_t>& hidden = {});

// --- matrix product ---------------------------------------------------------------------------
// [..., M, K] @ [..., K, N] -> [..., M, N], batch axes broadcast. A 1-D operand is a vector
// (as in NumPy): [K] @ [K, N] -> [N], [M, K] @ [K] -> [M].
Tensor matmul(const Tensor& a, const Tensor& b);
// x [..., K] @ weight [K, N] + bias [N] -> [..., N] (a Dense layer), the bias added by the product
// itself: out starts as the bias, and BLAS accumulates onto it (no separate pass over out).
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias);
// The same with the output in `output_dtype`: the product's own (x's, or float32 for bfloat16
// operands), or bfloat16 for bfloat16 x and weight on the CPU: each float32 sum, bias added,
// rounded as it is written (the next product's operand: layer_norm_attention's qkv).
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias, Dtype output_dtype);

// (How float32 products multiply, MatmulPrecision: core/matmul_precision.h.)

// --- optimizer steps --------------------------------------------------------------------------
// One Adam (AdamW) step, fused: param, exp_avg and exp_avg_sq (contiguous, updated in place) move
// by the formula of core/adam_step.h from grad, all four of one shape, floating dtype and device.
// Like copy_into, it counts as a write: a graph that saw the old values refuses to go backward.
void adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                 const AdamStep& step);
// The same for many parameters at once, each with its own step: on a GPU a few launches for all of
// them rather than one each (the same numbers as one adam_update each). Every one is checked
// before any is changed.
void adam_update_many(const std::vector<AdamUpdate>& updates);

// --- indexing ---------------------------------------------------------------------------------
// x with `axis` indexed by index (int64, 1-D): out.size(axis) == index.numel().
Tensor index_select(const Tensor& x, int64_t axis, const Tensor& index);
// x + src scattered along `axis`: out.narrow(axis, index[i], 1) += src.narrow(axis, i, 1).
Tensor index_add(const Tensor& x, int64_t axis, const Tensor& index, const Tensor& src);
// weight [V, D] looked up at indices [...] (int64) -> [..., D].
Tensor embedding(const Tensor& weight, const Tensor& indices);
// out[i][j][k] = x[i][index[i][j][k]][k] for axis 1 (any rank). index has x's shape except on `axis`.
Tensor gather(const Tensor& x, int64_t axis, const Tensor& index);
// x + src scattered by index: out[i][index[i][j][k]][k] += src[i][j][k] for axis 1. src has index's shape.
Tensor scatter_add(const Tensor& x, int64_t axis, const Tensor& index, const Tensor& src);

// --- joining and moving along an axis ----------------------------------------------------------
Tensor concat(const std::vector<Tensor>& tensors, int64_t axis);
Tensor stack(const std::vector<Tensor>& tensors, int64_t axis);
// `before` and `after` elements of `value` added at the two ends of `axis`.
Tensor pad(const Tensor& x, int64_t axis, int64_t before, int64_t after, double value = 0);
// Moves every element `amount` places along `axis` (negative: backwards). Zeros come in at one
// end, values fall out at the other; the shape stays.  shift([1, 2, 3], 0, 1) -> [0, 1, 2].
Tensor shift(const Tensor& x, int64_t axis, int64_t amount);

// target *= factor, elementwise and in place (factor broadcast to target's shape, same dtype):
// for a backward rule that owns a fresh buffer and need not allocate another as big. target must
// be contiguous. Counts as a write, like copy_into.
void mul_in_place(const Tensor& target, const Tensor& factor);

// The backward pass of an activation whose output feeds a product, in one pass over h where the
// backend can (autograd's activation_linear): returns activation(h), and multiplies grad by
// activation'(h) in place. activation: UnaryOp::gelu, gelu_tanh or relu. h [...] floating; grad
// h's shape and dtype, contiguous. Counts as a write to grad, like mul_in_place.
Tensor activation_backward(UnaryOp activation, const Tensor& h, const Tensor& grad);
// The same with activation(h) returned in `activated_dtype`: h's dtype, or bfloat16 for a float32
// h on the CPU (rounded as it is written: the operand of the weight's bfloat16 product).
Tensor activation_backward(UnaryOp activation, const Tensor& h, const Tensor& grad, Dtype activated_dtype);
// activation(h) rounded to bfloat16 in one pass, with no float32 copy (activation: gelu,
// gelu_tanh or relu; h float32, or bfloat16 widened as it is read; on the CPU): the operand of
// activation_linear's bfloat16 product.
Tensor activation_to_bfloat16(UnaryOp activation, const Tensor& h);

// The backward pass of an activation between two bfloat16 products (autograd's
// layer_norm_feedforward), in one pass over h and grad on the CPU: from h [..., W] (bfloat16 or
// float32) and grad = d loss / d activation(h) [..., W] (float32, the next product's input
// gradient), with s = grad * activation'(h):
//   result.grad.rounded = s rounded to bfloat16                      (the products that made h take it)
//   result.grad.sums    = s summed over every axis but the last [W]  (their bias's gradient, float32)
//   result.activated    = activation(h) rounded to bfloat16          (the next weight's gradient takes it)
// The bits of activation_backward(h widened, a copy of grad, bfloat16) followed by
// to_bfloat16_with_sums of that copy. grad itself is left as it is.
struct ActivationGradRounded {
  RoundedWithSums grad;  // h's gradient
  Tensor activated;      // bfloat16, h's shape
};
ActivationGradRounded activation_backward_to_bfloat16(UnaryOp activation, const Tensor& h, const Tensor& grad);

// --- conversions -----------------------------------------------------------------------------
// g [..., N] (float32, on the CPU) rounded to bfloat16, and g summed over every axis but the last
// ([N], float32, the bits of core::sum), in one pass over g: a layer's gradient as its bfloat16
// backward products take it, and its bias's gradient (autograd/bfloat16_products.h).
RoundedWithSums to_bfloat16_with_sums(const Tensor& g);
// dst[...] = src[...] (converting dtype) for same-shaped tensors on one device; dst may be a view.
void copy_into(const Tensor& src, const Tensor& dst);

}  // namespace axiom::core
