// Fused multi-head self-attention along one axis on the GPU (see Backend::attention), forward and
// backward, the same steps as core/cpu/attention.cpp, in one of three ways:
//
// - In shared memory, one launch each way, when a line's operands fit in a block's shared memory
//   (short lines: every axial line of an image): a block per (line, head) loads the line's Q, K and
//   V (and, backward, dO and P), and a warp per query row computes its scores, softmax and output
//   from there. A causal row computes only the scores it sees.
// - A tile at a time, for longer lines (a raster image's one line of every pixel): a block per
//   group of 8 query rows streams the line's keys and values through shared memory, an online
//   softmax forward (as FlashAttention), two launches backward (query rows, then key rows). A
//   causal group stops at its last row's keys.
// - Otherwise, for heads too wide for a tile of 16 rows (Dh over 86 in float64, 177 in float32),
//   with cuBLAS: each matrix product is one batched call over all lines and heads, reading q, k and
//   v in place in the packed qkv (core/cuda/blas.h), and the softmax steps are one row kernel each.
//
//   forward   S = scale * Q K^T          [L, Dh] x [Dh, L] -> [L, L], written into probs
//             P = softmax(S) by rows     (causal: row i over columns 0..i, zeros after)
//             O = P V                    [L, L] x [L, Dh] -> [L, Dh], into out's columns of the head
//   backward  dV = P^T dO,  dP = dO V^T,  dS = P * (dP - rowsum(dP * P)) * scale,
//             dQ = dS K,  dK = dS^T Q
#include <cmath>
#include <limits>

#include "core/attention_lines.h"
#include "core/cuda/blas.h"
#include "core/cuda/cuda_backend.h"
#include "core/cuda/kernels.cuh"
#include "core/factory.h"
#include "core/tensor.h"

namespace AXIOM_CUDA_NAMESPACE {

namespace {

// Row r of the stacked [tasks * L, L] scores is query r % L of its task; a team per row (kernels.cuh).
template <typename T, typename Team>
__global__ void attention_softmax_kernel(T* scores, int64_t rows, int64_t length, bool causal) {
  const Team team;
  for (int64_t r = team.first_row(); r < rows; r += team.row_step()) {
    T* row = scores + r * length;
    const int64_t seen = causal ? r % length + 1 : length;
    T max = -std::numeric_limits<T>::infinity();
    for (int64_t j = team.rank(); j < seen; j += team.size()) max = Max{}(max, row[j]);
    max = team.reduce(max, Max{});
    double total = 0;
    for (int64_t j = team.rank(); j < seen; j += team.size()) {
      row[j] = exp(row[j] - max);
      total += row[j];
    }
    const T scale = static_cast<T>(1.0 / team.reduce(total, Sum{}));
    for (int64_t j = team.rank(); j < length; j += team.size()) row[j] = j < seen ? row[j] * scale : T(0);
  }
}

// dS = P * (dP - rowsum(dP * P)) * scale, in place of dP, row by row.
template <typename T, typename Team>
__global__ void attention_softmax_backward_kernel(const T* probs, T* dp, int64_t rows, int64_t length, T scale) {
  const Team team;
  for (int64_t r = team.first_row(); r < rows; r += team.row_step()) {
    const T* p_row = probs + r * length;
    T* d_row = dp + r * length;
    double dot = 0;
    for (int64_t j = team.rank(); j < length; j += team.size()) dot += double(d_row[j]) * p_row[j];
    const T d = static_cast<T>(team.reduce(dot, Sum{}));
    for (int64_t j = team.rank(); j < length; j += team.size()) d_row[j] = p_row[j] * (d_row[j] - d) * scale;
  }
}

// --- in shared memory ---------------------------------------------------------------------------

constexpr int kWarps = kThreads / 32;
constexpr size_t kSharedBytes = 40 << 10;  // of the 48 KiB a block may hold statically

// Where a task's rows are: task t = line * heads + head; position i of its line starts at
// start(t, width) + i * step(width) in a tensor whose rows are `width` wide (3D for qkv, D for out).
// (AttentionLines' arithmetic, for the device.)
struct Tasks {
  int64_t count, length, inner_count, heads, head_width;
  __device__ int64_t start(int64_t t, int64_t width) const {
    const int64_t line = t / heads;
    return (line / inner_count) * length * inner_count * width + (line % inner_count) * width +
           (t % heads) * head_width;
  }
  __device__ int64_t step(int64_t width) const { return inner_count * width; }
};

Tasks tasks_of(const AttentionLines& lines, int64_t heads, int64_t d) {
  return {lines.count() * heads, lines.length, lines.inner_count, heads, d / heads};
}

// Rows of Q, K, V and dO in shared memory are Dh + 1 apart: lanes that read rows j, j + 1, ... at
// one column then fall in different banks (Dh apart, a multiple of 32, they would all share one).
__host__ __device__ inline int64_t shared_row_step(int64_t head_width) { return head_width + 1; }

// Whether the shared-memory kernels take lines of `length` with heads `head_width` wide: the
// forward keeps Q, K, V and a row of p per warp, the backward Q, K, V, dO, P and dS.
template <typename T>
bool fits_in_shared(int64_t length, int64_t head_width) {
  const int64_t rows = length * shared_row_step(head_width);
  const int64_t forward = 3 * rows + kWarps * length, backward = 4 * rows + 2 * length * length;
  return std::max(forward, backward) * int64_t(sizeof(T)) <= int64_t(kSharedBytes);
}

// Rows first .. first + count of task t's [L, Dh] in a tensor `width` wide, starting `column` into
// each row, into `to` (rows shared_row_step apart); by every thread of the block.
template <typename T>
__device__ void load_rows(const Tasks& tasks, int64_t t, const T* from, int64_t width, int64_t column, int64_t first,
                          int64_t count, T* to) {
  const int64_t dh = tasks.head_width, ld = shared_row_step(dh), step = tasks.step(width);
  const T* rows = from + tasks.start(t, width) + column + first * step;
  for (int64_t e = threadIdx.x; e < count * dh; e += blockDim.x)
    to[(e / dh) * ld + e % dh] = rows[(e / dh) * step + e % dh];
}

// All L rows of task t (as above).
template <typename T>
__device__ void load_rows(const Tasks& tasks, int64_t t, const T* from, int64_t width, int64_t column, T* to) {
  load_rows(tasks, t, from, width, column, 0, tasks.length, to);
}

// a[i] . b[j] over Dh, rows of [L, Dh] ld apart
template <typename T>
__device__ T row_dot(const T* a, int64_t i, const T* b, int64_t j, int64_t dh, int64_t ld) {
  T total = 0;
  for (int64_t c = 0; c < dh; ++c) total += a[i * ld + c] * b[j * ld + c];
  return total;
}

// Forward, a block per task: Q, K, V [L, Dh] in shared memory; warp w takes query rows w, w + 8, ...:
//   s_j = scale q_i . k_j (j <= i when causal),  p = softmax(s),  o_i = sum_j p_j v_j
// probs [tasks, L, L] (zeros past a causal row's end) and out's head columns are written.
template <typename T>
__global__ void attention_shared_kernel(Tasks tasks, const T* qkv, int64_t d, bool causal, T scale, T* out, T* probs) {
  __shared__ T memory[kSharedBytes / sizeof(T)];
  const int64_t l = tasks.length, dh = tasks.head_width, ld = shared_row_step(dh);
  T *q = memory, *k = q + l * ld, *v = k + l * ld, *row = v + l * ld + (threadIdx.x / 32) * l;  // row: this warp's p
  const unsigned lane = threadIdx.x % 32;
  for (int64_t t = blockIdx.x; t < tasks.count; t += gridDim.x) {
    load_rows(tasks, t, qkv, 3 * d, 0, q), load_rows(tasks, t, qkv, 3 * d, d, k),
        load_rows(tasks, t, qkv, 3 * d, 2 * d, v);
    __syncthreads();
    for (int64_t i = threadIdx.x / 32; i < l; i += kWarps) {
      const int64_t seen = causal ? i + 1 : l;
      T max = -std::numeric_limits<T>::infinity();
      for (int64_t j = lane; j < seen; j += 32) max = Max{}(max, row[j] = scale * row_dot(q, i, k, j, dh, ld));
      max = warp_reduce(max, Max{});
      double total = 0;
      for (int64_t j = lane; j < seen; j += 32) total += row[j] = exp(row[j] - max);
      const T inverse = static_cast<T>(1.0 / warp_reduce(total, Sum{}));
      T* p_out = probs + (t * l + i) * l;
      for (int64_t j = lane; j < l; j += 32) p_out[j] = j < seen ? (row[j] *= inverse) : T(0);
      __syncwarp();  // every lane's p_j written before any lane reads them all
      T* o = out + tasks.start(t, d) + i * tasks.step(d);
      for (int64_t c = lane; c < dh; c += 32) {
        T value = 0;
        for (int64_t j = 0; j < seen; ++j) value += row[j] * v[j * ld + c];
        o[c] = value;
      }
      __syncwarp();  // every lane done with `row` before the next row overwrites it
    }
    __syncthreads();  // every warp done before the next task loads
  }
}

// Backward, a block per task: Q, K, V, dO [L, Dh], P and then dS [L, L] in shared memory.
//   dS_ij = P_ij (dP_ij - sum_j dP_ij P_ij) scale,  dP_ij = dO_i . V_j     (a warp per row i)
//   dQ_i = sum_j dS_ij K_j,  dK_i = sum_r dS_ri Q_r,  dV_i = sum_r P_ri dO_r   (a warp per row i)
// (A causal row's P, and so its dS, is 0 past the row's end.)
template <typename T>
__global__ void attention_shared_backward_kernel(Tasks tasks, const T* qkv, const T* probs, const T* grad_out,
                                                 int64_t d, T scale, T* grad_qkv) {
  __shared__ T memory[kSharedBytes / sizeof(T)];
  const int64_t l = tasks.length, dh = tasks.head_width, ld = shared_row_step(dh);
  T *q = memory, *k = q + l * ld, *v = k + l * ld, *dout = v + l * ld, *p = dout + l * ld, *ds = p + l * l;
  const unsigned lane = threadIdx.x % 32;
  for (int64_t t = blockIdx.x; t < tasks.count; t += gridDim.x) {
    load_rows(tasks, t, qkv, 3 * d, 0, q), load_rows(tasks, t, qkv, 3 * d, d, k),
        load_rows(tasks, t, qkv, 3 * d, 2 * d, v);
    load_rows(tasks, t, grad_out, d, 0, dout);
    for (int64_t e = threadIdx.x; e < l * l; e += blockDim.x) p[e] = probs[t * l * l + e];
    __syncthreads();
    for (int64_t i = threadIdx.x / 32; i < l; i += kWarps) {
      double dot = 0;
      for (int64_t j = lane; j < l; j += 32)
        dot += double(ds[i * l + j] = row_dot(dout, i, v, j, dh, ld)) * p[i * l + j];
      const T row_total = static_cast<T>(warp_reduce(dot, Sum{}));
      for (int64_t j = lane; j < l; j += 32) ds[i * l + j] = p[i * l + j] * (ds[i * l + j] - row_total) * scale;
    }
    __syncthreads();  // dS whole before the products read its columns
    T* grad = grad_qkv + tasks.start(t, 3 * d);
    const int64_t step = tasks.step(3 * d);
    for (int64_t i = threadIdx.x / 32; i < l; i += kWarps) {
      for (int64_t c = lane; c < dh; c += 32) {
        T dq = 0, dk = 0, dv = 0;
        for (int64_t r = 0; r < l; ++r) {
          dq += ds[i * l + r] * k[r * ld + c];
          dk += ds[r * l + i] * q[r * ld + c];
          dv += p[r * l + i] * dout[r * ld + c];
        }
        grad[i * step + c] = dq, grad[i * step + d + c] = dk, grad[i * step + 2 * d + c] = dv;
      }
    }
    __syncthreads();  // every warp done before the next task loads
  }
}

// --- long lines: keys and values (backward: queries too) through shared memory a tile at a time --

// A block takes a group of kWarps neighbouring rows of one task, warp w row first + w; the rows
// that each of them runs over come through shared memory `tile` at a time. Nothing [L, L] is kept
// but probs (and, backward, dS), and a causal row visits only the keys it sees.
struct RowGroups {
  Tasks tasks;
  int64_t tile;  // rows of a tile
  __host__ __device__ int64_t per_task() const { return (tasks.length + kWarps - 1) / kWarps; }
  __host__ __device__ int64_t count() const { return tasks.count * per_task(); }
};

// Rows of a tile for heads `head_width` wide, enough for any of the tiled kernels, which keep at
// most a row and two accumulators [Dh] per warp, and per tile row two rows [ld] and two values per
// warp; 0 when too few fit.
constexpr int64_t kFewestTileRows = 16, kMostTileRows = 64;
template <typename T>
int64_t tile_rows(int64_t head_width) {
  const int64_t ld = shared_row_step(head_width), capacity = kSharedBytes / sizeof(T);
  const int64_t per_warp = kWarps * (ld + 2 * head_width), per_row = 2 * ld + 2 * kWarps;
  const int64_t rows = std::min(kMostTileRows, (capacity - per_warp) / per_row);
  return rows >= kFewestTileRows ? rows : 0;
}

// Of `count` rows from `first`, how many a row that sees rows 0 .. seen - 1 sees.
__device__ inline int64_t visible_in(int64_t first, int64_t count, int64_t seen) {
  return seen <= first ? 0 : (seen - first < count ? seen - first : count);
}

// Forward: warp w's query row i keeps a running max m, sum l and output o (an online softmax, as
// FlashAttention does) while the keys and values come a tile at a time:
//   each tile   s_j = scale q_i . k_j (j <= i when causal), kept raw in probs' row i
//               m' = max(m, s_j),  c = e^(m - m'),  l = c l + sum_j e^(s_j - m'),  o = c o + sum_j e^(s_j - m') v_j
//   at the end  out_i = o / l,  probs' row p_j = e^(s_j - m) / l (zeros past a causal row's end)
template <typename T>
__global__ void attention_tiled_kernel(RowGroups groups, const T* qkv, int64_t d, bool causal, T scale, T* out,
                                       T* probs) {
  __shared__ T memory[kSharedBytes / sizeof(T)];
  const Tasks& tasks = groups.tasks;
  const int64_t l = tasks.length, dh = tasks.head_width, ld = shared_row_step(dh), tile = groups.tile,
                warp = threadIdx.x / 32;
  T *q_rows = memory, *k = q_rows + kWarps * ld, *v = k + tile * ld, *e_rows = v + tile * ld,
    *o_rows = e_rows + kWarps * tile;
  T *q = q_rows + warp * ld, *e = e_rows + warp * tile, *o = o_rows + warp * dh;  // this warp's row, e^(s - m') and o
  const unsigned lane = threadIdx.x % 32;
  for (int64_t g = blockIdx.x; g < groups.count(); g += gridDim.x) {
    const int64_t t = g / groups.per_task(), first = (g % groups.per_task()) * kWarps, i = first + warp;
    const int64_t rows = std::min<int64_t>(kWarps, l - first), keys = causal ? first + rows : l,
                  seen = causal ? i + 1 : l;
    T* s_row = probs + (t * l + i) * l;
    __syncthreads();  // every warp done with the last group's rows
    load_rows(tasks, t, qkv, 3 * d, 0, first, rows, q_rows);
    for (int64_t c = lane; c < dh; c += 32) o[c] = 0;
    T max = -std::numeric_limits<T>::infinity();
    double total = 0;
    for (int64_t k0 = 0; k0 < keys; k0 += tile) {
      const int64_t count = std::min(tile, keys - k0);
      __syncthreads();  // every warp done with the last tile
      load_rows(tasks, t, qkv, 3 * d, d, k0, count, k), load_rows(tasks, t, qkv, 3 * d, 2 * d, k0, count, v);
      __syncthreads();
      const int64_t visible = i < l ? visible_in(k0, count, seen) : 0;
      if (visible == 0) continue;  // the same for the whole warp
      T tile_max = -std::numeric_limits<T>::infinity();
      for (int64_t j = lane; j < visible; j += 32)
        tile_max = Max{}(tile_max, s_row[k0 + j] = e[j] = scale * row_dot(q, 0, k, j, dh, ld));
      const T new_max = Max{}(max, warp_reduce(tile_max, Max{}));
      // while every score so far is -inf, shift by 0: e^(-inf) = 0, where e^(-inf - -inf) would be NaN
      const T shift = new_max == -std::numeric_limits<T>::infinity() ? T(0) : new_max, correction = exp(max - shift);
      double tile_total = 0;
      for (int64_t j = lane; j < visible; j += 32) tile_total += e[j] = exp(e[j] - shift);
      total = total * correction + warp_reduce(tile_total, Sum{});
      max = new_max;
      __syncwarp();  // every lane's e_j written before any lane reads them all
      for (int64_t c = lane; c < dh; c += 32) {
        T value = o[c] * correction;
        for (int64_t j = 0; j < visible; ++j) value += e[j] * v[j * ld + c];
        o[c] = value;
      }
      __syncwarp();  // every lane done with e before the next tile's
    }
    if (i >= l) continue;
    const T inverse = static_cast<T>(1.0 / total);
    T* o_out = out + tasks.start(t, d) + i * tasks.step(d);
    for (int64_t c = lane; c < dh; c += 32) o_out[c] = o[c] * inverse;
    for (int64_t j = lane; j < l; j += 32) s_row[j] = j < seen ? exp(s_row[j] - max) * inverse : T(0);
  }
}

// Backward, the first of two launches: warp w's query row i, with V and then K a tile at a time:
//   pass 1  dP_ij = dO_i . V_j into ds' row i,  D_i = sum_j dP_ij P_ij
//   pass 2  dS_ij = P_ij (dP_ij - D_i) scale over it,  dQ_i = sum_j dS_ij K_j
// (ds is written only where the row sees a key: P, and so dS, is 0 elsewhere.)
template <typename T>
__global__ void attention_tiled_dq_kernel(RowGroups groups, const T* qkv, const T* probs, const T* grad_out, int64_t d,
                                          bool causal, T scale, T* ds, T* grad_qkv) {
  __shared__ T memory[kSharedBytes / sizeof(T)];
  const Tasks& tasks = groups.tasks;
  const int64_t l = tasks.length, dh = tasks.head_width, ld = shared_row_step(dh), tile = groups.tile,
                warp = threadIdx.x / 32;
  T *dout_rows = memory, *kv = dout_rows + kWarps * ld, *e_rows = kv + tile * ld, *dq_rows = e_rows + kWarps * tile;
  T *dout = dout_rows + warp * ld, *e = e_rows + warp * tile,
    *dq = dq_rows + warp * dh;  // this warp's dO_i, dS_ij and dQ_i
  const unsigned lane = threadIdx.x % 32;
  for (int64_t g = blockIdx.x; g < groups.count(); g += gridDim.x) {
    const int64_t t = g / groups.per_task(), first = (g % groups.per_task()) * kWarps, i = first + warp;
    const int64_t rows = std::min<int64_t>(kWarps, l - first), keys = causal ? first + rows : l,
                  seen = causal ? i + 1 : l;
    const T* p_row = probs + (t * l + i) * l;
    T* ds_row = ds + (t * l + i) * l;
    __syncthreads();  // every warp done with the last group's rows
    load_rows(tasks, t, grad_out, d, 0, first, rows, dout_rows);
    for (int64_t c = lane; c < dh; c += 32) dq[c] = 0;
    double dot = 0;
    for (int64_t k0 = 0; k0 < keys; k0 += tile) {  // pass 1, V
      const int64_t count = std::min(tile, keys - k0);
      __syncthreads();
      load_rows(tasks, t, qkv, 3 * d, 2 * d, k0, count, kv);
      __syncthreads();
      const int64_t visible = i < l ? visible_in(k0, count, seen) : 0;
      for (int64_t j = lane; j < visible; j += 32)
        dot += double(ds_row[k0 + j] = row_dot(dout, 0, kv, j, dh, ld)) * p_row[k0 + j];
    }
    const T row_total = static_cast<T>(warp_reduce(dot, Sum{}));
    for (int64_t k0 = 0; k0 < keys; k0 += tile) {  // pass 2, K
      const int64_t count = std::min(tile, keys - k0);
      __syncthreads();
      load_rows(tasks, t, qkv, 3 * d, d, k0, count, kv);
      __syncthreads();
      const int64_t visible = i < l ? visible_in(k0, count, seen) : 0;
      if (visible == 0) continue;  // the same for the whole warp
      for (int64_t j = lane; j < visible; j += 32)
        ds_row[k0 + j] = e[j] = p_row[k0 + j] * (ds_row[k0 + j] - row_total) * scale;
      __syncwarp();  // every lane's dS_ij written before any lane reads them all
      for (int64_t c = lane; c < dh; c += 32) {
        T value = dq[c];
        for (int64_t j = 0; j < visible; ++j) value += e[j] * kv[j * ld + c];
        dq[c] = value;
      }
      __syncwarp();  // every lane done with e before the next tile's
    }
    if (i >= l) continue;
    T* grad = grad_qkv + tasks.start(t, 3 * d) + i * tasks.step(3 * d);
    for (int64_t c = lane; c < dh; c += 32) grad[c] = dq[c];
  }
}

// Backward, the second launch: warp w's key row j, with Q and dO a tile at a time (causal: the
// queries i >= j, the only ones that see key j), reading the columns j of dS and P:
//   dK_j = sum_i dS_ij Q_i,  dV_j = sum_i P_ij dO_i
template <typename T>
__global__ void attention_tiled_dkv_kernel(RowGroups groups, const T* qkv, const T* probs, const T* ds,
                                           const T* grad_out, int64_t d, bool causal, T* grad_qkv) {
  __shared__ T memory[kSharedBytes / sizeof(T)];
  const Tasks& tasks = groups.tasks;
  const int64_t l = tasks.length, dh = tasks.head_width, ld = shared_row_step(dh), tile = groups.tile,
                warp = threadIdx.x / 32;
  T *q = memory, *dout = q + tile * ld, *ds_columns = dout + tile * ld, *p_columns = ds_columns + kWarps * tile;
  T *dk_rows = p_columns + kWarps * tile, *dv_rows = dk_rows + kWarps * dh;
  T *ds_j = ds_columns + warp * tile, *p_j = p_columns + warp * tile, *dk = dk_rows + warp * dh,
    *dv = dv_rows + warp * dh;
  const unsigned lane = threadIdx.x % 32;
  for (int64_t g = blockIdx.x; g < groups.count(); g += gridDim.x) {
    const int64_t t = g / groups.per_task(), first = (g % groups.per_task()) * kWarps, j = first + warp;
    for (int64_t c = lane; c < dh; c += 32) dk[c] = 0, dv[c] = 0;
    for (int64_t i0 = causal ? first : 0; i0 < l; i0 += tile) {
      const int64_t count = std::min(tile, l - i0);
      __syncthreads();  // every warp done with the last tile (or group)
      load_rows(tasks, t, qkv, 3 * d, 0, i0, count, q), load_rows(tasks, t, grad_out, d, 0, i0, count, dout);
      __syncthreads();
      if (j >= l) continue;  // the same for the whole warp
      for (int64_t r = lane; r < count; r += 32) {
        const int64_t i = i0 + r, at = (t * l + i) * l + j;
        const bool sees = !causal || i >= j;
        ds_j[r] = sees ? ds[at] : T(0), p_j[r] = sees ? probs[at] : T(0);
      }
      __syncwarp();  // the whole column read before any lane uses it
      for (int64_t c = lane; c < dh; c += 32) {
        T dk_c = dk[c], dv_c = dv[c];
        for (int64_t r = 0; r < count; ++r) dk_c += ds_j[r] * q[r * ld + c], dv_c += p_j[r] * dout[r * ld + c];
        dk[c] = dk_c, dv[c] = dv_c;
      }
      __syncwarp();  // every lane done with the column before the next tile's
    }
    if (j >= l) continue;
    T* grad = grad_qkv + tasks.start(t, 3 * d) + j * tasks.step(3 * d);
    for (int64_t c = lane; c < dh; c += 32) grad[d + c] = dk[c], grad[2 * d + c] = dv[c];
  }
}

// --- with cuBLAS ---------------------------------------------------------------------------------

// Pointers to the matrix of every (line, head) task, task t = line * heads + head.
template <typename T>
struct TaskMatrices {
  std::vector<const T*> q, k, v;  // [L, Dh] in qkv, rows ld_qkv apart
  std::vector<T*> out;            // [L, Dh] in out (or grad_out), rows ld_out apart
  std::vector<T*> square;         // [L, L] in probs (or a scratch of the same shape), contiguous
};

template <typename T>
TaskMatrices<T> task_matrices(const AttentionLines& lines, int64_t heads, int64_t d, const T* qkv, T* out, T* square) {
  const int64_t dh = d / heads, l = lines.length;
  TaskMatrices<T> m;
  for (int64_t t = 0; t < lines.count() * heads; ++t) {
    const int64_t line = t / heads, head = t % heads;
    const T* q = qkv + lines.start(line, 3 * d) + head * dh;
    m.q.push_back(q), m.k.push_back(q + d), m.v.push_back(q + 2 * d);
    m.out.push_back(out + lines.start(line, d) + head * dh);
    m.square.push_back(square + t * l * l);
  }
  return m;
}

template <typename T>
std::vector<const T*> read_only(const std::vector<T*>& pointers) {
  return {pointers.begin(), pointers.end()};
}

// The same pointers shifted by `delta` elements: from q's rows to dq's, k's to dk's, ...
template <typename T>
std::vector<T*> shifted(const std::vector<const T*>& pointers, const T* from, T* to) {
  std::vector<T*> result;
  for (const T* p : pointers) result.push_back(to + (p - from));
  return result;
}

}  // namespace

void CudaBackend::attention(const Tensor& qkv, int axis, int64_t heads, const AttentionMask& mask, const Tensor& out,
                            const Tensor& probs) {
  const bool causal = mask.kind() == AttentionMask::Kind::causal;
  require_device("attention");
  dispatch_floating("attention", qkv.dtype(), [&]<typename T>() {
    const AttentionLines lines(qkv.shape(), axis);
    const int64_t d = out.size(-1), dh = d / heads, l = lines.length, ld = lines.step(3 * d),
                  rows = lines.count() * heads * l;
    const T scale = static_cast<T>(1.0 / std::sqrt(static_cast<double>(dh)));
    const Tasks tasks = tasks_of(lines, heads, d);
    if (tasks.count == 0) return;
    if (fits_in_shared<T>(l, dh)) {
      return launch("attention", attention_shared_kernel<T>, row_blocks(tasks.count), kThreads, tasks,
                    device_data<T>(qkv), d, causal, scale, device_data<T>(out), device_data<T>(probs));
    }
    if (const RowGroups groups{tasks, tile_rows<T>(dh)}; groups.tile > 0) {
      return launch("attention", attention_tiled_kernel<T>, row_blocks(groups.count()), kThreads, groups,
                    device_data<T>(qkv), d, causal, scale, device_data<T>(out), device_data<T>(probs));
    }
    const TaskMatrices<T> m =
        task_matrices<T>(lines, heads, d, device_data<T>(qkv), device_data<T>(out), device_data<T>(probs));
    gemm_batched<T>(false, true, l, l, dh, scale, m.q, ld, m.k, ld, T(0), m.square, l);  // S = scale * Q K^T
    launch_rows(
        "attention", rows, l, [&]<typename Team>() { return attention_softmax_kernel<T, Team>; }, device_data<T>(probs),
        rows, l, causal);
    gemm_batched<T>(false, false, l, dh, l, T(1), read_only(m.square), l, m.v, ld, T(0), m.out,
                    lines.step(d));  // O = P V
  });
}

void CudaBackend::attention_backward(const Tensor& qkv, const Tensor& probs, const Tensor& grad_out, int axis,
                                     int64_t heads, const AttentionMask& mask, const Tensor& grad_qkv) {
  const bool causal = mask.kind() == AttentionMask::Kind::causal;
  require_device("attention_backward");
  dispatch_floating("attention_backward", qkv.dtype(), [&]<typename T>() {
    const AttentionLines lines(qkv.shape(), axis);
    const int64_t d = grad_out.size(-1), dh = d / heads, l = lines.length, ld = lines.step(3 * d),
                  ld_out = lines.step(d);
    const int64_t rows = lines.count() * heads * l;
    const T scale = static_cast<T>(1.0 / std::sqrt(static_cast<double>(dh)));
    const Tasks tasks = tasks_of(lines, heads, d);
    if (tasks.count == 0) return;
    if (fits_in_shared<T>(l, dh)) {
      return launch("attention_backward", attention_shared_backward_kernel<T>, row_blocks(tasks.count), kThreads, tasks,
                    device_data<T>(qkv), device_data<T>(probs), device_data<T>(grad_out), d, scale,
                    device_data<T>(grad_qkv));
    }
    const Tensor ds = empty(probs.shape(), probs.dtype(), probs.device());  // dP, then dS
    if (const RowGroups groups{tasks, tile_rows<T>(dh)}; groups.tile > 0) {
      launch("attention_backward", attention_tiled_dq_kernel<T>, row_blocks(groups.count()), kThreads, groups,
             device_data<T>(qkv), device_data<T>(probs), device_data<T>(grad_out), d, causal, scale, device_data<T>(ds),
             device_data<T>(grad_qkv));
      return launch("attention_backward", attention_tiled_dkv_kernel<T>, row_blocks(groups.count()), kThreads, groups,
                    device_data<T>(qkv), device_data<T>(probs), device_data<T>(ds), device_data<T>(grad_out), d, causal,
                    device_data<T>(grad_qkv));
    }
    const T* q_base = device_data<T>(qkv);
    const TaskMatrices<T> m = task_matrices<T>(lines, heads, d, q_base, device_data<T>(grad_out), device_data<T>(ds));
    const std::vector<const T*> dout = read_only(m.out), ds_read = read_only(m.square);
    const std::vector<const T*> p =
        read_only(shifted(ds_read, device_data<T>(ds), device_data<T>(probs)));  // P: ds's places in probs
    T* grad_base = device_data<T>(grad_qkv);
    const std::vector<T*> dq = shifted(m.q, q_base, grad_base), dk = shifted(m.k, q_base, grad_base),
                          dv = shifted(m.v, q_base, grad_base);
    gemm_batched<T>(true, false, l, dh, l, T(1), p, l, dout, ld_out, T(0), dv, ld);          // dV = P^T dO
    gemm_batched<T>(false, true, l, l, dh, T(1), dout, ld_out, m.v, ld, T(0), m.square, l);  // dP = dO V^T
    launch_rows(
        "attention_backward", rows, l, [&]<typename Team>() { return attention_softmax_backward_kernel<T, Team>; },
        device_data<T>(probs), device_data<T>(ds), rows, l, scale);                    // dS
    gemm_batched<T>(false, false, l, dh, l, T(1), ds_read, l, m.k, ld, T(0), dq, ld);  // dQ = dS K
    gemm_batched<T>(true, false, l, dh, l, T(1), ds_read, l, m.q, ld, T(0), dk, ld);   // dK = dS^T Q
  });
}

}  // namespace AXIOM_CUDA_NAMESPACE
