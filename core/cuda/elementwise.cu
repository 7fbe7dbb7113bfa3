// Elementwise kernels on the GPU: fill, copy (with dtype conversion), unary and binary maps,
// where. Each is one launch of for_each_element (kernels.cuh) with a small body struct; the op
// is a switch inside the body (the same for every thread, so it costs next to nothing). When
// every operand is contiguous and aligned, the launch is for_each_four instead: four elements a
// thread through the body's four(i), one 128-bit access per operand for float32.
#include <cmath>
#include <limits>
#include <type_traits>

#include "core/cuda/cuda_backend.h"
#include "core/cuda/kernels.cuh"
#include "core/factory.h"
#include "core/formulas.h"
#include "core/tensor.h"

namespace AXIOM_CUDA_NAMESPACE {

namespace {

template <typename T>
struct FillBody {
  T* out;
  T value;
  __device__ void operator()(const Offsets<1>& at) const { out[at.of[0]] = value; }
  __device__ void four(int64_t i) const { store_four(out + i, Four<T>{{value, value, value, value}}); }
};

template <typename To, typename From>
struct CopyBody {
  const From* src;
  To* dst;
  __device__ void operator()(const Offsets<2>& at) const { dst[at.of[0]] = formulas::convert<To>(src[at.of[1]]); }
  __device__ void four(int64_t i) const {
    const Four<From> s = load_four(src + i);
    using formulas::convert;
    store_four(dst + i, Four<To>{{convert<To>(s.v[0]), convert<To>(s.v[1]), convert<To>(s.v[2]), convert<To>(s.v[3])}});
  }
};

template <typename T>
__device__ bool is_negative(T v) {
  if constexpr (std::is_unsigned_v<T>) {
    return false;
  } else {
    return v < T(0);
  }
}

// The transcendental functions of core/formulas.h's Scalar, CUDA's own.
struct DeviceFunctions {
  template <typename T>
  __host__ __device__ static T exp_of(T x) {
    return exp(x);
  }
  template <typename T>
  __host__ __device__ static T erf_of(T x) {
    return erf(x);
  }
  template <typename T>
  __host__ __device__ static T tanh_of(T x) {
    return tanh(x);
  }
};
template <typename T>
using DeviceMath = formulas::Scalar<T, DeviceFunctions>;

// The same formulas as core/cpu/elementwise.cpp (those of more than one call: core/activations.inc),
// in the dtype of the tensor.
template <typename T>
__device__ T unary_value(UnaryOp op, T v, T p) {
  switch (op) {
    case UnaryOp::neg: return -v;
    case UnaryOp::abs: return is_negative(v) ? -v : v;
    case UnaryOp::relu: return is_negative(v) ? T(0) : v;
    default: break;
  }
  if constexpr (std::is_floating_point_v<T>) {
    switch (op) {
      case UnaryOp::exp: return exp(v);
      case UnaryOp::log: return log(v);
      case UnaryOp::sqrt: return sqrt(v);
      case UnaryOp::rsqrt: return T(1) / sqrt(v);
      case UnaryOp::tanh: return tanh(v);
      case UnaryOp::sigmoid: return formulas::sigmoid(DeviceMath<T>{}, v);
      case UnaryOp::gelu: return formulas::gelu(DeviceMath<T>{}, v);
      case UnaryOp::gelu_tanh: return formulas::gelu_tanh(DeviceMath<T>{}, v);
      case UnaryOp::gelu_derivative: return formulas::gelu_derivative(DeviceMath<T>{}, v);
      case UnaryOp::gelu_tanh_derivative: return formulas::gelu_tanh_derivative(DeviceMath<T>{}, v);
      case UnaryOp::pow_scalar: return p == T(2) ? v * v : pow(v, p);
      default: break;
    }
  }
  return v;  // not reached: unary() refuses the other (op, dtype) pairs before launching
}

template <typename T>
struct UnaryBody {
  UnaryOp op;
  const T* x;
  T* out;
  T scalar;
  __device__ void operator()(const Offsets<2>& at) const { out[at.of[0]] = unary_value(op, x[at.of[1]], scalar); }
  __device__ void four(int64_t i) const {  // (written out: constant indices keep the four in registers)
    const Four<T> v = load_four(x + i);
    store_four(out + i, Four<T>{{unary_value(op, v.v[0], scalar), unary_value(op, v.v[1], scalar),
                                 unary_value(op, v.v[2], scalar), unary_value(op, v.v[3], scalar)}});
  }
};

template <typename T>
__device__ T arithmetic_value(BinaryOp op, T x, T y) {
  const bool x_nan = x != x, y_nan = y != y;  // NaN wins maximum and minimum, as on the CPU
  switch (op) {
    case BinaryOp::add: return x + y;
    case BinaryOp::sub: return x - y;
    case BinaryOp::mul: return x * y;
    case BinaryOp::maximum: return x_nan ? x : y_nan ? y : (x > y ? x : y);
    case BinaryOp::minimum: return x_nan ? x : y_nan ? y : (x < y ? x : y);
    default: break;
  }
  if constexpr (std::is_floating_point_v<T>) {
    if (op == BinaryOp::div) return x / y;
    if (op == BinaryOp::pow) return pow(x, y);
  }
  return x;  // not reached: binary() refuses the other (op, dtype) pairs
}

template <typename T>
__device__ uint8_t comparison_value(BinaryOp op, T x, T y) {
  switch (op) {
    case BinaryOp::eq: return x == y;
    case BinaryOp::ne: return x != y;
    case BinaryOp::lt: return x < y;
    case BinaryOp::le: return x <= y;
    case BinaryOp::gt: return x > y;
    default: return x >= y;  // ge
  }
}

template <typename T>
struct ArithmeticBody {
  BinaryOp op;
  const T *a, *b;
  T* out;
  __device__ void operator()(const Offsets<3>& at) const {
    out[at.of[0]] = arithmetic_value(op, a[at.of[1]], b[at.of[2]]);
  }
  __device__ void four(int64_t i) const {
    const Four<T> x = load_four(a + i), y = load_four(b + i);
    store_four(out + i, Four<T>{{arithmetic_value(op, x.v[0], y.v[0]), arithmetic_value(op, x.v[1], y.v[1]),
                                 arithmetic_value(op, x.v[2], y.v[2]), arithmetic_value(op, x.v[3], y.v[3])}});
  }
};

template <typename T>
struct ComparisonBody {
  BinaryOp op;
  const T *a, *b;
  uint8_t* out;
  __device__ void operator()(const Offsets<3>& at) const {
    out[at.of[0]] = comparison_value(op, a[at.of[1]], b[at.of[2]]);
  }
  __device__ void four(int64_t i) const {
    const Four<T> x = load_four(a + i), y = load_four(b + i);
    store_four(out + i, Four<uint8_t>{{comparison_value(op, x.v[0], y.v[0]), comparison_value(op, x.v[1], y.v[1]),
                                       comparison_value(op, x.v[2], y.v[2]), comparison_value(op, x.v[3], y.v[3])}});
  }
};

template <typename T>
struct WhereBody {
  const uint8_t* cond;
  const T *a, *b;
  T* out;
  __device__ void operator()(const Offsets<4>& at) const { out[at.of[0]] = cond[at.of[1]] ? a[at.of[2]] : b[at.of[3]]; }
  __device__ void four(int64_t i) const {
    const Four<uint8_t> c = load_four(cond + i);
    const Four<T> x = load_four(a + i), y = load_four(b + i);
    store_four(out + i, Four<T>{{c.v[0] ? x.v[0] : y.v[0], c.v[1] ? x.v[1] : y.v[1], c.v[2] ? x.v[2] : y.v[2],
                                 c.v[3] ? x.v[3] : y.v[3]}});
  }
};

bool is_comparison(BinaryOp op) { return op >= BinaryOp::eq; }

bool integer_unary(UnaryOp op) { return op == UnaryOp::neg || op == UnaryOp::abs || op == UnaryOp::relu; }

bool integer_binary(BinaryOp op) { return op != BinaryOp::div && op != BinaryOp::pow; }

}  // namespace

void CudaBackend::fill(const Tensor& out, double value) {
  dispatch(out.dtype(), [&]<typename T>() {
    const T v = *full({}, value, out.dtype(), Device::cpu()).data<T>();  // converted by the CPU's rules
    const auto operands = strided_operands<1>("fill", out.shape(), {&out.strides()});
    launch_elementwise("fill", out.numel(), operands, FillBody<T>{device_data<T>(out), v}, aligned_in_fours(out));
  });
}

void CudaBackend::copy(const Tensor& src, const Tensor& dst) {
  const auto operands = strided_operands<2>("copy", dst.shape(), {&dst.strides(), &src.strides()});
  const bool in_fours = aligned_in_fours(dst, src);
  dispatch(dst.dtype(), [&]<typename To>() {
    dispatch(src.dtype(), [&]<typename From>() {
      launch_elementwise("copy", dst.numel(), operands,
                         CopyBody<To, From>{device_data<From>(src), device_data<To>(dst)}, in_fours);
    });
  });
}

void CudaBackend::unary(UnaryOp op, const Tensor& x, const Tensor& out, double scalar) {
  const auto operands = strided_operands<2>(op_name(op), out.shape(), {&out.strides(), &x.strides()});
  dispatch(x.dtype(), [&]<typename T>() {
    if (!std::is_floating_point_v<T> && !integer_unary(op))
      throw Error(op_name(op), "no CUDA kernel for dtype ", x.dtype());
    const UnaryBody<T> body{op, device_data<T>(x), device_data<T>(out), static_cast<T>(scalar)};
    launch_elementwise(op_name(op), out.numel(), operands, body, aligned_in_fours(out, x));
  });
}

void CudaBackend::binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  const auto operands = strided_operands<3>(op_name(op), out.shape(), {&out.strides(), &a.strides(), &b.strides()});
  const bool in_fours = aligned_in_fours(out, a, b);
  dispatch(a.dtype(), [&]<typename T>() {
    const T *pa = device_data<T>(a), *pb = device_data<T>(b);
    if (is_comparison(op)) {
      return launch_elementwise(op_name(op), out.numel(), operands,
                                ComparisonBody<T>{op, pa, pb, device_data<uint8_t>(out)}, in_fours);
    }
    if (!std::is_floating_point_v<T> && !integer_binary(op))
      throw Error(op_name(op), "no CUDA kernel for dtype ", a.dtype());
    launch_elementwise(op_name(op), out.numel(), operands, ArithmeticBody<T>{op, pa, pb, device_data<T>(out)},
                       in_fours);
  });
}

void CudaBackend::where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) {
  const auto operands =
      strided_operands<4>("where", out.shape(), {&out.strides(), &cond.strides(), &a.strides(), &b.strides()});
  dispatch(a.dtype(), [&]<typename T>() {
    const WhereBody<T> body{device_data<uint8_t>(cond), device_data<T>(a), device_data<T>(b), device_data<T>(out)};
    launch_elementwise("where", out.numel(), operands, body, aligned_in_fours(out, cond, a, b));
  });
}

}  // namespace AXIOM_CUDA_NAMESPACE
