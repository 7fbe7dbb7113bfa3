// Backend: everything that differs between devices, behind one small interface.
//
// An op function (core/ops_*.cpp) validates its inputs, works out the output's shape and dtype,
// allocates the output, and then calls one kernel here. A kernel may therefore assume valid input:
// matching dtypes, broadcast shapes, in-range axes, and an `out` that is a fresh tensor of the right
// shape (contiguous, unless the kernel's comment says otherwise). Inputs may have any strides.
//
// The CPU backend (core/cpu) implements everything. A CUDA backend registers itself for
// DeviceType::cuda; without one, a stub answers every call with an Error. Callers never change.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "adam_step.h"
#include "attention_mask.h"
#include "device.h"
#include "index_bounds.h"
#include "memory.h"

namespace axiom::core {

enum class MatmulPrecision;  // core/matmul_precision.h

class Tensor;

enum class UnaryOp {
  neg,
  abs,
  exp,
  log,
  sqrt,
  rsqrt,
  tanh,
  sigmoid,
  relu,
  gelu,
  gelu_tanh,
  pow_scalar,
  gelu_derivative,
  gelu_tanh_derivative,  // d gelu / dx, for the backward pass
};
enum class BinaryOp { add, sub, mul, div, pow, maximum, minimum, eq, ne, lt, le, gt, ge };
enum class ReduceOp { sum, mean, max, var, min };
// How many values each enum has (the last one + 1): what a test walks to see every op covered.
constexpr int kNumUnaryOps = static_cast<int>(UnaryOp::gelu_tanh_derivative) + 1;
constexpr int kNumBinaryOps = static_cast<int>(BinaryOp::ge) + 1;
constexpr int kNumReduceOps = static_cast<int>(ReduceOp::min) + 1;

std::string_view op_name(UnaryOp op);
std::string_view op_name(BinaryOp op);
std::string_view op_name(ReduceOp op);

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  // Whether this backend can run here (a CUDA backend on a machine without a GPU cannot: its
  // calls throw an Error saying why). Tests that need a device skip when it is not available.
  virtual bool available() const { return true; }
  // Returns once every kernel launched so far has finished (devices that run asynchronously).
  virtual void synchronize() {}

  // --- memory ---------------------------------------------------------------------------------
  // The device's memory for tensors: its size, and what tensors could still get (free memory plus
  // the blocks this backend's allocator keeps for reuse). The default: the machine's (core/memory.h).
  virtual MachineMemory memory();
  // Gives the blocks the allocator keeps for reuse back to the system or the driver; returns how
  // many bytes that was. Tensors in use keep theirs.
  virtual size_t release_cached_memory() { return 0; }
  virtual void* allocate(size_t nbytes) = 0;
  virtual void deallocate(void* data, size_t nbytes) noexcept = 0;  // never throws
  virtual void copy_from_host(void* dst, const void* host_src, size_t nbytes) = 0;
  virtual void copy_to_host(void* host_dst, const void* src, size_t nbytes) = 0;

  // --- kernels ----------------------------------------------------------------------------------
  // out[...] = value. `out` may have any strides.
  virtual void fill(const Tensor& out, double value) = 0;
  // out (contiguous float32) = uniform draws in [low, high) from counters first, first + 1, ... of
  // the seed's stream, each uniform_float32(seed, counter, low, high) (core/random.h): the same
  // numbers on every device. This default draws on the host and copies; the CPU backend draws
  // several at a time (SIMD), on every thread.
  virtual void uniform(const Tensor& out, uint64_t seed, uint64_t first, double low, double high);
  // dst[...] = src[...], converting the dtype. Same shape; both may have any strides. (bfloat16
  // converts to and from float32 only, on the CPU: core/checks.h, convertible.)
  virtual void copy(const Tensor& src, const Tensor& dst) = 0;
  // out = op(x); `scalar` is the exponent of pow_scalar. A bfloat16 out (the CPU's alone) takes an
  // activation of a contiguous float32 or bfloat16 x, rounded (core::activation_to_bfloat16).
  virtual void unary(UnaryOp op, const Tensor& x, const Tensor& out, double scalar) = 0;
  // The backward pass of activation(h) before a product, in one pass over h: activated =
  // activation(h), and grad *= activation'(h) in place (activation: gelu, gelu_tanh or relu). All
  // three contiguous, of one shape and dtype, but for a float32 h on the CPU `activated` may be
  // bfloat16 (rounded). This default runs the activation, its derivative and a multiply as three
  // kernels; the CPU backend fuses them for float32.
  virtual void activation_backward(UnaryOp activation, const Tensor& h, const Tensor& grad, const Tensor& activated);
  // out = a op b; a and b are already expanded (broadcast views) to out's shape.
  virtual void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) = 0;
  // out = cond ? a : b; all three expanded to out's shape; cond is uint8.
  virtual void where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) = 0;
  // out: x's shape with the reduced `axes` (sorted, distinct) set to size 1. For max, `argmax`
  // (int64, out's shape, or undefined) receives the row-major index within the reduced axes.
  // var divides by (count - correction).
  // out (float64 []) = how many elements of `tensors` (contiguous, floating, of any dtypes) are NaN
  // or infinite.
  virtual void count_non_finite(const std::vector<Tensor>& tensors, const Tensor& out) = 0;
  virtual void reduce(ReduceOp op, const Tensor& x, const std::vector<int>& axes, const Tensor& out,
                      const Tensor& argmax, int64_t correction) = 0;
  // rounded (bfloat16, g's shape) = g rounded, and sums (float32 [N]) = g summed over every axis but
  // the last, as reduce sums; g [..., N] contiguous float32. This default copies and reduces; the
  // CPU backend does both in one pass over g.
  virtual void to_bfloat16_with_sums(const Tensor& g, const Tensor& rounded, const Tensor& sums);
  // The backward pass of an activation between two bfloat16 products
  // (core::activation_backward_to_bfloat16): from h [..., W] (bfloat16 or float32) and grad [..., W]
  // (float32), both contiguous, rounded (bfloat16) = grad * activation'(h) rounded, sums (float32
  // [W]) = the same summed over every axis but the last, activated (bfloat16) = activation(h)
  // rounded; grad unchanged. This default widens h, copies grad, then runs activation_backward and
  // to_bfloat16_with_sums; the CPU backend does it in one pass over h and grad.
  virtual void activation_backward_to_bfloat16(UnaryOp activation, const Tensor& h, const Tensor& grad,
                                               const Tensor& rounded, const Tensor& sums, const Tensor& activated);
  // out = softmax or log_softmax of x along `axis`.
  virtual void softmax(const Tensor& x, int axis, bool log, const Tensor& out) = 0;
  // out (int64 [...], contiguous) = a value drawn from each row of logits [..., V] at `temperature`
  // with the uniforms [...] (both contiguous, of one floating dtype): core/categorical.h. This
  // default draws on the host, a copy there and back; the CPU backend draws in place, and the GPU
  // in a thread per row.
  virtual void categorical(const Tensor& logits, const Tensor& uniforms, double temperature, const Tensor& out);
  // Multi-head self-attention along `axis`, fused (scores, softmax and mixing in one kernel).
  // qkv [..., 3D] holds every position's query, key and value side by side, each D = heads * Dh
  // wide and split into heads of Dh; `axis` is not the last. Each position attends to the keys of
  // its line along `axis` that `mask` lets it see (core/attention_mask.h). out [..., D] and probs
  // (the softmax weights, saved for the backward pass: [lines, heads, L, L], or [lines, heads,
  // blocks, P, M] for a block pattern) are written; all three are contiguous. Called only for
  // masks that attention_fuses accepts. On the CPU, qkv may be bfloat16 (out and probs float32).
  virtual void attention(const Tensor& qkv, int axis, int64_t heads, const AttentionMask& mask, const Tensor& out,
                         const Tensor& probs) = 0;
  // grad_qkv [..., 3D] (written whole) from grad_out [..., D] and the forward's qkv and probs; all
  // contiguous. A bfloat16 qkv (the CPU's alone) comes with float32 probs, grad_out and grad_qkv.
  virtual void attention_backward(const Tensor& qkv, const Tensor& probs, const Tensor& grad_out, int axis,
                                  int64_t heads, const AttentionMask& mask, const Tensor& grad_qkv) = 0;
  // attention_backward of a bfloat16 qkv (the CPU's alone) with its gradient as a bfloat16 product
  // takes it: rounded (bfloat16, qkv's shape) = grad_qkv rounded, and sums (float32 [3D]) = grad_qkv
  // summed over every axis but the last, before rounding. This default runs attention_backward
  // into float32, then to_bfloat16_with_sums; the CPU's rounds and sums each line as it writes it,
  // where it copies lines (else this default).
  virtual void attention_backward_rounded(const Tensor& qkv, const Tensor& probs, const Tensor& grad_out, int axis,
                                          int64_t heads, const AttentionMask& mask, const Tensor& rounded,
                                          const Tensor& sums);
  // Whether attention above takes this kind of mask; this default fuses all and causal only.
  virtual bool attention_fuses(const AttentionMask& mask) const { return mask.kind() != AttentionMask::Kind::blocks; }
  // out [..., 1, Dh] = softmax(scale * q keys_t) values per line (core/launch.h attention_step); the
  // operands' rows are contiguous (unit stride on their last axis), out is contiguous. This default
  // composes matmul, softmax and matmul; the CPU backend fuses them.
  // `hidden` (empty, or S flags on the host): keys no query sees.
  virtual void attention_step(const Tensor& q, const Tensor& keys_t, const Tensor& values, double scale,
                              const std::vector<uint8_t>& hidden, const Tensor& out);
  // Why float32 products cannot multiply at `precision` on this backend ("" when they can; core/launch.h).
  virtual std::string matmul_precision_unavailable(MatmulPrecision precision) const;
  // out[..., M, N] = a[..., M, K] @ b[..., K, N], expanded to out's batch shape (bfloat16 a and b, the
  // CPU's alone, give a float32 out); with `accumulate`, out += a @ b (out holds a bias, say).
  virtual void matmul(const Tensor& a, const Tensor& b, const Tensor& out, bool accumulate) = 0;
  // out[..., M, N] = a @ b + bias, bias [N] (contiguous) added to every row. This default writes the
  // bias into out and accumulates the product onto it; a backend whose library adds a bias as it
  // writes the product (the CPU's oneDNN) saves those two passes over out. On the CPU, out may be
  // bfloat16 for bfloat16 a and b (each float32 sum rounded).
  virtual void linear(const Tensor& a, const Tensor& b, const Tensor& bias, const Tensor& out);
  // Over the last axis: out = (x - mean) * rstd * weight + bias; weight and bias ([D], contiguous)
  // may be undefined. On the CPU, out may be bfloat16 for a contiguous float32 x (rounded).
  // mean and rstd have x's shape without its last axis.
  virtual void layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, const Tensor& out,
                          const Tensor& mean, const Tensor& rstd) = 0;
  // The gradient of layer_norm with respect to x, one row at a time, from the saved mean and rstd:
  //   xhat = (x - mean) * rstd,  gw = grad_out * weight,
  //   grad_x = rstd * (gw - mean(gw) - xhat * mean(gw * xhat))      (means over the last axis)
  // weight ([D], contiguous) may be undefined; grad_x is contiguous with x's shape.
  virtual void layer_norm_backward(const Tensor& x, const Tensor& weight, const Tensor& mean, const Tensor& rstd,
                                   const Tensor& grad_out, const Tensor& grad_x) = 0;
  // dweight = sum over rows of grad_out * (x - mean) * rstd, dbias = sum over rows of grad_out ([D]
  // each); x and grad_out [..., D], mean and rstd x's rows, all contiguous. This default composes
  // ops; the CPU backend sums without temporaries (one pass over x and grad_out, one over grad_out),
  // with the bits of those ops.
  virtual void layer_norm_param_grads(const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& grad_out,
                                      const Tensor& dweight, const Tensor& dbias);
  // Checks that every value of `index` (int64, any strides) lies within `bounds`, throwing
  // bounds.out_of_range for the first that does not. The default reads the values on the host. A
  // GPU backend checks them on the GPU without waiting for it, and throws that same Error at its
  // next copy to the host or synchronize(); its kernels skip an index out of range meanwhile.
  virtual void check_indices(const IndexBounds& bounds, const Tensor& index);
  // out = x with its `axis` indexed by `index` (int64, 1-D, in range). x contiguous.
  virtual void index_select(const Tensor& x, int axis, const Tensor& index, const Tensor& out) = 0;
  // out.narrow(axis, index[i], 1) += src.narrow(axis, i, 1). out and src contiguous.
  virtual void index_add(const Tensor& out, int axis, const Tensor& index, const Tensor& src) = 0;
  // out[.., j, ..] = x[.., index[.., j, ..], ..] along `axis`. x and index contiguous.
  virtual void gather(const Tensor& x, int axis, const Tensor& index, const Tensor& out) = 0;
  // out[.., index[.., j, ..], ..] += src[.., j, ..] along `axis`. out, index, src contiguous.
  virtual void scatter_add(const Tensor& out, int axis, const Tensor& index, const Tensor& src) = 0;
  // Softmax cross-entropy of each row of logits [R, C] against targets [R] (int64, in [0, C)), with
  // label smoothing s:  lse_r = log sum_c exp x[r, c],  loss_r = lse_r - (1 - s) x[r, t_r] - s mean_c x[r, c].
  // losses [R] and lse [R] (saved for the backward pass) are written; all contiguous.
  virtual void cross_entropy(const Tensor& logits, const Tensor& targets, double smoothing, const Tensor& losses,
                             const Tensor& lse) = 0;
  // grad_logits [R, C] = (exp(x[r, c] - lse_r) - q[r, c]) * grad_losses[r], q = (1 - s) onehot(t_r) + s / C.
  virtual void cross_entropy_backward(const Tensor& logits, const Tensor& targets, const Tensor& lse,
                                      const Tensor& grad_losses, double smoothing, const Tensor& grad_logits) = 0;
  // One Adam step on every element (core/adam_step.h): param, exp_avg and exp_avg_sq are updated
  // in place from grad. All four contiguous, of one shape and floating dtype.
  virtual void adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                           const AdamStep& step) = 0;
  // adam_update for each of `updates` (all on this device, of one dtype). The default calls
  // adam_update for each; a GPU does them in a few launches.
  virtual void adam_update_many(const std::vector<AdamUpdate>& updates);
};

// The backend that serves a device. Throws an Error for a device type with no backend.
Backend& backend(Device device);
// Installs `backend` for every device of `type`, returning the one it replaces. Do it while no
// tensor of that device type is alive: a Storage frees through the backend registered at the time.
std::unique_ptr<Backend> register_backend(DeviceType type, std::unique_ptr<Backend> backend);

}  // namespace axiom::core
