// Dtype: the element types a tensor can hold, and `dispatch`, which turns a runtime dtype
// into a compile-time C++ type so that one templated kernel serves every dtype.
#pragma once

#include <cstdint>
#include <ostream>
#include <string_view>

#include "error.h"

namespace axiom {

enum class Dtype : uint8_t {
  float32,  // training
  float64,  // gradient checks and references
  int64,    // indices and labels
  uint8,    // pixels as they come from files; also the result of comparisons (0 or 1)
  // 16-bit floats (float32's sign, exponent and top 7 mantissa bits) that hold the operands of
  // matrix products under MatmulPrecision::bfloat16 (core/matmul_precision.h): CPU tensors made by
  // .to(bfloat16) from float32 and back, copied, and multiplied (matmul, linear: float32 results,
  // or bfloat16 from linear); and an attention layer's qkv, which attention reads (widened).
  // No other op takes them; `dispatch` refuses them.
  bfloat16,
};

constexpr size_t dtype_size(Dtype dtype) {
  switch (dtype) {
    case Dtype::float32: return 4;
    case Dtype::float64: return 8;
    case Dtype::int64: return 8;
    case Dtype::uint8: return 1;
    case Dtype::bfloat16: return 2;
  }
  return 0;
}

constexpr std::string_view dtype_name(Dtype dtype) {
  switch (dtype) {
    case Dtype::float32: return "float32";
    case Dtype::float64: return "float64";
    case Dtype::int64: return "int64";
    case Dtype::uint8: return "uint8";
    case Dtype::bfloat16: return "bfloat16";
  }
  return "?";
}

// Why an op refuses a bfloat16 tensor.
inline constexpr std::string_view bfloat16_refusal =
    "bfloat16 tensors only hold matrix products' operands (.to, copies, matmul, linear); convert with "
    ".to(float32) first";

// float32 and float64: the dtypes arithmetic takes (bfloat16 only holds products' operands).
constexpr bool is_floating(Dtype dtype) { return dtype == Dtype::float32 || dtype == Dtype::float64; }

inline std::ostream& operator<<(std::ostream& out, Dtype dtype) { return out << dtype_name(dtype); }

// The Dtype of a C++ type: dtype_of<float> == Dtype::float32.
template <typename T>
inline constexpr Dtype dtype_of = Dtype::float32;
template <>
inline constexpr Dtype dtype_of<double> = Dtype::float64;
template <>
inline constexpr Dtype dtype_of<int64_t> = Dtype::int64;
template <>
inline constexpr Dtype dtype_of<uint8_t> = Dtype::uint8;
template <>
inline constexpr Dtype dtype_of<uint16_t> = Dtype::bfloat16;  // a bfloat16 is read as its 16 bits

// Calls fn.template operator()<T>() with the C++ type T of `dtype`:
//   dispatch(x.dtype(), [&]<typename T>() { fill<T>(x); });
// bfloat16 has no arithmetic here: the op functions refuse it by name first (checks::computable),
// and this throws for any that did not.
template <typename Fn>
decltype(auto) dispatch(Dtype dtype, Fn&& fn) {
  switch (dtype) {
    case Dtype::float32: return fn.template operator()<float>();
    case Dtype::float64: return fn.template operator()<double>();
    case Dtype::int64: return fn.template operator()<int64_t>();
    case Dtype::uint8: return fn.template operator()<uint8_t>();
    case Dtype::bfloat16: throw Error("dispatch", bfloat16_refusal);
  }
  throw Error("dispatch", "unknown dtype ", static_cast<int>(dtype));
}

// The same, for the floating dtypes only; `op` names the caller in the error for other dtypes.
template <typename Fn>
decltype(auto) dispatch_floating(std::string_view op, Dtype dtype, Fn&& fn) {
  switch (dtype) {
    case Dtype::float32: return fn.template operator()<float>();
    case Dtype::float64: return fn.template operator()<double>();
    default: throw Error(op, "dtype ", dtype, " is not supported (float32 or float64 only)");
  }
}

}  // namespace axiom
