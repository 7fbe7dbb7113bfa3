// The op functions of fused multi-head attention along one axis (core/launch.h): they check qkv and
// size the outputs; the backends compute (core/cpu/attention.cpp, core/cuda/attention.cu); the
// autograd rule is autograd/ops_attention.cpp.
#include <algorithm>

#include "core/backend.h"
#include "core/checks.h"
#include "core/error.h"
#include "core/factory.h"
#include "core/launch.h"

namespace axiom::core {

namespace {

// qkv [..., 3D] for attention along `axis` with `heads` heads and `mask`, checked; the shapes that follow.
struct AttentionShapes {
  int axis;     // normalised
  Shape out;    // [..., D]
  Shape probs;  // [lines, heads, L, L] or [lines, heads, blocks, P, M]
};
AttentionShapes checked_attention(const char* name, const Tensor& qkv, int64_t axis, int64_t heads,
                                  const AttentionMask& mask) {
  checks::defined(name, qkv, "qkv");
  if (qkv.dtype() == Dtype::bfloat16) {
    const DeviceType device = qkv.device().type;
    if (device != DeviceType::cpu && device != DeviceType::meta)
      throw Error(name, "a bfloat16 qkv lives on the CPU only; got a ", qkv.device(), " tensor");
  } else {
    checks::floating(name, qkv);
  }
  if (qkv.dim() < 2) throw Error(name, "qkv must be [..., L, ..., 3D], got ", qkv.shape());
  const int a = normalize_axis(name, axis, qkv.dim());
  if (a == qkv.dim() - 1)
    throw Error(name, "axis ", axis, " is the feature axis of qkv ", qkv.shape(), "; attend along another");
  if (heads <= 0 || qkv.size(-1) % (3 * heads) != 0) {
    throw Error(name, "qkv's last axis (", qkv.size(-1), ") must be 3 * heads * Dh for heads = ", heads);
  }
  Shape out = qkv.shape();
  out.back() /= 3;
  const int64_t length = qkv.size(a), lines = qkv.numel() / qkv.size(-1) / std::max<int64_t>(length, 1);
  if (mask.kind() != AttentionMask::Kind::blocks) return {a, out, {lines, heads, length, length}};
  const BlockPattern& pattern = mask.pattern();
  if (pattern.length != length) {
    throw Error(name, "the mask's block pattern is for lines of ", pattern.length, ", but qkv ", qkv.shape(),
                " has lines of ", length, " along axis ", axis);
  }
  return {a, out, {lines, heads, pattern.blocks(), pattern.block_queries, pattern.block_keys}};
}

// The dtype attention computes in: qkv's, or float32 for a bfloat16 qkv (stored rounded, widened
// as the kernel reads it).
Dtype computed_dtype(const Tensor& qkv) { return qkv.dtype() == Dtype::bfloat16 ? Dtype::float32 : qkv.dtype(); }

}  // namespace

bool attention_fused(Device device, const AttentionMask& mask) { return backend(device).attention_fuses(mask); }

void check_attention(const Tensor& qkv, int64_t axis, int64_t heads, const AttentionMask& mask) {
  checked_attention("attention", qkv, axis, heads, mask);
}

AttentionResult attention(const Tensor& qkv, int64_t axis, int64_t heads, const AttentionMask& mask) {
  const AttentionShapes shapes = checked_attention("attention", qkv, axis, heads, mask);
  if (!attention_fused(qkv.device(), mask)) {
    throw Error("attention", "the ", qkv.device(),
                " backend does not fuse attention with a block pattern (autograd's attention composes it)");
  }
  const Dtype dtype = computed_dtype(qkv);
  AttentionResult result{empty(shapes.out, dtype, qkv.device()), empty(shapes.probs, dtype, qkv.device())};
  if (qkv.numel() > 0)
    backend(qkv.device()).attention(qkv.contiguous(), shapes.axis, heads, mask, result.output, result.probs);
  return result;
}

namespace {
// attention_backward's operands checked: the shapes that follow from qkv.
AttentionShapes checked_backward(const char* name, const Tensor& qkv, const Tensor& probs, const Tensor& grad_out,
                                 int64_t axis, int64_t heads, const AttentionMask& mask) {
  const AttentionShapes shapes = checked_attention(name, qkv, axis, heads, mask);
  const Dtype dtype = computed_dtype(qkv);
  for (const Tensor* t : {&probs, &grad_out}) {
    checks::defined(name, *t);
    checks::same_device(name, qkv, *t);
    checks::dtype_is(name, *t, dtype, t == &probs ? "probs" : "grad_out");
  }
  if (grad_out.shape() != shapes.out || probs.shape() != shapes.probs) {
    throw Error(name, "for qkv ", qkv.shape(), " expected grad_out ", shapes.out, " and probs ", shapes.probs, "; got ",
                grad_out.shape(), " and ", probs.shape());
  }
  return shapes;
}
}  // namespace

Tensor attention_backward(const Tensor& qkv, const Tensor& probs, const Tensor& grad_out, int64_t axis, int64_t heads,
                          const AttentionMask& mask) {
  const AttentionShapes shapes = checked_backward("attention_backward", qkv, probs, grad_out, axis, heads, mask);
  Tensor grad_qkv = empty(qkv.shape(), computed_dtype(qkv), qkv.device());
  if (qkv.numel() > 0) {
    backend(qkv.device())
        .attention_backward(qkv.contiguous(), probs.contiguous(), grad_out.contiguous(), shapes.axis, heads, mask,
                            grad_qkv);
  }
  return grad_qkv;
}

RoundedWithSums attention_backward_to_bfloat16(const Tensor& qkv, const Tensor& probs, const Tensor& grad_out,
                                               int64_t axis, int64_t heads, const AttentionMask& mask) {
  constexpr const char* name = "attention_backward_to_bfloat16";
  checks::defined(name, qkv, "qkv");
  checks::dtype_is(name, qkv, Dtype::bfloat16, "qkv");
  const AttentionShapes shapes = checked_backward(name, qkv, probs, grad_out, axis, heads, mask);
  RoundedWithSums result{empty(qkv.shape(), Dtype::bfloat16, qkv.device()),
                         zeros({qkv.size(-1)}, Dtype::float32, qkv.device())};
  if (qkv.numel() > 0) {
    backend(qkv.device())
        .attention_backward_rounded(qkv.contiguous(), probs.contiguous(), grad_out.contiguous(), shapes.axis, heads,
                                    mask, result.rounded, result.sums);
  }
  return result;
}

namespace {
// x itself when it has unit stride along its last axis (a view of a cache does), else a copy.
Tensor rows_contiguous(const Tensor& x) { return x.stride(-1) == 1 ? x : x.contiguous(); }

// A step's hidden keys: one flag per key, not all of them set.
void check_hidden_keys(const std::vector<uint8_t>& hidden, int64_t seen) {
  if (static_cast<int64_t>(hidden.size()) != seen) {
    throw Error("attention_step", "hidden has ", hidden.size(), " flags for ", seen, " keys");
  }
  if (std::find(hidden.begin(), hidden.end(), 0) == hidden.end())
    throw Error("attention_step", "hidden hides every one of the ", seen, " keys");
}
}  // namespace

Tensor attention_step(const Tensor& q, const Tensor& keys_t, const Tensor& values, double scale,
                      const std::vector<uint8_t>& hidden) {
  constexpr const char* name = "attention_step";
  checks::floating_peers(name, {&q, &keys_t, &values});
  const int64_t dh = q.dim() >= 2 ? q.size(-1) : 0, seen = keys_t.dim() >= 2 ? keys_t.size(-1) : 0;
  Shape keys_shape = q.shape(),
        values_shape = q.shape();  // what q [..., 1, Dh] asks for: [..., Dh, S] and [..., S, Dh]
  if (q.dim() >= 2) keys_shape.end()[-2] = dh, keys_shape.back() = seen, values_shape.end()[-2] = seen;
  if (q.dim() < 2 || q.size(-2) != 1 || seen < 1 || keys_t.shape() != keys_shape || values.shape() != values_shape) {
    throw Error(
        name,
        "needs q [..., 1, Dh], keys_t [..., Dh, S] and values [..., S, Dh] with the same batch axes and S >= 1; got ",
        q.shape(), ", ", keys_t.shape(), " and ", values.shape());
  }
  if (!hidden.empty()) check_hidden_keys(hidden, seen);
  Tensor out = empty(q.shape(), q.dtype(), q.device());
  if (out.numel() > 0) {
    backend(q.device())
        .attention_step(rows_contiguous(q), rows_contiguous(keys_t), rows_contiguous(values), scale, hidden, out);
  }
  return out;
}

Tensor attention_step_cached(const Tensor& qkv_t, const Tensor& keys_t, const Tensor& values, int64_t t, int64_t first,
                             double scale, const std::vector<uint8_t>& hidden) {
  constexpr const char* name = "attention_step_cached";
  checks::floating_peers(name, {&qkv_t, &keys_t, &values});
  const bool four_axes = keys_t.dim() == 4;
  const int64_t b = four_axes ? keys_t.size(0) : 0, h = four_axes ? keys_t.size(1) : 0,
                dh = four_axes ? keys_t.size(2) : 0, length = four_axes ? keys_t.size(3) : 0;
  if (!four_axes || qkv_t.shape() != Shape{b, 3 * h * dh} || values.shape() != Shape{b, h, length, dh}) {
    throw Error(name, "needs qkv_t [B, 3 H Dh], keys_t [B, H, Dh, L] and values [B, H, L, Dh]; got ", qkv_t.shape(),
                ", ", keys_t.shape(), " and ", values.shape());
  }
  if (first < 0 || first > t || t >= length) {
    throw Error(name, "needs 0 <= first <= t < L = ", length, "; got first ", first, " and t ", t);
  }
  const Tensor parts = qkv_t.reshape({b, 3, h, dh});  // query, key and value of each head
  copy_into(parts.select(1, 1), keys_t.select(3, t));
  copy_into(parts.select(1, 2), values.select(2, t));
  const int64_t seen = t + 1 - first;
  const Tensor query = parts.select(1, 0).unsqueeze(2);  // [B, H, 1, Dh]
  return attention_step(query, keys_t.narrow(3, first, seen), values.narrow(2, first, seen), scale, hidden)
      .reshape({b, h * dh});
}

}  // namespace axiom::core
