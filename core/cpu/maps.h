// map_unary and map_binary: an elementwise function applied over strided (and broadcast)
// operands, in parallel. Every elementwise kernel, and the dtype-converting copy, is one call.
// rounded_in_chunks: a float32 kernel's output rounded to bfloat16 as it is made.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "core/cpu/loops.h"
#include "core/cpu/vector_math.h"
#include "core/tensor.h"

namespace axiom::core::cpu {

// out = f(x), elementwise. With `run`, contiguous runs go to run(x, out, n) instead (a SIMD
// kernel of vector_math.h that computes f); strided ones keep f.
template <typename Out, typename In, typename F, typename Run = std::nullptr_t>
void map_unary(const Tensor& x, const Tensor& out, F f, Run run = nullptr) {
  StridedLoop<2> loop(out.shape(), {&out.strides(), &x.strides()});
  Out* out_base = out.data<Out>();
  const In* x_base = x.data<In>();
  parallel_runs(loop, kGrain, [&](const auto& offset, int64_t n, const auto& step) {
    Out* o = out_base + offset[0];
    const In* a = x_base + offset[1];
    if (step[0] == 1 && step[1] == 1) {
      if constexpr (std::is_null_pointer_v<Run>) {
        for (int64_t i = 0; i < n; ++i) o[i] = f(a[i]);
      } else {
        run(a, o, n);
      }
    } else {
      for (int64_t i = 0; i < n; ++i) o[i * step[0]] = f(a[i * step[1]]);
    }
  });
}

// out = f(a, b), elementwise; a broadcast operand shows up as a step of 0. With `run`, runs where
// out is contiguous and each operand is contiguous or one repeated element go to
// run(x, x_step, y, y_step, out, n) instead (a SIMD kernel of vector_math.h that computes f).
template <typename Out, typename In, typename F, typename Run = std::nullptr_t>
void map_binary(const Tensor& a, const Tensor& b, const Tensor& out, F f, Run run = nullptr) {
  StridedLoop<3> loop(out.shape(), {&out.strides(), &a.strides(), &b.strides()});
  Out* out_base = out.data<Out>();
  const In* a_base = a.data<In>();
  const In* b_base = b.data<In>();
  parallel_runs(loop, kGrain, [&](const auto& offset, int64_t n, const auto& step) {
    Out* o = out_base + offset[0];
    const In* x = a_base + offset[1];
    const In* y = b_base + offset[2];
    if constexpr (!std::is_null_pointer_v<Run>) {
      const bool walks_or_repeats = step[0] == 1 && step[1] <= 1 && step[2] <= 1 && step[1] + step[2] >= 1;
      if (walks_or_repeats) return run(x, step[1], y, step[2], o, n);
    }
    if (step[0] == 1 && step[1] == 1 && step[2] == 1) {
      for (int64_t i = 0; i < n; ++i) o[i] = f(x[i], y[i]);
    } else if (step[0] == 1 && step[1] == 1 && step[2] == 0) {
      const In y0 = *y;
      for (int64_t i = 0; i < n; ++i) o[i] = f(x[i], y0);
    } else if (step[0] == 1 && step[1] == 0 && step[2] == 1) {
      const In x0 = *x;
      for (int64_t i = 0; i < n; ++i) o[i] = f(x0, y[i]);
    } else {
      for (int64_t i = 0; i < n; ++i) o[i * step[0]] = f(x[i * step[1]], y[i * step[2]]);
    }
  });
}

constexpr int64_t kRoundingChunk = 2048;  // 8 KiB: stays in the L1 cache between the kernel and the rounding

// out16[0, n) = the float32 values produce(at, count, buffer) writes for [at, at + count), rounded to
// bfloat16 (vec::round_to_bfloat16), made a few thousand at a time in a buffer on the stack: the
// bfloat16 operand of a product made by a float32 kernel, with no float32 copy in memory. On the
// calling thread.
template <typename Produce>
void rounded_in_chunks(int64_t n, uint16_t* out16, Produce produce) {
  alignas(64) float buffer[kRoundingChunk];
  for (int64_t at = 0; at < n; at += kRoundingChunk) {
    const int64_t count = std::min(kRoundingChunk, n - at);
    produce(at, count, buffer);
    vec::round_to_bfloat16(buffer, out16 + at, count);
  }
}

}  // namespace axiom::core::cpu
