// Reductions (sum, mean, var, max with argmax, min) over any set of axes.
//
// General path: view x with the kept axes first and the reduced axes last; each output element
// then reduces one "block" (the reduced axes at a fixed position of the kept ones), walked with a
// StridedLoop. Outputs are independent, so they run in parallel, and each is summed in a fixed
// order: the result does not depend on the thread count.
// Fast path: sum/mean over the leading axes of a contiguous tensor (a bias gradient, say) adds
// whole rows into a vector of column sums instead of walking down each column.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <functional>
#include <type_traits>
#include <vector>

#include "core/axis_split.h"
#include "core/cpu/column_sums.h"
#include "core/cpu/cpu_backend.h"
#include "core/cpu/loops.h"
#include "core/cpu/vector_math.h"
#include "core/tensor.h"

namespace axiom::core::cpu {

namespace {

template <typename T>
bool is_nan(T value) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(value);
  return false;
}

// Calls fn(value) for every element of the block that starts at `base`, in row-major order.
template <typename T, typename Fn>
void for_each_in_block(const T* base, const StridedLoop<1>& block, Fn&& fn) {
  block.for_each_run(0, block.numel(), [&](const auto& offset, int64_t n, const auto& step) {
    const T* p = base + offset[0];
    if (step[0] == 1) {
      for (int64_t i = 0; i < n; ++i) fn(p[i]);
    } else {
      for (int64_t i = 0; i < n; ++i) fn(p[i * step[0]]);
    }
  });
}

template <typename T>
Accumulator<T> block_sum(const T* base, const StridedLoop<1>& block) {
  Accumulator<T> total = 0;
  for_each_in_block(base, block, [&](T v) { total += v; });
  return total;
}

// The first largest (better = greater) or smallest (less) value of a block, a NaN winning over
// numbers; *at (when asked for) gets its position in the block.
template <typename T, typename Better>
T first_extreme(const T* base, const StridedLoop<1>& block, Better better, int64_t* at) {
  T best = *base;
  int64_t best_at = 0, position = 0;
  for_each_in_block(base, block, [&](T v) {
    if (!is_nan(best) && (better(v, best) || is_nan(v))) best = v, best_at = position;
    ++position;
  });
  if (at) *at = best_at;
  return best;
}

// One output element: the reduction of one block. For max, *argmax gets the position in the block.
template <typename T>
T reduce_block(ReduceOp op, const T* base, const StridedLoop<1>& block, int64_t correction, int64_t* argmax) {
  const int64_t count = block.numel();
  switch (op) {
    case ReduceOp::sum: return static_cast<T>(block_sum(base, block));
    case ReduceOp::mean: return static_cast<T>(static_cast<double>(block_sum(base, block)) / count);
    case ReduceOp::var: {
      // Two passes (mean first, then squared deviations): no cancellation for large means.
      const double mean = static_cast<double>(block_sum(base, block)) / count;
      double squares = 0;
      for_each_in_block(base, block, [&](T v) { squares += (v - mean) * (v - mean); });
      // Fewer elements than the correction: no degrees of freedom left, as if dividing by 0 (the
      // variance must not turn negative).
      return static_cast<T>(squares / static_cast<double>(std::max<int64_t>(count - correction, 0)));
    }
    case ReduceOp::max: return first_extreme(base, block, std::greater<T>(), argmax);
    case ReduceOp::min: return first_extreme(base, block, std::less<T>(), argmax);
  }
  return T(0);
}

// sum/mean over the leading `rows` of a contiguous [rows, cols] tensor: out[j] = sum_i x[i, j]
// (column_sums.h). visit(i, begin, width), if given, is called as row i's columns [begin, begin +
// width) are added, on the thread that adds them.
template <typename T, typename Visit = std::nullptr_t>
void reduce_leading_rows(ReduceOp op, const T* x, int64_t rows, int64_t cols, T* out, Visit visit = nullptr) {
  const std::vector<Accumulator<T>> totals =
      column_totals<T>(rows, cols, [&](int64_t i, int64_t begin, int64_t width, T*) {
        if constexpr (!std::is_null_pointer_v<Visit>) visit(i, begin, width);
        return x + i * cols + begin;
      });
  for (int64_t j = 0; j < cols; ++j) {
    out[j] = static_cast<T>(op == ReduceOp::mean ? static_cast<double>(totals[j]) / rows : totals[j]);
  }
}

bool reduces_leading_axes(const Tensor& x, const std::vector<int>& axes) {
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] != static_cast<int>(i)) return false;
  }
  return x.is_contiguous() && axes.size() < static_cast<size_t>(x.dim());
}

template <typename T>
void reduce_typed(ReduceOp op, const Tensor& x, const std::vector<int>& axes, const Tensor& out, const Tensor& argmax,
                  int64_t correction) {
  if ((op == ReduceOp::sum || op == ReduceOp::mean) && reduces_leading_axes(x, axes)) {
    int64_t rows = 1;
    for (int axis : axes) rows *= x.size(axis);
    // The columns are the kept axes: out.numel(), not x.numel() / rows, which is 0 when rows is.
    return reduce_leading_rows<T>(op, x.data<T>(), rows, out.numel(), out.data<T>());
  }
  const ReducedAxes split = split_reduced_axes(x.shape(), x.strides(), axes);
  const StridedLoop<1> outputs(split.kept_shape, {&split.kept_strides});
  const StridedLoop<1> block(split.block_shape, {&split.block_strides});
  const T* x_base = x.data<T>();
  T* out_base = out.data<T>();
  int64_t* argmax_base = argmax.defined() ? argmax.data<int64_t>() : nullptr;
  const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(block.numel(), 1));
  parallel_for(outputs.numel(), grain, [&](int64_t begin, int64_t end) {
    int64_t o = begin;  // outputs are numbered in row-major order of the kept axes, as out is laid out
    outputs.for_each_run(begin, end, [&](const auto& offset, int64_t n, const auto& step) {
      for (int64_t i = 0; i < n; ++i, ++o) {
        out_base[o] = reduce_block(op, x_base + offset[0] + i * step[0], block, correction,
                                   argmax_base ? argmax_base + o : nullptr);
      }
    });
  });
}

// How many of x[0..n) are NaN or infinite: those whose exponent bits are all ones. A test on the
// bits, counted in integers, which the compiler vectorises (a count in double, adding
// std::isfinite's answers one at a time, took 30 ms over `medium`'s 9.6M weights every step).
template <typename T>
int64_t non_finite_in(const T* x, int64_t n) {
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  constexpr Bits kExponent = static_cast<Bits>(sizeof(T) == 4 ? 0x7f800000ull : 0x7ff0000000000000ull);
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i) {
    Bits bits;
    std::memcpy(&bits, x + i, sizeof bits);
    count += (bits & kExponent) == kExponent;
  }
  return count;
}

}  // namespace

// Each tensor counted in chunks on the threads; integer counts, so the order does not matter.
void CpuBackend::count_non_finite(const std::vector<Tensor>& tensors, const Tensor& out) {
  std::atomic<int64_t> count{0};
  for (const Tensor& t : tensors) {
    dispatch_floating("count_non_finite", t.dtype(), [&]<typename T>() {
      const T* data = t.data<T>();
      parallel_for(t.numel(), kGrain * 4,
                   [&](int64_t begin, int64_t end) { count += non_finite_in(data + begin, end - begin); });
    });
  }
  *out.data<double>() = static_cast<double>(count.load());
}

// The sums of core::sum over the leading axes (reduce_leading_rows, the same bits), with each row
// rounded to bfloat16 once it is added: g read once.
void CpuBackend::to_bfloat16_with_sums(const Tensor& g, const Tensor& rounded, const Tensor& sums) {
  const int64_t cols = g.size(-1), rows = cols == 0 ? 0 : g.numel() / cols;
  const float* x = g.data<float>();
  uint16_t* x16 = rounded.data<uint16_t>();
  auto round_row = [&](int64_t i, int64_t begin, int64_t width) {
    vec::round_to_bfloat16(x + i * cols + begin, x16 + i * cols + begin, width);
  };
  reduce_leading_rows<float>(ReduceOp::sum, x, rows, cols, sums.data<float>(), round_row);
}

void CpuBackend::reduce(ReduceOp op, const Tensor& x, const std::vector<int>& axes, const Tensor& out,
                        const Tensor& argmax, int64_t correction) {
  dispatch(x.dtype(), [&]<typename T>() { reduce_typed<T>(op, x, axes, out, argmax, correction); });
}

}  // namespace axiom::core::cpu
