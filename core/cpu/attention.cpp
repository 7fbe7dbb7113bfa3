// Fused multi-head self-attention along one axis (see Backend::attention), forward and backward.
//
// The work is split into tasks, one per (line, head): a line is the L positions along the
// attended axis at one setting of every other axis. Each task is four small matrix products on
// views of the packed projections (BLAS reads a row stride, so nothing is copied) and one pass of
// softmax over an L x L block that stays in cache:
//
//   forward   S = scale * Q K^T          [L, Dh] x [Dh, L] -> [L, L]
//             P = softmax(S) by rows     (causal: row i over columns 0..i, zeros after)
//             O = P V                    [L, L] x [L, Dh] -> [L, Dh], written into out's columns of this head
//   backward  dV = P^T dO                [L, L] x [L, Dh] -> [L, Dh]
//             dP = dO V^T                [L, Dh] x [Dh, L] -> [L, L]
//             dS = P * (dP - rowsum(dP * P)) * scale      (the softmax's backward, elementwise)
//             dQ = dS K                  [L, L] x [L, Dh] -> [L, Dh]
//             dK = dS^T Q                [L, L] x [L, Dh] -> [L, Dh]
//
// Tasks run in parallel on TBB threads, each product on its thread: for L^2 * Dh <= 64^3 OpenBLAS
// computes a product on the calling thread (core/parallel.h). Longer lines run one task at a time,
// each product threaded by OpenBLAS.
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "core/attention_lines.h"
#include "core/cpu/blas.h"
#include "core/cpu/cpu_backend.h"
#include "core/cpu/fast_math.h"
#include "core/cpu/vector_math.h"
#include "core/matrix_layout.h"
#include "core/parallel.h"
#include "core/tensor.h"

namespace axiom::core::cpu {

namespace {

// Runs tasks(begin, end) over chunks of [0, tasks): in parallel when one task's products are
// small enough for OpenBLAS to run on the calling thread, else all on this thread.
template <typename Chunk>
void for_each_chunk_of_tasks(int64_t tasks, int64_t length, int64_t head_features, Chunk chunk) {
  const int64_t work = length * length * head_features;
  if (work <= 64 * 64 * 64) {
    parallel_for(tasks, std::max<int64_t>(1, 64 * 64 * 64 / work), chunk);
  } else {
    chunk(0, tasks);
  }
}

// row[0..seen) = softmax(row[0..seen)), in place.
template <typename T>
void softmax_row(T* row, int64_t seen) {
  if constexpr (std::is_same_v<T, float>) {
    vec::softmax(row, row, seen, false);  // SIMD (vector_math.h)
    return;
  }
  T max = row[0];
  for (int64_t j = 1; j < seen; ++j) max = row[j] > max ? row[j] : max;
  for (int64_t j = 0; j < seen; ++j) row[j] = exp_of(row[j] - max);
  double total = 0;
  for (int64_t j = 0; j < seen; ++j) total += row[j];
  const T scale = static_cast<T>(1.0 / total);
  for (int64_t j = 0; j < seen; ++j) row[j] *= scale;
}

// Row i of P = softmax of row i of S, over columns 0..i if causal (zeros after), else 0..L-1.
template <typename T>
void softmax_rows(T* s, int64_t length, bool causal) {
  for (int64_t i = 0; i < length; ++i) {
    T* row = s + i * length;
    const int64_t seen = causal ? i + 1 : length;
    for (int64_t j = seen; j < length; ++j) row[j] = T(0);
    softmax_row(row, seen);
  }
}

// dS = P * (dP - rowsum(dP * P)) * scale, in place of dP.
template <typename T>
void softmax_backward_rows(const T* p, T* dp, int64_t length, T scale) {
  for (int64_t i = 0; i < length; ++i) {
    const T* p_row = p + i * length;
    T* d_row = dp + i * length;
    if constexpr (std::is_same_v<T, float>) {
      vec::softmax_backward(p_row, d_row, scale, length);  // SIMD (vector_math.h)
      continue;
    }
    double dot = 0;
    for (int64_t j = 0; j < length; ++j) dot += double(d_row[j]) * p_row[j];
    const T d = static_cast<T>(dot);
    for (int64_t j = 0; j < length; ++j) d_row[j] = p_row[j] * (d_row[j] - d) * scale;
  }
}

}  // namespace

void CpuBackend::attention(const Tensor& qkv, int axis, int64_t heads, bool causal, const Tensor& out, const Tensor& probs) {
  dispatch_floating("attention", qkv.dtype(), [&]<typename T>() {
    const AttentionLines lines(qkv.shape(), axis);
    const int64_t d = out.size(-1), dh = d / heads, l = lines.length;
    const T scale = static_cast<T>(1.0 / std::sqrt(static_cast<double>(dh)));
    const T* qkv_base = qkv.data<T>();
    T* out_base = out.data<T>();
    T* probs_base = probs.data<T>();
    auto task = [&](int64_t t) {
      const int64_t line = t / heads, head = t % heads;
      const T* q = qkv_base + lines.start(line, 3 * d) + head * dh;  // [L, Dh], rows 3D * inner apart
      const T *k = q + d, *v = q + 2 * d;
      const int64_t ld = lines.step(3 * d);
      T* p = probs_base + t * l * l;                                   // [L, L]
      gemm<T>(false, true, l, l, dh, scale, q, ld, k, ld, T(0), p, l);  // S = scale * Q K^T
      softmax_rows(p, l, causal);
      T* o = out_base + lines.start(line, d) + head * dh;
      gemm<T>(false, false, l, dh, l, T(1), p, l, v, ld, T(0), o, lines.step(d));  // O = P V
    };
    for_each_chunk_of_tasks(lines.count() * heads, l, dh, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) task(t);
    });
  });
}

// One query per line (a sampler's step), per line of q [..., 1, Dh], keys_t [..., Dh, S],
// values [..., S, Dh], rows contiguous:
//   p[s] = scale * sum_d q[d] keys_t[d, s]   (rows of keys_t added up: contiguous runs)
//   p = softmax(p)
//   out[:] = sum_s p[s] values[s, :]         (rows of values added up)
void CpuBackend::attention_step(const Tensor& q, const Tensor& keys_t, const Tensor& values, double scale, const Tensor& out) {
  dispatch_floating("attention_step", q.dtype(), [&]<typename T>() {
    const int64_t dh = q.size(-1), seen = keys_t.size(-1), lines = out.numel() / dh;
    const std::vector<int64_t> q_at = batch_offsets(q), k_at = batch_offsets(keys_t), v_at = batch_offsets(values);
    const int64_t k_row = keys_t.stride(-2), v_row = values.stride(-2);
    parallel_for(lines, std::max<int64_t>(1, 16384 / (dh * seen)), [&](int64_t begin, int64_t end) {
      std::vector<T> p(static_cast<size_t>(seen));
      for (int64_t line = begin; line < end; ++line) {
        const T* q_line = q.data<T>() + q_at[line];
        const T* k_line = keys_t.data<T>() + k_at[line];
        if constexpr (std::is_same_v<T, float>) {  // SIMD (vector_math.h), the same steps
          vec::attention_step_line(q_line, k_line, k_row, values.data<T>() + v_at[line], v_row, dh, seen, static_cast<float>(scale),
                                   p.data(), out.data<T>() + line * dh);
          continue;
        }
        std::fill(p.begin(), p.end(), T(0));
        for (int64_t d = 0; d < dh; ++d) {
          const T* k = k_line + d * k_row;
          for (int64_t s = 0; s < seen; ++s) p[s] += q_line[d] * k[s];
        }
        for (T& score : p) score *= static_cast<T>(scale);
        softmax_row(p.data(), seen);
        T* o = out.data<T>() + line * dh;
        std::fill(o, o + dh, T(0));
        for (int64_t s = 0; s < seen; ++s) {
          const T* v = values.data<T>() + v_at[line] + s * v_row;
          for (int64_t d = 0; d < dh; ++d) o[d] += p[s] * v[d];
        }
      }
    });
  });
}

void CpuBackend::attention_backward(const Tensor& qkv, const Tensor& probs, const Tensor& grad_out, int axis, int64_t heads,
                                    const Tensor& grad_qkv) {
  dispatch_floating("attention_backward", qkv.dtype(), [&]<typename T>() {
    const AttentionLines lines(qkv.shape(), axis);
    const int64_t d = grad_out.size(-1), dh = d / heads, l = lines.length;
    const T scale = static_cast<T>(1.0 / std::sqrt(static_cast<double>(dh)));
    const T *qkv_base = qkv.data<T>(), *probs_base = probs.data<T>(), *grad_out_base = grad_out.data<T>();
    T* grad_base = grad_qkv.data<T>();
    auto task = [&](int64_t t, T* ds /* [L, L] scratch */) {
      const int64_t line = t / heads, head = t % heads, ld = lines.step(3 * d), ld_out = lines.step(d);
      const T* q = qkv_base + lines.start(line, 3 * d) + head * dh;
      const T *k = q + d, *v = q + 2 * d;
      T* dq = grad_base + lines.start(line, 3 * d) + head * dh;
      T *dk = dq + d, *dv = dq + 2 * d;
      const T* p = probs_base + t * l * l;
      const T* dout = grad_out_base + lines.start(line, d) + head * dh;
      gemm<T>(true, false, l, dh, l, T(1), p, l, dout, ld_out, T(0), dv, ld);     // dV = P^T dO
      gemm<T>(false, true, l, l, dh, T(1), dout, ld_out, v, ld, T(0), ds, l);     // dP = dO V^T
      softmax_backward_rows(p, ds, l, scale);                                      // dS
      gemm<T>(false, false, l, dh, l, T(1), ds, l, k, ld, T(0), dq, ld);          // dQ = dS K
      gemm<T>(true, false, l, dh, l, T(1), ds, l, q, ld, T(0), dk, ld);           // dK = dS^T Q
    };
    for_each_chunk_of_tasks(lines.count() * heads, l, dh, [&](int64_t begin, int64_t end) {
      std::vector<T> ds(static_cast<size_t>(l * l));  // one dS block per chunk, reused by its tasks
      for (int64_t t = begin; t < end; ++t) task(t, ds.data());
    });
  });
}

}  // namespace axiom::core::cpu
