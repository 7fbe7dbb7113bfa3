// Input checks shared by the op functions. Each throws an axiom::Error that names the op.
#pragma once

#include <initializer_list>
#include <string_view>

#include "core/index_bounds.h"
#include "core/tensor.h"

namespace axiom::core::checks {

void defined(std::string_view op, const Tensor& x, std::string_view what = "input");
// "[add] tensors are on different devices: cpu and cuda:0"
void same_device(std::string_view op, const Tensor& a, const Tensor& b);
// "[add] dtypes float32 and float64 differ; convert one with .to(dtype)"
void same_dtype(std::string_view op, const Tensor& a, const Tensor& b);
// "[add] bfloat16 tensors only hold matrix products' operands ...": the check of the ops that take
// every dtype but bfloat16 (core/dtype.h).
void computable(std::string_view op, const Tensor& x);
// The conversions a copy may make with bfloat16: to and from float32 (and bfloat16 to itself), on
// the CPU (or the shape-only meta device); "[to] bfloat16 converts to and from float32 only; ...".
void convertible(std::string_view op, Dtype from, Dtype to, Device device);
// The dtype a kernel may write its result of x in: x's own, or bfloat16 for a float32 x on the CPU
// (rounded as it is written: a product's operand); "[layer_norm] the output's dtype must be ...".
void output_dtype(std::string_view op, const Tensor& x, Dtype output);
// "[exp] dtype int64 is not supported (float32 or float64 only)"
void floating(std::string_view op, const Tensor& x);
// Every tensor defined and floating, on the first one's device and in its dtype: the inputs of an op
// that computes in one floating dtype (attention_step: q, keys_t, values).
void floating_peers(std::string_view op, std::initializer_list<const Tensor*> tensors);
// "[embedding] indices must be int64, got float32"
void dtype_is(std::string_view op, const Tensor& x, Dtype expected, std::string_view what);
// Every element of `index` (int64) within `bounds`, else "[gather] index 7 at [1, 2] is out of range
// for axis 1 of size 5" (IndexBounds). Checked by the index's backend: the CPU's at once; a GPU's
// on the GPU, the Error coming at the next read back to the host (Backend::check_indices).
void indices_in_range(const IndexBounds& bounds, const Tensor& index);

}  // namespace axiom::core::checks
