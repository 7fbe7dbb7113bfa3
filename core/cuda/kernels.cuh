// What every CUDA kernel here is built on: strided operands, launch sizes, block reductions.
//
// Elementwise kernels use one thread per element, in a grid-stride loop: thread t of the grid
// handles elements t, t + grid size, ... Element i (row-major over the shape) lives at
// offsets(i).of[k] in operand k, which the kernel works out from sizes and strides, so any view
// (transposed, sliced, broadcast with stride 0) is read in place.
//
// Row kernels (softmax, layer norm, cross-entropy) give each row a team: a warp for a short row,
// a block of kThreads for a long one (launch_rows). The team's threads stride along the row, and
// warp_reduce or block_reduce combines their partial results in a fixed order, so a result does
// not depend on timing. Reductions give each output a block.
//
// Every kernel is launched through launch() below: under nvcc it is the <<<grid, block>>> launch;
// in the emulated build (core/cuda/emulator) the same kernel runs on the CPU's grid runner.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <source_location>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "core/cuda/runtime.h"
#include "core/error.h"
#include "core/merged_axes.h"
#include "core/shape.h"
#include "core/tensor.h"

namespace AXIOM_CUDA_NAMESPACE {

constexpr int kMaxAxes = 8;  // after merge_axes; more is an Error

// The most bytes of arguments a kernel may take: 32,764 from CUDA 12.1 on (for Volta and later
// GPUs, all that this build targets), 4,096 before. The emulator holds kernels to the former.
#if defined(AXIOM_CUDA_EMULATED) || CUDART_VERSION >= 12010
constexpr size_t kMostKernelArgumentBytes = 32764;
#else
constexpr size_t kMostKernelArgumentBytes = 4096;
#endif
// Tensors one launch takes by value in its arguments (Adam's update, the count of non-finite
// values): every parameter of `small` in one launch, where the arguments may be that large.
constexpr int kTensorsPerLaunch = kMostKernelArgumentBytes > 4096 ? 128 : 16;
constexpr int kThreads = 256;  // per block; a power of two (block_reduce relies on it)

// The most blocks a launch asks for: grid-stride loops cover larger sizes. The emulator lets its
// tests lower the cap, so that a tensor of a few hundred elements makes every loop wrap around.
inline int64_t most_blocks() {
#if defined(AXIOM_CUDA_EMULATED)
  return cuda_emulator::most_blocks();
#else
  return 65536;
#endif
}

// Where a kernel was launched, for error messages: the op, and the file and line of the call.
struct LaunchSite {
  std::string_view op;
  std::source_location where;
  LaunchSite(std::string_view op, std::source_location where = std::source_location::current())
      : op(op), where(where) {}
  LaunchSite(const char* op, std::source_location where = std::source_location::current()) : op(op), where(where) {}
};

// "core/cuda/reduce.cu:171 (column_sum)": where a kernel was launched, for AXIOM_CUDA_SYNC's errors.
inline std::string launch_place(const LaunchSite& site) {
  std::string_view file = site.where.file_name();
  if (const size_t at = file.find("core/cuda/"); at != std::string_view::npos) file.remove_prefix(at);
  std::string_view function = site.where.function_name();
  if (const size_t open = function.find('('); open != std::string_view::npos) function = function.substr(0, open);
  if (const size_t space = function.rfind(' '); space != std::string_view::npos) function.remove_prefix(space + 1);
  return std::string(file) + ":" + std::to_string(site.where.line()) + " (" + std::string(function) + ")";
}

// kernel<<<grid, block>>>(args...), then check_launch(op): CUDA reports a launch it refused
// (too many threads per block, an empty grid) through cudaGetLastError.
template <typename... Params, typename... Args>
void launch(const LaunchSite& site, void (*kernel)(Params...), dim3 grid, dim3 block, Args&&... args) {
#if defined(AXIOM_CUDA_EMULATED)
  cuda_emulator::run_grid({site.op, site.where}, grid, block, kernel, static_cast<Params>(std::forward<Args>(args))...);
#else
  kernel<<<grid, block>>>(std::forward<Args>(args)...);
#endif
  check_launch(site.op);
  if (sync_every_launch()) finish_launch(site.op, launch_place(site));
}

// A tensor's first element, as a device pointer (Tensor::data<T>() is for CPU tensors only).
template <typename T>
T* device_data(const Tensor& t) {
  return static_cast<T*>(t.raw_data());
}

template <int N>
struct Offsets {
  int64_t of[N];
};

// N operands of one shape, each with its own strides, by value in a kernel's arguments.
template <int N>
struct StridedOperands {
  int rank = 0;
  int64_t sizes[kMaxAxes] = {};
  int64_t strides[N][kMaxAxes] = {};

  // Where element i (row-major) of the shape is, in each operand. One axis (the shape merged
  // whole: contiguous operands, or one broadcast value) needs no division.
  __host__ __device__ Offsets<N> offsets(int64_t i) const {
    Offsets<N> at{};
    if (rank == 1) {
      for (int k = 0; k < N; ++k) at.of[k] = i * strides[k][0];
      return at;
    }
    for (int a = rank - 1; a >= 0; --a) {
      const int64_t index = i % sizes[a];
      i /= sizes[a];
      for (int k = 0; k < N; ++k) at.of[k] += index * strides[k][a];
    }
    return at;
  }
};

// The operands' shape and strides with axes merged (core::merge_axes), ready for a kernel.
template <int N>
StridedOperands<N> strided_operands(std::string_view op, const Shape& shape,
                                    const std::array<const Strides*, N>& strides) {
  const MergedAxes<N> merged = merge_axes(shape, strides);
  const int rank = static_cast<int>(merged.shape.size());
  if (rank > kMaxAxes) {
    throw Error(op, "the CUDA kernels take at most ", kMaxAxes, " axes that cannot be merged; shape ", shape);
  }
  StridedOperands<N> operands;
  operands.rank = rank;
  for (int a = 0; a < rank; ++a) {
    operands.sizes[a] = merged.shape[a];
    for (int k = 0; k < N; ++k) operands.strides[k][a] = merged.strides[k][a];
  }
  return operands;
}

// Blocks for n one-thread-per-element items, capped (the loops stride over the rest).
inline unsigned grid_size(int64_t n) {
  return static_cast<unsigned>(std::clamp<int64_t>((n + kThreads - 1) / kThreads, 1, most_blocks()));
}

// for i in [0, n): body(offsets(i)), on the GPU. Body: a struct with
//   __device__ void operator()(const Offsets<N>& at) const
template <int N, typename Body>
__global__ void for_each_element(int64_t n, StridedOperands<N> operands, Body body) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    body(operands.offsets(i));
  }
}

// Four elements of type T, as one access: 16 bytes (one 128-bit load or store) for float32.
template <typename T>
struct alignas(4 * sizeof(T)) Four {
  T v[4];
};
template <typename T>
__device__ Four<T> load_four(const T* p) {
  return *reinterpret_cast<const Four<T>*>(p);
}
template <typename T>
__device__ void store_four(T* p, const Four<T>& four) {
  *reinterpret_cast<Four<T>*>(p) = four;
}

// The contiguous fast path: every operand is contiguous, its data aligned to four elements.
// Thread t handles elements 4t .. 4t + 3 with body.four(i) (a 128-bit load or store per operand
// for float32, no index arithmetic), then the last n % 4 elements one at a time. Body also has
//   __device__ void four(int64_t i) const   // elements i .. i + 3
template <int N, typename Body>
__global__ void for_each_four(int64_t n, Body body) {
  const int64_t first = blockIdx.x * int64_t(blockDim.x) + threadIdx.x, step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t q = first; q < n / 4; q += step) body.four(4 * q);
  for (int64_t i = n / 4 * 4 + first; i < n; i += step) {
    Offsets<N> at;
    for (int k = 0; k < N; ++k) at.of[k] = i;
    body(at);
  }
}

// Whether an elementwise op into `out` from `inputs` can take the contiguous fast path: every
// operand contiguous, of out's shape (nothing broadcast), its data aligned to four of its elements
// (a view that starts at an odd element is not).
template <typename... Inputs>
bool aligned_in_fours(const Tensor& out, const Inputs&... inputs) {
  auto aligned = [](const Tensor& t) {
    return t.is_contiguous() && reinterpret_cast<uintptr_t>(t.raw_data()) % (4 * dtype_size(t.dtype())) == 0;
  };
  return aligned(out) && ((aligned(inputs) && inputs.shape() == out.shape()) && ...);
}

// Whether index k lies in [0, size). An op checks its indices on the GPU (index_checks.cu) and
// reports one out of range at the next read back to the host; until then a kernel skips it (reads
// 0, adds nothing) rather than touch memory outside its tensor.
__device__ inline bool in_range(int64_t k, int64_t size) { return k >= 0 && k < size; }

// for i in [0, n): body(offsets(i)), on the GPU; through for_each_four when `in_fours`
// (aligned_in_fours of the operands).
template <int N, typename Body>
void launch_elementwise(const LaunchSite& site, int64_t n, const StridedOperands<N>& operands, const Body& body,
                        bool in_fours) {
  if (n == 0) return;
  require_device(site.op);
  if (in_fours) {
    launch(site, for_each_four<N, Body>, grid_size((n + 3) / 4), kThreads, n, body);
  } else {
    launch(site, for_each_element<N, Body>, grid_size(n), kThreads, n, operands, body);
  }
}

// --- block reductions -------------------------------------------------------------------------

struct Sum {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return a + b;
  }
};

// The larger of two, NaN winning (as the CPU's max and softmax do).
struct Max {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    if (a != a) return a;  // a is NaN
    if (b != b) return b;
    return a >= b ? a : b;
  }
};

constexpr unsigned kFullWarp = 0xffffffffu;  // every lane of a warp takes part in a shuffle

// Combines one value per lane of a warp; every lane gets the result. A butterfly: at each of five
// steps, lane i combines its value with that of lane i ^ offset, by register shuffles (no shared
// memory, no barrier). The order of the combinations is the same every run: reproducible.
template <typename T, typename Combine>
__device__ T warp_reduce(T value, Combine combine) {
  for (int offset = 16; offset > 0; offset /= 2) value = combine(value, __shfl_xor_sync(kFullWarp, value, offset));
  return value;
}

// Combines one value per thread of the block; every thread gets the result. blockDim.x must be a
// multiple of 32 (whole warps), at most kThreads, and blockDim.y 1. Each warp reduces by shuffles,
// its first lane leaves the warp's result in shared memory, and every thread combines those in warp
// order: two barriers, and the same order every run. (A value that is no number, such as the
// value-and-position of a max, cannot be shuffled: it goes through a tree in shared memory.)
template <typename T, typename Combine>
__device__ T block_reduce(T value, Combine combine) {
  if constexpr (std::is_arithmetic_v<T>) {
    __shared__ T warp_results[kThreads / 32];
    value = warp_reduce(value, combine);
    if (threadIdx.x % 32 == 0) warp_results[threadIdx.x / 32] = value;
    __syncthreads();
    T result = warp_results[0];
    for (unsigned warp = 1; warp < blockDim.x / 32; ++warp) result = combine(result, warp_results[warp]);
    __syncthreads();  // before the next call writes `warp_results` again
    return result;
  } else {
    __shared__ T partial[kThreads];
    partial[threadIdx.x] = value;
    __syncthreads();
    for (unsigned width = blockDim.x / 2; width > 0; width /= 2) {
      if (threadIdx.x < width) partial[threadIdx.x] = combine(partial[threadIdx.x], partial[threadIdx.x + width]);
      __syncthreads();
    }
    const T result = partial[0];
    __syncthreads();  // before the next call writes `partial` again
    return result;
  }
}

// --- row kernels: a team of threads per row ----------------------------------------------------
//
// A row kernel (softmax, layer norm, cross-entropy) is written once for a Team: the threads that
// share a row. Short rows get a warp each (kThreads / 32 rows a block, reductions by shuffles
// alone); long rows get a whole block (block_reduce). A team's `rank` strides along the row.

// The longest row a warp takes: 32 elements a lane. The emulator's tests may lower it, to run the
// block-per-row kernels on short rows.
inline int64_t longest_warp_row() {
#if defined(AXIOM_CUDA_EMULATED)
  return cuda_emulator::longest_warp_row();
#else
  return 1024;
#endif
}

struct WarpTeam {
  __device__ unsigned rank() const { return threadIdx.x % 32; }
  __device__ unsigned size() const { return 32; }
  __device__ int64_t first_row() const { return blockIdx.x * int64_t(blockDim.x / 32) + threadIdx.x / 32; }
  __device__ int64_t row_step() const { return int64_t(gridDim.x) * (blockDim.x / 32); }
  template <typename T, typename Combine>
  __device__ T reduce(T value, Combine combine) const {
    return warp_reduce(value, combine);
  }
};

struct BlockTeam {
  __device__ unsigned rank() const { return threadIdx.x; }
  __device__ unsigned size() const { return blockDim.x; }
  __device__ int64_t first_row() const { return blockIdx.x; }
  __device__ int64_t row_step() const { return gridDim.x; }
  template <typename T, typename Combine>
  __device__ T reduce(T value, Combine combine) const {
    return block_reduce(value, combine);
  }
};

// Blocks for a row kernel (one block per row), capped: each block loops over rows.
inline unsigned row_blocks(int64_t rows) { return static_cast<unsigned>(std::clamp<int64_t>(rows, 1, most_blocks())); }

// Launches a row kernel over `rows` rows of `length` elements: pick.template operator()<Team>()
// names the kernel for a team, WarpTeam for rows up to longest_warp_row(), else BlockTeam.
template <typename PickKernel, typename... Args>
void launch_rows(const LaunchSite& site, int64_t rows, int64_t length, PickKernel pick, Args&&... args) {
  if (length <= longest_warp_row()) {
    const int64_t warps_per_block = kThreads / 32;
    const int64_t blocks = std::clamp<int64_t>((rows + warps_per_block - 1) / warps_per_block, 1, most_blocks());
    launch(site, pick.template operator()<WarpTeam>(), static_cast<unsigned>(blocks), kThreads,
           std::forward<Args>(args)...);
  } else {
    launch(site, pick.template operator()<BlockTeam>(), row_blocks(rows), kThreads, std::forward<Args>(args)...);
  }
}

}  // namespace AXIOM_CUDA_NAMESPACE
