// Fused multi-head self-attention along one axis on the GPU (see Backend::attention), forward and
// backward. The same steps as core/cpu/attention.cpp, for every (line, head) at once: each matrix
// product is one batched cuBLAS call over all lines and heads, reading q, k and v in place in the
// packed qkv (core/cuda/blas.h), and the softmax steps are one row kernel each.
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

void CudaBackend::attention(const Tensor& qkv, int axis, int64_t heads, bool causal, const Tensor& out, const Tensor& probs) {
  require_device("attention");
  dispatch_floating("attention", qkv.dtype(), [&]<typename T>() {
    const AttentionLines lines(qkv.shape(), axis);
    const int64_t d = out.size(-1), dh = d / heads, l = lines.length, ld = lines.step(3 * d), rows = lines.count() * heads * l;
    const T scale = static_cast<T>(1.0 / std::sqrt(static_cast<double>(dh)));
    const TaskMatrices<T> m = task_matrices<T>(lines, heads, d, device_data<T>(qkv), device_data<T>(out), device_data<T>(probs));
    gemm_batched<T>(false, true, l, l, dh, scale, m.q, ld, m.k, ld, T(0), m.square, l);  // S = scale * Q K^T
    launch_rows("attention", rows, l, [&]<typename Team>() { return attention_softmax_kernel<T, Team>; }, device_data<T>(probs), rows,
                l, causal);
    gemm_batched<T>(false, false, l, dh, l, T(1), read_only(m.square), l, m.v, ld, T(0), m.out, lines.step(d));  // O = P V
  });
}

void CudaBackend::attention_backward(const Tensor& qkv, const Tensor& probs, const Tensor& grad_out, int axis, int64_t heads,
                                     const Tensor& grad_qkv) {
  require_device("attention_backward");
  dispatch_floating("attention_backward", qkv.dtype(), [&]<typename T>() {
    const AttentionLines lines(qkv.shape(), axis);
    const int64_t d = grad_out.size(-1), dh = d / heads, l = lines.length, ld = lines.step(3 * d), ld_out = lines.step(d);
    const int64_t rows = lines.count() * heads * l;
    const T scale = static_cast<T>(1.0 / std::sqrt(static_cast<double>(dh)));
    const Tensor ds = empty(probs.shape(), probs.dtype(), probs.device());  // dP, then dS
    const T* q_base = device_data<T>(qkv);
    const TaskMatrices<T> m = task_matrices<T>(lines, heads, d, q_base, device_data<T>(grad_out), device_data<T>(ds));
    const std::vector<const T*> dout = read_only(m.out), ds_read = read_only(m.square);
    const std::vector<const T*> p = read_only(shifted(ds_read, device_data<T>(ds), device_data<T>(probs)));  // P: ds's places in probs
    T* grad_base = device_data<T>(grad_qkv);
    const std::vector<T*> dq = shifted(m.q, q_base, grad_base), dk = shifted(m.k, q_base, grad_base),
                          dv = shifted(m.v, q_base, grad_base);
    gemm_batched<T>(true, false, l, dh, l, T(1), p, l, dout, ld_out, T(0), dv, ld);         // dV = P^T dO
    gemm_batched<T>(false, true, l, l, dh, T(1), dout, ld_out, m.v, ld, T(0), m.square, l);  // dP = dO V^T
    launch_rows("attention_backward", rows, l, [&]<typename Team>() { return attention_softmax_backward_kernel<T, Team>; },
                device_data<T>(probs), device_data<T>(ds), rows, l, scale);  // dS
    gemm_batched<T>(false, false, l, dh, l, T(1), ds_read, l, m.k, ld, T(0), dq, ld);  // dQ = dS K
    gemm_batched<T>(true, false, l, dh, l, T(1), ds_read, l, m.q, ld, T(0), dk, ld);   // dK = dS^T Q
  });
}

}  // namespace AXIOM_CUDA_NAMESPACE
