// Reductions (sum, mean, var, max with argmax, min) over any set of axes, on the GPU.
//
// One block per output element: the block's threads stride over the elements it reduces (its
// "block" of x: the reduced axes at one position of the kept axes), then block_reduce combines
// their partial results in a fixed order. Sums are taken in double (int64 for integers), as on
// the CPU.
#include <bit>
#include <type_traits>

#include "core/axis_split.h"
#include "core/cuda/cuda_backend.h"
#include "core/cuda/kernels.cuh"
#include "core/tensor.h"

namespace AXIOM_CUDA_NAMESPACE {

namespace {

template <typename T>
using Accumulator = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;

// Where the reduced elements are: output o reduces x[kept.offsets(o) + block.offsets(j)], j < count.
struct ReduceLayout {
  StridedOperands<1> kept, block;
  int64_t outputs, count;
};

// A candidate for max or min: a value and its position in the block (index < 0: no element yet).
template <typename T>
struct ValueAt {
  T value;
  int64_t index;
};

// The first maximum (largest = true) or minimum, a NaN winning over numbers (the first NaN), as
// on the CPU.
template <bool largest>
struct FirstExtreme {
  template <typename T>
  __device__ ValueAt<T> operator()(ValueAt<T> a, ValueAt<T> b) const {
    if (a.index < 0) return b;
    if (b.index < 0) return a;
    const bool a_nan = a.value != a.value, b_nan = b.value != b.value;
    if (a_nan != b_nan) return a_nan ? a : b;
    if (!a_nan && a.value != b.value) return (largest ? a.value > b.value : a.value < b.value) ? a : b;
    return a.index < b.index ? a : b;  // a tie (or two NaN): the earlier one
  }
};

// One block's first extreme of its elements into out[o] (and its position into argmax[o]).
template <typename T, typename Pick>
__device__ void write_extreme(const T* base, const ReduceLayout& layout, Pick pick, int64_t o, T* out, int64_t* argmax) {
  ValueAt<T> best{T(0), -1};
  for (int64_t j = threadIdx.x; j < layout.count; j += blockDim.x) best = pick(best, ValueAt<T>{base[layout.block.offsets(j).of[0]], j});
  best = block_reduce(best, pick);
  if (threadIdx.x == 0) {
    out[o] = best.value;
    if (argmax) argmax[o] = best.index < 0 ? 0 : best.index;
  }
}

template <typename T>
__device__ Accumulator<T> partial_sum(const T* x, const ReduceLayout& layout) {
  Accumulator<T> total = 0;
  for (int64_t j = threadIdx.x; j < layout.count; j += blockDim.x) total += x[layout.block.offsets(j).of[0]];
  return total;
}

template <typename T>
__global__ void reduce_kernel(ReduceOp op, const T* x, ReduceLayout layout, int64_t correction, T* out, int64_t* argmax) {
  for (int64_t o = blockIdx.x; o < layout.outputs; o += gridDim.x) {
    const T* base = x + layout.kept.offsets(o).of[0];
    if (op == ReduceOp::max || op == ReduceOp::min) {
      if (op == ReduceOp::max) write_extreme(base, layout, FirstExtreme<true>{}, o, out, argmax);
      else write_extreme(base, layout, FirstExtreme<false>{}, o, out, argmax);
      continue;
    }
    const Accumulator<T> total = block_reduce(partial_sum(base, layout), Sum{});
    if (op == ReduceOp::sum) {
      if (threadIdx.x == 0) out[o] = static_cast<T>(total);
      continue;
    }
    const double mean = static_cast<double>(total) / layout.count;
    if (op == ReduceOp::mean) {
      if (threadIdx.x == 0) out[o] = static_cast<T>(mean);
      continue;
    }
    // var: squared deviations from the mean (two passes: no cancellation for large means)
    double squares = 0;
    for (int64_t j = threadIdx.x; j < layout.count; j += blockDim.x) {
      const double d = static_cast<double>(base[layout.block.offsets(j).of[0]]) - mean;
      squares += d * d;
    }
    squares = block_reduce(squares, Sum{});
    const int64_t degrees = layout.count - correction > 0 ? layout.count - correction : 0;
    if (threadIdx.x == 0) out[o] = static_cast<T>(squares / static_cast<double>(degrees));
  }
}

ReduceLayout reduce_layout(const Tensor& x, const std::vector<int>& axes) {
  const ReducedAxes split = split_reduced_axes(x.shape(), x.strides(), axes);
  return {strided_operands<1>("reduce", split.kept_shape, {&split.kept_strides}),
          strided_operands<1>("reduce", split.block_shape, {&split.block_strides}), numel(split.kept_shape),
          numel(split.block_shape)};
}

}  // namespace

void CudaBackend::reduce(ReduceOp op, const Tensor& x, const std::vector<int>& axes, const Tensor& out,
                         const Tensor& argmax, int64_t correction) {
  const ReduceLayout layout = reduce_layout(x, axes);
  if (layout.outputs == 0) return;
  require_device(op_name(op));
  // Enough threads for the block, from one warp up to kThreads (a power of two, for block_reduce).
  const int threads = static_cast<int>(std::clamp<int64_t>(std::bit_ceil(static_cast<uint64_t>(std::max<int64_t>(layout.count, 1))), 32, kThreads));
  dispatch(x.dtype(), [&]<typename T>() {
    int64_t* argmax_data = argmax.defined() ? device_data<int64_t>(argmax) : nullptr;
    launch(op_name(op), reduce_kernel<T>, row_blocks(layout.outputs), threads, op, device_data<T>(x), layout, correction, device_data<T>(out), argmax_data);
  });
}

}  // namespace AXIOM_CUDA_NAMESPACE
