// How float32 matrix products multiply, for the whole process: a setting users choose (the
// `--precision` flag of the axiom command), declared apart from the kernels' launch layer (launch.h).
#pragma once

#include <string>

namespace axiom::core {

// How float32 matrix products (matmul, linear, and the layers' products built on them) multiply,
// for the whole process; float64 products are always float64.
// - float32: in float32 (the default).
// - bfloat16: each operand rounded to bfloat16 (8 significant bits), the products summed in
//   float32: about twice as fast on a CPU with AVX-512 BF16, through oneDNN. Applies to products
//   of more than 64^3 multiply-adds (a layer's product over a batch), not to the small per-line
//   products inside attention; CPU tensors only (a CUDA product refuses it).
// - tf32: on a CUDA device, each operand rounded to TF32 (11 significant bits) and multiplied on
//   the GPU's tensor cores (NVIDIA Ampere and later), the sums in float32; never the default. CPU
//   products stay float32.
enum class MatmulPrecision { float32, bfloat16, tf32 };
// Throws for bfloat16 where it cannot run (see matmul_precision_unavailable_reason).
void set_matmul_precision(MatmulPrecision precision);
MatmulPrecision matmul_precision();
// Empty when `precision` can run on this build and CPU; else why not.
std::string matmul_precision_unavailable_reason(MatmulPrecision precision);
// "float32", "bfloat16" or "tf32", and back (an Error names the accepted words).
std::string to_string(MatmulPrecision precision);
MatmulPrecision parse_matmul_precision(const std::string& word);

}  // namespace axiom::core
