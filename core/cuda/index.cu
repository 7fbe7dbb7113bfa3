// Indexing kernels on the GPU: index_select / index_add (one index per slice of an axis) and
// gather / scatter_add (one index per element). Every operand is contiguous, seen as
// [outer, size, inner] around the axis, as in core/cpu/index.cpp. One thread per element moved.
//
// The two adding kernels use atomicAdd, because two threads may add into the same element (two
// equal indices). Floating-point sums then come out in an order that can change from run to run,
// so their last bits may differ between runs (PyTorch's index_add_ on CUDA behaves the same).
#include "core/cuda/cuda_backend.h"
#include "core/cuda/kernels.cuh"
#include "core/axis_split.h"
#include "core/tensor.h"

namespace AXIOM_CUDA_NAMESPACE {

namespace {

// *address += value, atomically. CUDA has no 64-bit signed atomicAdd: two's complement addition
// is the same on the unsigned bits.
template <typename T>
__device__ void atomic_add(T* address, T value) {
  if constexpr (std::is_same_v<T, int64_t>) {
    atomicAdd(reinterpret_cast<unsigned long long*>(address), static_cast<unsigned long long>(value));
  } else {
    atomicAdd(address, value);
  }
}

// Element e of the [outer, count, inner] side, as (o, i, j).
struct Position {
  int64_t o, i, j;
};

__device__ Position position_of(int64_t e, int64_t count, int64_t inner) {
  return {e / (count * inner), (e / inner) % count, e % inner};
}

// out[o, i, j] = x[o, index[i], j]            out: [outer, count, inner], x: [outer, size, inner]
template <typename T>
__global__ void index_select_kernel(const T* x, AxisSplit from, const int64_t* index, int64_t count, T* out) {
  const int64_t n = from.outer * count * from.inner;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < n; e += int64_t(gridDim.x) * blockDim.x) {
    const Position p = position_of(e, count, from.inner);
    const int64_t k = index[p.i];
    out[e] = in_range(k, from.size) ? x[(p.o * from.size + k) * from.inner + p.j] : T(0);
  }
}

// out[o, index[i], j] += src[o, i, j]         src: [outer, count, inner], out: [outer, size, inner]
template <typename T>
__global__ void index_add_kernel(T* out, AxisSplit to, const int64_t* index, int64_t count, const T* src) {
  const int64_t n = to.outer * count * to.inner;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < n; e += int64_t(gridDim.x) * blockDim.x) {
    const Position p = position_of(e, count, to.inner);
    const int64_t k = index[p.i];
    if (in_range(k, to.size)) atomic_add(&out[(p.o * to.size + k) * to.inner + p.j], src[e]);
  }
}

// out[o, j, k] = x[o, index[o, j, k], k]      out, index: [outer, count, inner], x: [outer, size, inner]
template <typename T>
__global__ void gather_kernel(const T* x, AxisSplit from, const int64_t* index, int64_t count, T* out) {
  const int64_t n = from.outer * count * from.inner;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < n; e += int64_t(gridDim.x) * blockDim.x) {
    const Position p = position_of(e, count, from.inner);
    const int64_t k = index[e];
    out[e] = in_range(k, from.size) ? x[(p.o * from.size + k) * from.inner + p.j] : T(0);
  }
}

// out[o, index[o, j, k], k] += src[o, j, k]   src, index: [outer, count, inner], out: [outer, size, inner]
template <typename T>
__global__ void scatter_add_kernel(T* out, AxisSplit to, const int64_t* index, int64_t count, const T* src) {
  const int64_t n = to.outer * count * to.inner;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < n; e += int64_t(gridDim.x) * blockDim.x) {
    const Position p = position_of(e, count, to.inner);
    const int64_t k = index[e];
    if (in_range(k, to.size)) atomic_add(&out[(p.o * to.size + k) * to.inner + p.j], src[e]);
  }
}

// The adding kernels exist for the dtypes atomicAdd takes.
template <typename Fn>
void dispatch_addable(std::string_view op, Dtype dtype, Fn&& fn) {
  switch (dtype) {
    case Dtype::float32: return fn.template operator()<float>();
    case Dtype::float64: return fn.template operator()<double>();
    case Dtype::int64: return fn.template operator()<int64_t>();
    default: throw Error(op, "no CUDA kernel for dtype ", dtype, " (float32, float64 or int64)");
  }
}

}  // namespace

void CudaBackend::index_select(const Tensor& x, int axis, const Tensor& index, const Tensor& out) {
  if (out.numel() == 0) return;
  require_device("index_select");
  dispatch(x.dtype(), [&]<typename T>() {
    launch("index_select", index_select_kernel<T>, grid_size(out.numel()), kThreads, device_data<T>(x),
           split_at(x.shape(), axis), device_data<int64_t>(index), index.numel(), device_data<T>(out));
  });
}

void CudaBackend::index_add(const Tensor& out, int axis, const Tensor& index, const Tensor& src) {
  if (src.numel() == 0) return;
  require_device("index_add");
  dispatch_addable("index_add", out.dtype(), [&]<typename T>() {
    launch("index_add", index_add_kernel<T>, grid_size(src.numel()), kThreads, device_data<T>(out),
           split_at(out.shape(), axis), device_data<int64_t>(index), index.numel(), device_data<T>(src));
  });
}

void CudaBackend::gather(const Tensor& x, int axis, const Tensor& index, const Tensor& out) {
  if (out.numel() == 0) return;
  require_device("gather");
  dispatch(x.dtype(), [&]<typename T>() {
    launch("gather", gather_kernel<T>, grid_size(out.numel()), kThreads, device_data<T>(x), split_at(x.shape(), axis),
           device_data<int64_t>(index), index.size(axis), device_data<T>(out));
  });
}

void CudaBackend::scatter_add(const Tensor& out, int axis, const Tensor& index, const Tensor& src) {
  if (src.numel() == 0) return;
  require_device("scatter_add");
  dispatch_addable("scatter_add", out.dtype(), [&]<typename T>() {
    launch("scatter_add", scatter_add_kernel<T>, grid_size(src.numel()), kThreads, device_data<T>(out),
           split_at(out.shape(), axis), device_data<int64_t>(index), index.size(axis), device_data<T>(src));
  });
}

}  // namespace AXIOM_CUDA_NAMESPACE
