// Elementwise kernels: fill, copy (with dtype conversion), unary maps, binary maps on broadcast
// operands, and where, on tensors of any strides.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "core/cpu/bfloat16.h"
#include "core/cpu/column_sums.h"
#include "core/cpu/cpu_backend.h"
#include "core/cpu/fast_math.h"
#include "core/cpu/loops.h"
#include "core/cpu/maps.h"
#include "core/cpu/vector_math.h"
#include "core/error.h"
#include "core/formulas.h"
#include "core/tensor.h"

namespace axiom::core::cpu {

namespace {

template <typename T>
bool is_nan(T value) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(value);
  return false;
}

// The transcendental functions of core/formulas.h's Scalar, on the host.
struct HostFunctions {
  template <typename T>
  static T exp_of(T x) {
    return cpu::exp_of(x);
  }
  template <typename T>
  static T erf_of(T x) {
    return cpu::erf_of(x);
  }
  template <typename T>
  static T tanh_of(T x) {
    return std::tanh(x);
  }
};
template <typename T>
using HostMath = formulas::Scalar<T, HostFunctions>;

// out = f(x) for a function with a SIMD kernel: contiguous float32 runs go to vec::map (the
// widest SIMD target of this CPU), the rest (strided runs, float64) to the scalar f.
template <typename T, typename F>
void map_with_vector(UnaryOp vector_f, const Tensor& x, const Tensor& out, F f) {
  if constexpr (std::is_same_v<T, float>) {
    return map_unary<T, T>(x, out, f, [vector_f](const float* a, float* o, int64_t n) { vec::map(vector_f, a, o, n); });
  } else {
    return map_unary<T, T>(x, out, f);
  }
}

template <typename T>
void unary_typed(UnaryOp op, const Tensor& x, const Tensor& out, double scalar) {
  switch (op) {
    case UnaryOp::neg: return map_unary<T, T>(x, out, [](T v) -> T { return -v; });
    case UnaryOp::abs: return map_unary<T, T>(x, out, [](T v) -> T { return v < 0 ? -v : v; });
    case UnaryOp::relu: return map_unary<T, T>(x, out, [](T v) -> T { return v < 0 ? T(0) : v; });
    default: break;
  }
  if constexpr (std::is_floating_point_v<T>) {
    switch (op) {
      case UnaryOp::exp: return map_with_vector<T>(UnaryOp::exp, x, out, [](T v) { return exp_of(v); });
      case UnaryOp::log: return map_with_vector<T>(UnaryOp::log, x, out, [](T v) { return std::log(v); });
      case UnaryOp::sqrt: return map_unary<T, T>(x, out, [](T v) { return std::sqrt(v); });
      case UnaryOp::rsqrt: return map_unary<T, T>(x, out, [](T v) { return T(1) / std::sqrt(v); });
      case UnaryOp::tanh: return map_with_vector<T>(UnaryOp::tanh, x, out, [](T v) { return std::tanh(v); });
      // (the formulas of these five: core/activations.inc, one value at a time in HostMath<T>)
      case UnaryOp::sigmoid:
        return map_with_vector<T>(UnaryOp::sigmoid, x, out, [](T v) { return formulas::sigmoid(HostMath<T>{}, v); });
      case UnaryOp::gelu:
        return map_with_vector<T>(UnaryOp::gelu, x, out, [](T v) { return formulas::gelu(HostMath<T>{}, v); });
      case UnaryOp::gelu_tanh:
        return map_with_vector<T>(UnaryOp::gelu_tanh, x, out,
                                  [](T v) { return formulas::gelu_tanh(HostMath<T>{}, v); });
      case UnaryOp::gelu_derivative:
        return map_with_vector<T>(UnaryOp::gelu_derivative, x, out,
                                  [](T v) { return formulas::gelu_derivative(HostMath<T>{}, v); });
      case UnaryOp::gelu_tanh_derivative:
        return map_with_vector<T>(UnaryOp::gelu_tanh_derivative, x, out,
                                  [](T v) { return formulas::gelu_tanh_derivative(HostMath<T>{}, v); });
      case UnaryOp::pow_scalar: {
        const T p = static_cast<T>(scalar);
        if (p == T(2)) return map_unary<T, T>(x, out, [](T v) { return v * v; });
        return map_unary<T, T>(x, out, [p](T v) { return std::pow(v, p); });
      }
      default: break;
    }
  }
  throw Error(op_name(op), "no CPU kernel for dtype ", dtype_of<T>);
}

template <typename T>
T maximum_of(T x, T y) {
  if (is_nan(x)) return x;  // NaN wins, as in NumPy and PyTorch
  if (is_nan(y)) return y;
  return x > y ? x : y;
}

template <typename T>
T minimum_of(T x, T y) {
  if (is_nan(x)) return x;
  if (is_nan(y)) return y;
  return x < y ? x : y;
}

// out = f(a, b) for an arithmetic op: contiguous (or broadcast-scalar) float32 runs go to
// vec::arithmetic (SIMD), the rest to the scalar f.
template <typename T, typename F>
void arithmetic_with_vector(BinaryOp vector_op, const Tensor& a, const Tensor& b, const Tensor& out, F f) {
  if constexpr (std::is_same_v<T, float>) {
    return map_binary<T, T>(
        a, b, out, f, [vector_op](const float* x, int64_t x_step, const float* y, int64_t y_step, float* o, int64_t n) {
          vec::arithmetic(vector_op, x, x_step, y, y_step, o, n);
        });
  } else {
    return map_binary<T, T>(a, b, out, f);
  }
}

template <typename T>
void binary_typed(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  using Mask = uint8_t;
  switch (op) {
    case BinaryOp::add: return arithmetic_with_vector<T>(BinaryOp::add, a, b, out, [](T x, T y) -> T { return x + y; });
    case BinaryOp::sub: return arithmetic_with_vector<T>(BinaryOp::sub, a, b, out, [](T x, T y) -> T { return x - y; });
    case BinaryOp::mul: return arithmetic_with_vector<T>(BinaryOp::mul, a, b, out, [](T x, T y) -> T { return x * y; });
    case BinaryOp::maximum: return map_binary<T, T>(a, b, out, maximum_of<T>);
    case BinaryOp::minimum: return map_binary<T, T>(a, b, out, minimum_of<T>);
    case BinaryOp::eq: return map_binary<Mask, T>(a, b, out, [](T x, T y) -> Mask { return x == y; });
    case BinaryOp::ne: return map_binary<Mask, T>(a, b, out, [](T x, T y) -> Mask { return x != y; });
    case BinaryOp::lt: return map_binary<Mask, T>(a, b, out, [](T x, T y) -> Mask { return x < y; });
    case BinaryOp::le: return map_binary<Mask, T>(a, b, out, [](T x, T y) -> Mask { return x <= y; });
    case BinaryOp::gt: return map_binary<Mask, T>(a, b, out, [](T x, T y) -> Mask { return x > y; });
    case BinaryOp::ge: return map_binary<Mask, T>(a, b, out, [](T x, T y) -> Mask { return x >= y; });
    default: break;
  }
  if constexpr (std::is_floating_point_v<T>) {
    if (op == BinaryOp::div) return arithmetic_with_vector<T>(BinaryOp::div, a, b, out, [](T x, T y) { return x / y; });
    if (op == BinaryOp::pow) return map_binary<T, T>(a, b, out, [](T x, T y) { return std::pow(x, y); });
  }
  throw Error(op_name(op), "no CPU kernel for dtype ", dtype_of<T>);
}

// relu(v), the float32 loop's value (NaN stays NaN).
float relu_of(float v) { return v < 0 ? 0.0f : v; }

// h[at, at + n) as float32: a float32 h's own values, or a bfloat16 h's widened into `buffer` (exact).
const float* floats_at(const Tensor& h, int64_t at, int64_t n, float* buffer) {
  if (h.dtype() == Dtype::float32) return h.data<float>() + at;
  const uint16_t* h16 = h.data<uint16_t>() + at;
  for (int64_t i = 0; i < n; ++i) buffer[i] = bfloat16_to_float(h16[i]);
  return buffer;
}

// a[i] = activation(h[i]) and g[i] *= activation'(h[i]) for i in [0, n): gelu and gelu_tanh in
// SIMD (vec::activation_and_slope), relu as the float32 kernels make it.
void activation_and_slope(UnaryOp activation, const float* h, float* a, float* g, int64_t n) {
  if (activation != UnaryOp::relu) return vec::activation_and_slope(activation, h, a, g, n);
  for (int64_t i = 0; i < n; ++i) {
    a[i] = relu_of(h[i]);
    g[i] *= h[i] > 0 ? 1.0f : 0.0f;  // the slope as the default's comparison makes it
  }
}

// out16 = activation(x) rounded to bfloat16, made in chunks on the stack (core::activation_to_bfloat16;
// x contiguous, float32 or bfloat16): the float32 kernel's values, rounded.
void activation_rounded(UnaryOp activation, const Tensor& x, const Tensor& out) {
  uint16_t* a16 = out.data<uint16_t>();
  parallel_for(x.numel(), kGrain, [&](int64_t begin, int64_t end) {
    alignas(64) float widened[kRoundingChunk];
    rounded_in_chunks(end - begin, a16 + begin, [&](int64_t at, int64_t n, float* a) {
      const float* h_at = floats_at(x, begin + at, n, widened);
      if (activation != UnaryOp::relu) return vec::map(activation, h_at, a, n);
      for (int64_t i = 0; i < n; ++i) a[i] = relu_of(h_at[i]);
    });
  });
}

// activation_backward with activation(h) rounded to bfloat16 (h and grad contiguous float32): grad
// *= activation'(h), and activated16 = activation(h), in one pass.
void activation_backward_rounded(UnaryOp activation, const Tensor& h, const Tensor& grad, const Tensor& activated16) {
  const float* x = h.data<float>();
  float* g = grad.data<float>();
  uint16_t* a16 = activated16.data<uint16_t>();
  parallel_for(h.numel(), kGrain, [&](int64_t begin, int64_t end) {
    rounded_in_chunks(end - begin, a16 + begin, [&](int64_t at, int64_t n, float* a) {
      activation_and_slope(activation, x + begin + at, a, g + begin + at, n);
    });
  });
}

}  // namespace

void CpuBackend::unary(UnaryOp op, const Tensor& x, const Tensor& out, double scalar) {
  if (out.dtype() == Dtype::bfloat16) return activation_rounded(op, x, out);
  dispatch(x.dtype(), [&]<typename T>() { unary_typed<T>(op, x, out, scalar); });
}

// float32 gelu and gelu_tanh in one SIMD pass (vec::activation_and_slope); the rest as the default's three kernels.
void CpuBackend::activation_backward(UnaryOp activation, const Tensor& h, const Tensor& grad, const Tensor& activated) {
  if (activated.dtype() == Dtype::bfloat16) return activation_backward_rounded(activation, h, grad, activated);
  if (h.dtype() != Dtype::float32 || activation == UnaryOp::relu) {
    return Backend::activation_backward(activation, h, grad, activated);
  }
  const float* x = h.data<float>();
  float* a = activated.data<float>();
  float* g = grad.data<float>();
  parallel_for(h.numel(), kGrain, [&](int64_t begin, int64_t end) {
    vec::activation_and_slope(activation, x + begin, a + begin, g + begin, end - begin);
  });
}

// Row by row in the blocks of the column sums (column_sums.h: those of core::sum and
// to_bfloat16_with_sums, so the same bits), each block's grad * activation'(h) made in the block's
// scratch, rounded, then added to the sums; activation(h) rounded on the way. h and grad are read
// once, and nothing as large as them is written in float32.
void CpuBackend::activation_backward_to_bfloat16(UnaryOp activation, const Tensor& h, const Tensor& grad,
                                                 const Tensor& rounded, const Tensor& sums, const Tensor& activated) {
  const int64_t cols = h.size(-1), rows = cols == 0 ? 0 : h.numel() / cols;
  const float* g = grad.data<float>();
  uint16_t* g16 = rounded.data<uint16_t>();
  uint16_t* a16 = activated.data<uint16_t>();
  const std::vector<double> totals =
      column_totals<float>(rows, cols, [&](int64_t i, int64_t begin, int64_t width, float* slope_times_grad) {
        const int64_t first = i * cols + begin;
        std::copy_n(g + first, width, slope_times_grad);
        for (int64_t at = 0; at < width; at += kRoundingChunk) {
          const int64_t n = std::min(kRoundingChunk, width - at);
          alignas(64) float widened[kRoundingChunk], a[kRoundingChunk];
          activation_and_slope(activation, floats_at(h, first + at, n, widened), a, slope_times_grad + at, n);
          vec::round_to_bfloat16(a, a16 + first + at, n);
        }
        vec::round_to_bfloat16(slope_times_grad, g16 + first, width);
        return slope_times_grad;
      });
  float* out = sums.data<float>();
  for (int64_t j = 0; j < cols; ++j) out[j] = static_cast<float>(totals[j]);
}

void CpuBackend::binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  dispatch(a.dtype(), [&]<typename T>() { binary_typed<T>(op, a, b, out); });
}

void CpuBackend::where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) {
  dispatch(a.dtype(), [&]<typename T>() {
    StridedLoop<4> loop(out.shape(), {&out.strides(), &cond.strides(), &a.strides(), &b.strides()});
    T* out_base = out.data<T>();
    const uint8_t* c_base = cond.data<uint8_t>();
    const T* a_base = a.data<T>();
    const T* b_base = b.data<T>();
    parallel_runs(loop, kGrain, [&](const auto& offset, int64_t n, const auto& step) {
      for (int64_t i = 0; i < n; ++i) {
        out_base[offset[0] + i * step[0]] =
            c_base[offset[1] + i * step[1]] ? a_base[offset[2] + i * step[2]] : b_base[offset[3] + i * step[3]];
      }
    });
  });
}

// --- fill and copy ---------------------------------------------------------------------------------

void CpuBackend::fill(const Tensor& out, double value) {
  dispatch(out.dtype(), [&]<typename T>() {
    const T v = formulas::convert<T>(value);
    StridedLoop<1> loop(out.shape(), {&out.strides()});
    T* base = out.data<T>();
    parallel_runs(loop, kGrain, [&](const auto& offset, int64_t n, const auto& step) {
      T* o = base + offset[0];
      for (int64_t i = 0; i < n; ++i) o[i * step[0]] = v;
    });
  });
}

// out[i] = uniform_float32(seed, first + i, low, high), in chunks on every thread, several at a time.
void CpuBackend::uniform(const Tensor& out, uint64_t seed, uint64_t first, double low, double high) {
  float* data = out.data<float>();
  parallel_for(out.numel(), 16384, [&](int64_t begin, int64_t end) {
    vec::uniform(seed, first + static_cast<uint64_t>(begin), low, high, data + begin, end - begin);
  });
}

namespace {
// A copy to or from bfloat16 (core/checks.h: convertible): float32 rounded to the nearest bfloat16
// (a whole contiguous run at once), bfloat16 widened to float32 (exact), or the bits copied.
void copy_bfloat16(const Tensor& src, const Tensor& dst) {
  if (dst.dtype() == Dtype::bfloat16 && src.dtype() == Dtype::float32) {
    return map_unary<uint16_t, float>(
        src, dst, [](float v) { return round_to_bfloat16(v); },
        [](const float* x, uint16_t* y, int64_t n) { vec::round_to_bfloat16(x, y, n); });
  }
  if (dst.dtype() == Dtype::float32) {
    return map_unary<float, uint16_t>(src, dst, [](uint16_t v) { return bfloat16_to_float(v); });
  }
  map_unary<uint16_t, uint16_t>(src, dst, [](uint16_t v) { return v; });
}
}  // namespace

void CpuBackend::copy(const Tensor& src, const Tensor& dst) {
  if (src.dtype() == Dtype::bfloat16 || dst.dtype() == Dtype::bfloat16) return copy_bfloat16(src, dst);
  dispatch(dst.dtype(), [&]<typename To>() {
    // a lambda, not the function's address: the compiler inlines it and vectorises the loop
    dispatch(src.dtype(), [&]<typename From>() {
      map_unary<To, From>(src, dst, [](From v) { return formulas::convert<To, From>(v); });
    });
  });
}

}  // namespace axiom::core::cpu
