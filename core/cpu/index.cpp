// Indexing kernels: index_select / index_add (one index per slice of an axis) and gather /
// scatter_add (one index per element). Every operand is contiguous, seen as [outer, size, inner]:
// `outer` counts the positions before the axis, `inner` the elements after it.
#include <cstring>

#include "core/axis_split.h"
#include "core/cpu/cpu_backend.h"
#include "core/cpu/loops.h"
#include "core/tensor.h"

namespace axiom::core::cpu {

void CpuBackend::index_select(const Tensor& x, int axis, const Tensor& index, const Tensor& out) {
  dispatch(x.dtype(), [&]<typename T>() {
    // out[o, i, :] = x[o, index[i], :]
    const AxisSplit from = split_at(x.shape(), axis);
    const int64_t count = index.numel(), inner = from.inner;
    const int64_t* idx = index.data<int64_t>();
    const T* src = x.data<T>();
    T* dst = out.data<T>();
    parallel_for(from.outer * count, std::max<int64_t>(1, kGrain / std::max<int64_t>(inner, 1)),
                 [&](int64_t begin, int64_t end) {
                   for (int64_t r = begin; r < end; ++r) {
                     const int64_t o = r / count, i = r % count;
                     std::memcpy(dst + r * inner, src + (o * from.size + idx[i]) * inner,
                                 static_cast<size_t>(inner) * sizeof(T));
                   }
                 });
  });
}

void CpuBackend::index_add(const Tensor& out, int axis, const Tensor& index, const Tensor& src) {
  dispatch(out.dtype(), [&]<typename T>() {
    // out[o, index[i], :] += src[o, i, :]. Two i may share an index, so each `o` is one task.
    const AxisSplit to = split_at(out.shape(), axis);
    const int64_t count = index.numel(), inner = to.inner;
    const int64_t* idx = index.data<int64_t>();
    const T* from = src.data<T>();
    T* dst = out.data<T>();
    parallel_for(to.outer, std::max<int64_t>(1, kGrain / std::max<int64_t>(count * inner, 1)),
                 [&](int64_t begin, int64_t end) {
                   for (int64_t o = begin; o < end; ++o) {
                     for (int64_t i = 0; i < count; ++i) {
                       T* row = dst + (o * to.size + idx[i]) * inner;
                       const T* add = from + (o * count + i) * inner;
                       for (int64_t j = 0; j < inner; ++j) row[j] += add[j];
                     }
                   }
                 });
  });
}

void CpuBackend::gather(const Tensor& x, int axis, const Tensor& index, const Tensor& out) {
  dispatch(x.dtype(), [&]<typename T>() {
    // out[o, j, k] = x[o, index[o, j, k], k]
    const AxisSplit from = split_at(x.shape(), axis);
    const AxisSplit shape = split_at(index.shape(), axis);
    const int64_t* idx = index.data<int64_t>();
    const T* src = x.data<T>();
    T* dst = out.data<T>();
    const int64_t inner = shape.inner;
    parallel_for(shape.outer * shape.size, std::max<int64_t>(1, kGrain / std::max<int64_t>(inner, 1)),
                 [&](int64_t begin, int64_t end) {
                   for (int64_t r = begin; r < end; ++r) {
                     const int64_t o = r / shape.size;
                     for (int64_t k = 0; k < inner; ++k)
                       dst[r * inner + k] = src[(o * from.size + idx[r * inner + k]) * inner + k];
                   }
                 });
  });
}

void CpuBackend::scatter_add(const Tensor& out, int axis, const Tensor& index, const Tensor& src) {
  dispatch(out.dtype(), [&]<typename T>() {
    // out[o, index[o, j, k], k] += src[o, j, k]. Each `o` is one task (two j may share an index).
    const AxisSplit to = split_at(out.shape(), axis);
    const AxisSplit shape = split_at(index.shape(), axis);
    const int64_t* idx = index.data<int64_t>();
    const T* from = src.data<T>();
    T* dst = out.data<T>();
    const int64_t inner = shape.inner, per_outer = shape.size * inner;
    parallel_for(shape.outer, std::max<int64_t>(1, kGrain / std::max<int64_t>(per_outer, 1)),
                 [&](int64_t begin, int64_t end) {
                   for (int64_t o = begin; o < end; ++o) {
                     for (int64_t j = 0; j < shape.size; ++j) {
                       for (int64_t k = 0; k < inner; ++k) {
                         const int64_t r = (o * shape.size + j) * inner + k;
                         dst[(o * to.size + idx[r]) * inner + k] += from[r];
                       }
                     }
                   }
                 });
  });
}

}  // namespace axiom::core::cpu
