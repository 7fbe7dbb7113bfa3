// The float32 kernels that decide the CPU's speed, written once with Google Highway and compiled
// for several SIMD targets (x86: AVX-512, AVX2, SSE4 and a portable fallback; Arm: NEON, SVE).
// Each call runs the widest target this CPU has, chosen at run time (HWY_DYNAMIC_DISPATCH), so one
// build is fast everywhere it runs, with no -march=native (core/cpu/vector_math.cpp).
//
// Every function works on contiguous runs of n floats (n >= 0); the callers (elementwise.cpp,
// normalize.cpp, optimizer.cpp) use them for the contiguous float32 case and keep their plain
// loops for strided operands and float64. Sums are float32, in one running sum per vector lane.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/adam_step.h"
#include "core/backend.h"

namespace axiom::core::cpu::vec {

// The unary ops `map` applies: exp, log, tanh, sigmoid, gelu, gelu_tanh, gelu_derivative and
// gelu_tanh_derivative (any other is an Error). Accuracy, against double precision: exp 2 ulp
// (exactly 0 below -87, +inf above 88, so a probability never is a subnormal number),
// log 4 ulp, tanh 4 ulp, erf (in gelu) 1.5e-7 absolute (Abramowitz & Stegun 7.1.26).
bool has_map(UnaryOp f);

// y[i] = f(x[i]); y may be x.
void map(UnaryOp f, const float* x, float* y, int64_t n);

// The backward pass of an activation that feeds a product (autograd's activation_linear), in one
// pass: a[i] = f(h[i]) and g[i] *= f'(h[i]), for f = gelu or gelu_tanh (Error otherwise). The same
// bits as map(f), map(f's derivative) and a multiply.
void activation_and_slope(UnaryOp f, const float* h, float* a, float* g, int64_t n);

// out = a op b for the four arithmetic ops, add, sub, mul and div (has_arithmetic; any other op is
// an Error). A step of 1 walks an operand, a step of 0 repeats its first element (a broadcast
// scalar); not both 0.
bool has_arithmetic(BinaryOp op);
void arithmetic(BinaryOp op, const float* a, int64_t a_step, const float* b, int64_t b_step, float* out, int64_t n);

// totals[j] += row[j] for j < n, the sums in double: one row of a column sum (a bias gradient).
void add_row_to_totals(const float* row, double* totals, int64_t n);

// max of x[0..n): NaN when any element is NaN; -inf for n = 0.
float max(const float* x, int64_t n);
// sum of x[0..n).
float sum(const float* x, int64_t n);

// One query against `seen` cached keys and values, one line and head of core::attention_step:
//   p = softmax(scale * q keys_t), out = p values
// q [dh], keys_t [dh, seen] (rows key_stride apart), values [seen, dh] (rows value_stride apart),
// p: room for `seen` floats (left holding the softmax weights), out [dh]. hidden: null, or `seen`
// flags, 1 for a key the query does not see (its weight is 0; at least one key must be seen).
void attention_step_line(const float* q, const float* keys_t, int64_t key_stride, const float* values,
                         int64_t value_stride, int64_t dh, int64_t seen, float scale, const uint8_t* hidden, float* p,
                         float* out);

// out[i] for i < n: what core::uniform draws in float32 from counter first + i of the seed's
// stream (core/random.h), bit for bit: Philox-4x32-10 on several counters at once.
void uniform(uint64_t seed, uint64_t first, double low, double high, float* out, int64_t n);
// y = exp(x - shift), and returns the sum of y; y may be null (only the sum). shift is the max of
// x, finite (the caller answers NaN for a row whose max is NaN or infinite).
float exp_shifted(const float* x, float shift, float* y, int64_t n);
// y = softmax(x), or log_softmax(x) when log: the row's max subtracted first. y may be x. A row
// holding a NaN or +inf, or only -inf, gives NaN everywhere (as the scalar loops do). A row of one
// to four vectors' length (attention's rows of 28 under AVX2 or AVX-512) is read as whole vectors
// only, its last one overlapping the one before: one reduction a pass.
void softmax(const float* x, float* y, int64_t n, bool log);
// dp = p * (dp - sum(dp * p)) * scale: softmax's backward (p the softmax), in place of dp; short
// rows as softmax's.
void softmax_backward(const float* p, float* dp, float scale, int64_t n);
// sum of (x - mean)^2.
float squared_deviations(const float* x, float mean, int64_t n);
// y = (x - mean) * rstd * w + b, w and b each optional (null).
void layer_norm_apply(const float* x, float mean, float rstd, const float* w, const float* b, float* y, int64_t n);
// The two sums of layer norm's backward: sum g w and sum g w xhat, xhat = (x - mean) rstd (w null: 1).
void layer_norm_backward_sums(const float* x, const float* g, const float* w, float mean, float rstd, int64_t n,
                              float* sum_gw, float* sum_gw_xhat);
// dx = rstd (g w - mean_gw - xhat mean_gw_xhat).
void layer_norm_backward_apply(const float* x, const float* g, const float* w, float mean, float rstd, float mean_gw,
                               float mean_gw_xhat, float* dx, int64_t n);
// dx = (exp(x - lse) - spread) * g: cross-entropy's gradient before the target's own correction.
void softmax_minus(const float* x, float lse, float spread, float g, float* dx, int64_t n);
// One Adam step over n elements (core/adam_step.h's formula).
void adam(float* p, const float* g, float* m, float* v, const AdamScalars<float>& k, int64_t n);
// y[i] = round_to_bfloat16(x[i]) (core/cpu/bfloat16.h), the same bits: bfloat16 operands of a product.
void round_to_bfloat16(const float* x, uint16_t* y, int64_t n);

// The SIMD targets: the name of the one in use ("AVX3" is AVX-512, "EMU128" the portable fallback),
// and the names of every target this build has that this CPU can run, widest first.
std::string target();
std::vector<std::string> targets();
// Use the target of this name (case ignored) from now on, in every thread: for tests, which run
// each kernel under every target, and for benchmarks. Error when this CPU or build has no such target.
void use_target(const std::string& name);
// Back to the widest target of this CPU.
void use_best_target();
// Reads AXIOM_SIMD_TARGET (a name of targets(), or unset for the widest) and uses that target.
void use_target_from_environment();

}  // namespace axiom::core::cpu::vec
