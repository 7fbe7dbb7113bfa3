// Reductions (sum, mean, var, max with argmax, min) over any set of axes, on the GPU.
//
// One block per output element: the block's threads stride over the elements it reduces (its
// "block" of x: the reduced axes at one position of the kept axes), then block_reduce combines
// their partial results in a fixed order. Sums are taken in double (int64 for integers), as on
// the CPU.
//
// Column sums, where consecutive outputs are adjacent in memory (a bias gradient: g [..., N]
// summed over every axis but the last), go another way, so that a warp reads 32 adjacent values
// at a time and every multiprocessor has work: the columns are cut into tiles of 32, the rows into
// chunks; block (tile, chunk) writes one partial sum per column, and the block that finishes a
// tile's last chunk adds the tile's partials in chunk order (a counter per tile tells it that it
// is the last: one launch, not two). The order of the additions is fixed: results are reproducible.
//
// Sums of a few outputs over many elements (a whole tensor's sum) split each output over many
// blocks the same way: partial sums per chunk, and the block that finishes the last chunk adds
// them in order (split_sum_kernel). Other reductions keep a block per output.
#include <bit>
#include <type_traits>

#include "core/axis_split.h"
#include "core/cuda/cuda_backend.h"
#include "core/cuda/kernels.cuh"
#include "core/factory.h"
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
__device__ void write_extreme(const T* base, const ReduceLayout& layout, Pick pick, int64_t o, T* out,
                              int64_t* argmax) {
  ValueAt<T> best{T(0), -1};
  for (int64_t j = threadIdx.x; j < layout.count; j += blockDim.x)
    best = pick(best, ValueAt<T>{base[layout.block.offsets(j).of[0]], j});
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
__global__ void reduce_kernel(ReduceOp op, const T* x, ReduceLayout layout, int64_t correction, T* out,
                              int64_t* argmax) {
  for (int64_t o = blockIdx.x; o < layout.outputs; o += gridDim.x) {
    const T* base = x + layout.kept.offsets(o).of[0];
    if (op == ReduceOp::max || op == ReduceOp::min) {
      if (op == ReduceOp::max)
        write_extreme(base, layout, FirstExtreme<true>{}, o, out, argmax);
      else
        write_extreme(base, layout, FirstExtreme<false>{}, o, out, argmax);
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

// --- column sums -----------------------------------------------------------------------------

constexpr int kTileColumns = 32;        // a warp: 32 adjacent columns
constexpr int kRowLanes = 8;            // rows read at once per tile (blocks of 32 x 8 threads)
constexpr int64_t kColumnBlocks = 512;  // blocks to aim for: a few per multiprocessor
constexpr int64_t kLeastRowsPerChunk = 64;

// Whether output o reduces the elements at o + block.offsets(j): the kept axes merged into one,
// of stride 1.
bool is_column_sum(const ReduceLayout& layout) {
  return layout.kept.rank == 1 && layout.kept.strides[0][0] == 1 && layout.outputs > 1;
}

// How many of a tile's (or an output's) chunks are summed, one counter each: the block that sums
// the last chunk adds up the partials. The counters live as long as the process, on the device,
// zeroed once; every launch leaves them at zero again, so no launch has to clear them.
constexpr int64_t kTileCounters = 4096;

unsigned long long* chunk_counters() {
  static unsigned long long* counters = [] {
    void* block = nullptr;
    check(cudaMalloc(&block, kTileCounters * sizeof(unsigned long long)), "column_sum");
    check(cudaMemset(block, 0, kTileCounters * sizeof(unsigned long long)), "column_sum");
    return static_cast<unsigned long long*>(block);
  }();
  return counters;
}

// Counts one more finished chunk in *counter and says whether it was the last of `chunks`. The
// fences order this block's partial sums (written before the call, then a __syncthreads()) before
// the count, and the count before the last block reads the others' partials. One thread calls it.
__device__ inline bool finished_last_chunk(unsigned long long* counter, int64_t chunks) {
  __threadfence();
  const bool last = atomicAdd(counter, 1ull) == static_cast<unsigned long long>(chunks - 1);
  __threadfence();
  return last;
}

// A value another block wrote in this launch: read from memory, never from a stale cache.
template <typename T>
__device__ T read_fresh(const T* address) {
  return *static_cast<const volatile T*>(address);
}

// Block (tile, chunk) sums 32 columns over one chunk of rows into partials[chunk, column]; the
// block that finishes a tile's last chunk (whichever it is: counters[tile] counts them) then adds
// the tile's partials in chunk order into out (for a mean, divided by `count`), and sets the
// counter back to zero. One launch, and the order of the additions is fixed: reproducible.
//   x: the layout's elements, [count rows, outputs columns];  partials: [chunks, outputs];
//   out: [outputs], contiguous;  tiles first_tile, first_tile + 1, ... of this launch
template <typename T>
__global__ void column_sums_kernel(const T* x, ReduceLayout layout, int64_t first_tile, int64_t tiles,
                                   int64_t rows_per_chunk, int64_t chunks, Accumulator<T>* partials,
                                   unsigned long long* counters, bool mean, T* out) {
  __shared__ Accumulator<T> lanes[kRowLanes][kTileColumns];
  __shared__ bool last_chunk_of_tile;
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const int64_t column = (first_tile + tile) * kTileColumns + threadIdx.x;
    for (int64_t chunk = blockIdx.y; chunk < chunks; chunk += gridDim.y) {
      const int64_t first = chunk * rows_per_chunk;
      const int64_t last = first + rows_per_chunk < layout.count ? first + rows_per_chunk : layout.count;
      Accumulator<T> total = 0;
      if (column < layout.outputs) {
        for (int64_t j = first + threadIdx.y; j < last; j += kRowLanes)
          total += x[column + layout.block.offsets(j).of[0]];
      }
      lanes[threadIdx.y][threadIdx.x] = total;
      __syncthreads();
      if (threadIdx.y == 0 && column < layout.outputs) {
        for (int lane = 1; lane < kRowLanes; ++lane) total += lanes[lane][threadIdx.x];
        partials[chunk * layout.outputs + column] = total;
      }
      __syncthreads();
      if (threadIdx.x == 0 && threadIdx.y == 0) last_chunk_of_tile = finished_last_chunk(&counters[tile], chunks);
      __syncthreads();
      if (last_chunk_of_tile && threadIdx.y == 0) {
        if (column < layout.outputs) {
          Accumulator<T> sum = 0;
          for (int64_t c = 0; c < chunks; ++c) sum += read_fresh(&partials[c * layout.outputs + column]);
          out[column] = mean ? static_cast<T>(static_cast<double>(sum) / layout.count) : static_cast<T>(sum);
        }
        if (threadIdx.x == 0) counters[tile] = 0;  // every chunk of this tile is counted: ready for the next launch
      }
      __syncthreads();  // before the next chunk writes `lanes` and `last_chunk_of_tile` again
    }
  }
}

// The sum (or mean) of each column, into out [outputs]: one launch per kTileCounters tiles.
template <typename T>
void column_sum(std::string_view op, const Tensor& x, const ReduceLayout& layout, bool mean, const Tensor& out) {
  const int64_t tiles = (layout.outputs + kTileColumns - 1) / kTileColumns;
  const int64_t most_chunks = std::max<int64_t>(1, layout.count / kLeastRowsPerChunk);
  const int64_t chunks = std::clamp<int64_t>(kColumnBlocks / tiles, 1, most_chunks);
  const int64_t rows_per_chunk = (layout.count + chunks - 1) / chunks;
  const Dtype partial_dtype = std::is_floating_point_v<T> ? Dtype::float64 : Dtype::int64;
  const Tensor partials = empty({chunks, layout.outputs}, partial_dtype, out.device());
  for (int64_t first_tile = 0; first_tile < tiles; first_tile += kTileCounters) {
    const int64_t launch_tiles = std::min(kTileCounters, tiles - first_tile);
    const dim3 grid(static_cast<unsigned>(std::min(launch_tiles, most_blocks())),
                    static_cast<unsigned>(std::min({chunks, most_blocks(), int64_t(65535)})));
    launch(op, column_sums_kernel<T>, grid, dim3(kTileColumns, kRowLanes), device_data<T>(x), layout, first_tile,
           launch_tiles, rows_per_chunk, chunks, device_data<Accumulator<T>>(partials), chunk_counters(), mean,
           device_data<T>(out));
  }
}

// --- sums of few outputs over many elements (a whole tensor's sum) ------------------------------

// An output of at least kSplitLeast elements is split into chunks of about kSplitChunk (at most
// kMostChunks of them, longer for larger outputs), a block each, when there are at most
// kMostSplitOutputs outputs: one block per output would leave most of the GPU's multiprocessors idle.
constexpr int64_t kSplitChunk = 4096, kSplitLeast = 4 * kSplitChunk, kMostSplitOutputs = 64, kMostChunks = 1024;

// Block (chunk, output) sums its chunk of the output's elements into partials[output, chunk]; the
// block that finishes an output's last chunk (counters[output] counts them) adds the output's
// partials in chunk order into out[output] (for a mean, divided by `count`), and sets the counter
// back to zero. One launch, two passes, the same order of additions every run.
//   partials: [outputs, chunks];  out: [outputs], contiguous
template <typename T>
__global__ void split_sum_kernel(const T* x, ReduceLayout layout, int64_t chunks, int64_t per_chunk,
                                 Accumulator<T>* partials, unsigned long long* counters, bool mean, T* out) {
  __shared__ bool last_chunk_of_output;
  for (int64_t o = blockIdx.y; o < layout.outputs; o += gridDim.y) {
    const T* base = x + layout.kept.offsets(o).of[0];
    for (int64_t chunk = blockIdx.x; chunk < chunks; chunk += gridDim.x) {
      const int64_t first = chunk * per_chunk,
                    last = first + per_chunk < layout.count ? first + per_chunk : layout.count;
      Accumulator<T> total = 0;
      for (int64_t j = first + threadIdx.x; j < last; j += blockDim.x) total += base[layout.block.offsets(j).of[0]];
      total = block_reduce(total, Sum{});
      if (threadIdx.x == 0) {
        partials[o * chunks + chunk] = total;
        last_chunk_of_output = finished_last_chunk(&counters[o], chunks);
      }
      __syncthreads();
      if (last_chunk_of_output && threadIdx.x == 0) {
        Accumulator<T> sum = 0;
        for (int64_t c = 0; c < chunks; ++c) sum += read_fresh(&partials[o * chunks + c]);
        out[o] = mean ? static_cast<T>(static_cast<double>(sum) / layout.count) : static_cast<T>(sum);
        counters[o] = 0;  // every chunk of this output is counted: ready for the next launch
      }
      __syncthreads();  // before the next chunk writes `last_chunk_of_output` again
    }
  }
}

bool is_split_sum(const ReduceLayout& layout) {
  return layout.outputs <= kMostSplitOutputs && layout.count >= kSplitLeast;
}

// The sum (or mean) of each output, its elements split over many blocks: out [outputs], contiguous.
template <typename T>
void split_sum(std::string_view op, const Tensor& x, const ReduceLayout& layout, bool mean, const Tensor& out) {
  const int64_t chunks = std::min((layout.count + kSplitChunk - 1) / kSplitChunk, kMostChunks);
  const int64_t per_chunk = (layout.count + chunks - 1) / chunks;  // every element in some chunk
  const Dtype partial_dtype = std::is_floating_point_v<T> ? Dtype::float64 : Dtype::int64;
  const Tensor partials = empty({layout.outputs, chunks}, partial_dtype, out.device());
  const dim3 grid(static_cast<unsigned>(std::min(chunks, most_blocks())),
                  static_cast<unsigned>(std::min(layout.outputs, most_blocks())));
  launch(op, split_sum_kernel<T>, grid, kThreads, device_data<T>(x), layout, chunks, per_chunk,
         device_data<Accumulator<T>>(partials), chunk_counters(), mean, device_data<T>(out));
}

// --- counting the values that are not finite, in many tensors a launch ---------------------------

// The tensors of one launch, by value in its arguments (no upload): tensor t has n[t] elements
// at data[t], float64 or float32.
struct CountBatch {
  int count = 0;
  int64_t n[kTensorsPerLaunch];
  const void* data[kTensorsPerLaunch];
  bool is_double[kTensorsPerLaunch];
};

// NaN - NaN and inf - inf are NaN; a finite v gives 0.
__device__ inline bool is_not_finite(double v) { return !(v - v == 0); }

// *out += how many elements of the batch's tensors are not finite; block row y counts tensor y.
__global__ void count_non_finite_kernel(CountBatch batch, double* out) {
  double mine = 0;
  for (int t = blockIdx.y; t < batch.count; t += gridDim.y) {
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < batch.n[t];
         i += int64_t(gridDim.x) * blockDim.x) {
      const double v = batch.is_double[t] ? static_cast<const double*>(batch.data[t])[i]
                                          : static_cast<const float*>(batch.data[t])[i];
      if (is_not_finite(v)) mine += 1;
    }
  }
  const double block_total = block_reduce(mine, Sum{});
  if (threadIdx.x == 0 && block_total > 0) atomicAdd(out, block_total);  // whole numbers: the order does not matter
}

// ----------------------------------------------------------------------------------------------

ReduceLayout reduce_layout(const Tensor& x, const std::vector<int>& axes) {
  const ReducedAxes split = split_reduced_axes(x.shape(), x.strides(), axes);
  return {strided_operands<1>("reduce", split.kept_shape, {&split.kept_strides}),
          strided_operands<1>("reduce", split.block_shape, {&split.block_strides}), numel(split.kept_shape),
          numel(split.block_shape)};
}

}  // namespace

void CudaBackend::count_non_finite(const std::vector<Tensor>& tensors, const Tensor& out) {
  require_device("count_non_finite");
  fill(out, 0);
  size_t next = 0;
  while (next < tensors.size()) {
    CountBatch batch{};
    int64_t largest = 0;
    for (; next < tensors.size() && batch.count < kTensorsPerLaunch; ++next) {
      const Tensor& t = tensors[next];
      if (t.numel() == 0) continue;
      const int i = batch.count++;
      batch.n[i] = t.numel(), batch.data[i] = t.raw_data(), batch.is_double[i] = t.dtype() == Dtype::float64;
      largest = std::max(largest, t.numel());
    }
    if (batch.count == 0) continue;
    const dim3 grid(grid_size(largest), static_cast<unsigned>(std::min<int64_t>(batch.count, most_blocks())));
    launch("count_non_finite", count_non_finite_kernel, grid, kThreads, batch, device_data<double>(out));
  }
}

void CudaBackend::reduce(ReduceOp op, const Tensor& x, const std::vector<int>& axes, const Tensor& out,
                         const Tensor& argmax, int64_t correction) {
  const ReduceLayout layout = reduce_layout(x, axes);
  if (layout.outputs == 0) return;
  require_device(op_name(op));
  // Enough threads for the block, from one warp up to kThreads (a power of two, for block_reduce).
  const int threads = static_cast<int>(
      std::clamp<int64_t>(std::bit_ceil(static_cast<uint64_t>(std::max<int64_t>(layout.count, 1))), 32, kThreads));
  const bool sum_or_mean = op == ReduceOp::sum || op == ReduceOp::mean;
  const bool column_sum_applies = sum_or_mean && is_column_sum(layout) && out.is_contiguous();
  const bool split_sum_applies = sum_or_mean && !column_sum_applies && is_split_sum(layout) && out.is_contiguous();
  dispatch(x.dtype(), [&]<typename T>() {
    if (column_sum_applies) return column_sum<T>(op_name(op), x, layout, op == ReduceOp::mean, out);
    if (split_sum_applies) return split_sum<T>(op_name(op), x, layout, op == ReduceOp::mean, out);
    int64_t* argmax_data = argmax.defined() ? device_data<int64_t>(argmax) : nullptr;
    launch(op_name(op), reduce_kernel<T>, row_blocks(layout.outputs), threads, op, device_data<T>(x), layout,
           correction, device_data<T>(out), argmax_data);
  });
}

}  // namespace AXIOM_CUDA_NAMESPACE
