// bfloat16 numbers as 16 bits: float32's sign, exponent and top 7 mantissa bits (8 significant
// bits, about 3 decimal digits, float32's range). The products of MatmulPrecision::bfloat16 read
// their operands so (core/cpu/onednn_gemm.h); vec::round_to_bfloat16 rounds whole lines at once.
#pragma once

#include <bit>
#include <cstdint>

namespace axiom::core::cpu {

// The bfloat16 nearest to x (ties to even), as its 16 bits: float32's sign, exponent and top 7
// mantissa bits. Infinities stay infinite, NaN stays NaN; a float32 beyond bfloat16's largest
// finite value rounds to infinity, as in IEEE rounding.
inline uint16_t round_to_bfloat16(float x) {
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);  // a quiet NaN
  const uint32_t lowest_kept_bit = (bits >> 16) & 1u;
  return static_cast<uint16_t>((bits + 0x7fffu + lowest_kept_bit) >> 16);
}

inline float bfloat16_to_float(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

}  // namespace axiom::core::cpu
