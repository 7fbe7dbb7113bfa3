// Fused multi-head self-attention along one axis (see Backend::attention), forward and backward.
//
// The work is split into tasks of whole lines, or of one head of a line: a line is the L positions
// along the attended axis at one setting of every other axis. Each (line, head) is a few small matrix
// products on its rows of the packed projections and one pass of softmax over an L x L block that
// stays in cache:
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
// A line short enough (lines_in_cache: `small`'s lines of 28) is copied into contiguous scratch
// rows first (a bfloat16 qkv widened to float32 as it is copied: half the bytes to read), its
// heads run there one after another, and its output (or its qkv's gradient) is copied back: lines
// run in parallel on TBB threads, each product on its thread (for L^2 * Dh <= 64^3 OpenBLAS
// computes a product on the calling thread, core/parallel.h). Longer or wider lines
// run on views of the tensors in place (BLAS reads a row stride): in parallel by (line, head) when
// the products are small, else one at a time, each product threaded by OpenBLAS (a bfloat16 qkv
// widened whole first).
//
// With a block pattern (core/attention_mask.h: local attention), a task goes block by block: it
// copies the block's P queries and the M keys and values of its memory into scratch rows, and runs
// the same steps on those, [P, M] instead of [L, L], the keys a query may not see at -inf. Its
// products are cut into chunks of query rows small enough for the calling thread, so the tasks
// always run in parallel. Backward, a key's gradient gathers from every block whose memory holds
// it: dK and dV are added into, dQ written.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "core/attention_lines.h"
#include "core/attention_mask.h"
#include "core/cpu/bfloat16.h"
#include "core/cpu/blas.h"
#include "core/cpu/cpu_backend.h"
#include "core/cpu/fast_math.h"
#include "core/cpu/vector_math.h"
#include "core/matrix_layout.h"
#include "core/parallel.h"
#include "core/tensor.h"

namespace axiom::core::cpu {

namespace {

// to[0..n) = from[0..n): copied, or widened from bfloat16's bits (S = uint16_t) to float32 (exact).
template <typename S, typename T>
void read_row(const S* from, int64_t n, T* to) {
  if constexpr (std::is_same_v<S, T>) {
    std::copy_n(from, n, to);
  } else {
    static_assert(std::is_same_v<S, uint16_t> && std::is_same_v<T, float>);
    for (int64_t i = 0; i < n; ++i) to[i] = bfloat16_to_float(from[i]);
  }
}

// The rows of one line of a contiguous tensor [..., width] of S (core/attention_lines.h): position
// i of line n at first(n) + i * step, copied to and from L contiguous rows of `width`.
template <typename S>
struct LineRows {
  LineRows(const AttentionLines& lines_, int64_t width_, S* data_)
      : lines(lines_), width(width_), step(lines_.step(width_)), data(data_) {}
  S* first(int64_t line) const { return data + lines.start(line, width); }
  template <typename T>
  void copy_out(int64_t line, T* rows) const {  // rows [L, width] = the line's rows (widened from bfloat16)
    for (int64_t i = 0; i < lines.length; ++i) read_row(first(line) + i * step, width, rows + i * width);
  }
  void copy_in(int64_t line, const S* rows) const {  // the line's rows = rows [L, width]
    for (int64_t i = 0; i < lines.length; ++i) std::copy_n(rows + i * width, width, first(line) + i * step);
  }
  const AttentionLines& lines;
  int64_t width, step;
  S* data;
};

// Whether a line is copied into scratch rows and run on one thread: its qkv, output and their
// gradients fit in 256 KiB, and each product is small enough for OpenBLAS to run on the calling
// thread (L^2 Dh <= 64^3, core/parallel.h). Copied, a line's rows are read from memory in whole
// rows at once, not a head's few floats of each row per product: on `small`'s lines of 28, forward
// and backward, 1.3 to 1.45x faster than the products on views of the tensors, along either axis
// (even where a line's rows are contiguous).
template <typename T>
bool lines_in_cache(const AttentionLines& lines, int64_t d, int64_t heads) {
  const int64_t l = lines.length, dh = d / heads;
  return l * l * dh <= 64 * 64 * 64 && (8 * l * d + l * l) * static_cast<int64_t>(sizeof(T)) <= 256 * 1024;
}

// Runs chunk(begin, end) over chunks of [0, tasks) (a task: one head of one line, in place): in
// parallel when one task's products are small enough for OpenBLAS to run on the calling thread,
// else all on this thread, each product threaded by OpenBLAS.
template <typename Chunk>
void for_each_chunk_of_tasks(int64_t tasks, int64_t length, int64_t head_features, Chunk chunk) {
  const int64_t work = length * length * head_features;
  if (work <= 64 * 64 * 64) {
    parallel_for(tasks, std::max<int64_t>(1, 64 * 64 * 64 / work), chunk);
  } else {
    chunk(0, tasks);
  }
}

// Lines per parallel task: about 64^3 multiply-adds in each of a head's products, summed over heads.
int64_t lines_per_task(const AttentionLines& lines, int64_t dh, int64_t heads) {
  return std::max<int64_t>(1, 64 * 64 * 64 / (lines.length * lines.length * dh * heads));
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

// dS = P * (dP - rowsum(dP * P)) * scale, in place of dP, for `rows` rows of `length`.
template <typename T>
void softmax_backward_rows(const T* p, T* dp, int64_t rows, int64_t length, T scale) {
  for (int64_t i = 0; i < rows; ++i) {
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

// --- block patterns ----------------------------------------------------------------------------

// One (line, head) task's rows in a packed tensor: position i's Dh numbers start at first + i * step.
template <typename T>
struct HeadRows {
  T* first;
  int64_t step;
  T* row(int64_t position) const { return first + position * step; }
};

// to [count, Dh] = the rows at positions[0..count) (zeros for -1).
template <typename T>
void gather_rows(HeadRows<const T> from, const int64_t* positions, int64_t count, int64_t dh, T* to) {
  for (int64_t n = 0; n < count; ++n, to += dh) {
    if (positions[n] < 0)
      std::fill(to, to + dh, T(0));
    else
      std::copy_n(from.row(positions[n]), dh, to);
  }
}

// The rows at positions[0..count) += from [count, Dh] (-1 skipped).
template <typename T>
void scatter_add_rows(const T* from, const int64_t* positions, int64_t count, int64_t dh, HeadRows<T> to) {
  for (int64_t n = 0; n < count; ++n, from += dh) {
    if (positions[n] < 0) continue;
    T* row = to.row(positions[n]);
    for (int64_t c = 0; c < dh; ++c) row[c] += from[c];
  }
}

// Query rows per chunk: a product of rows x M x Dh stays on the calling thread (core/parallel.h).
int64_t rows_per_chunk(int64_t keys, int64_t dh) { return std::max<int64_t>(1, 64 * 64 * 64 / (keys * dh)); }

// Rows of softmax over the keys each query sees (the others -inf before, 0 after); a padding
// query's row (-1) is all 0. s [rows, M], visible [rows, M], queries [rows], keys [M].
template <typename T>
void masked_softmax_rows(T* s, const uint8_t* visible, const int64_t* queries, const int64_t* keys, int64_t rows,
                         int64_t m) {
  for (int64_t r = 0; r < rows; ++r, s += m, visible += m) {
    if (queries[r] < 0) {
      std::fill(s, s + m, T(0));
      continue;
    }
    for (int64_t j = 0; j < m; ++j) {
      if (!visible[j] || keys[j] < 0) s[j] = -std::numeric_limits<T>::infinity();
    }
    softmax_row(s, m);
  }
}

// One block's operands copied into rows of its own: Q and dO [P, Dh], K and V [M, Dh], and the
// backward's dQ [P, Dh], dK and dV [M, Dh] and dS [P, M]. One per chunk of tasks.
template <typename T>
struct BlockScratch {
  BlockScratch(int64_t p, int64_t m, int64_t dh)
      : q(p * dh), o(p * dh), dq(p * dh), k(m * dh), v(m * dh), dk(m * dh), dv(m * dh), ds(p * m) {}
  std::vector<T> q, o, dq, k, v, dk, dv, ds;  // o: the output forward, dO backward
};

// A task's rows of queries, keys and values in qkv [..., 3D] (or of their gradients), and its
// rows of a tensor [..., D] (the output, or its gradient). T: const or not.
template <typename T>
struct QkvRows {
  HeadRows<T> q, k, v;
};

template <typename T>
QkvRows<T> qkv_rows(const AttentionLines& lines, int64_t t, int64_t heads, int64_t dh, T* qkv) {
  const int64_t d = heads * dh, step = lines.step(3 * d);
  T* q = qkv + lines.start(t / heads, 3 * d) + (t % heads) * dh;
  return {{q, step}, {q + d, step}, {q + 2 * d, step}};
}

template <typename T>
HeadRows<T> head_rows(const AttentionLines& lines, int64_t t, int64_t heads, int64_t dh, T* x) {
  return {x + lines.start(t / heads, heads * dh) + (t % heads) * dh, lines.step(heads * dh)};
}

// Forward, one task, block by block: probs [blocks, P, M] of the task and out's rows of its queries.
//   S = scale Q K^T [P, M],  P = softmax over the visible keys,  O = P V [P, Dh]
template <typename T>
void block_attention_task(const BlockPattern& b, const QkvRows<const T>& x, HeadRows<T> out, T* probs, int64_t dh,
                          T scale, BlockScratch<T>& s) {
  const int64_t np = b.block_queries, m = b.block_keys, chunk = rows_per_chunk(m, dh);
  for (int64_t block = 0; block < b.blocks(); ++block) {
    const int64_t *queries = b.queries.data() + block * np, *keys = b.keys.data() + block * m;
    const uint8_t* visible = b.visible.data() + block * np * m;
    T* p = probs + block * np * m;
    gather_rows(x.q, queries, np, dh, s.q.data()), gather_rows(x.k, keys, m, dh, s.k.data()),
        gather_rows(x.v, keys, m, dh, s.v.data());
    for (int64_t i = 0; i < np; i += chunk) {
      const int64_t rows = std::min(chunk, np - i);
      gemm<T>(false, true, rows, m, dh, scale, s.q.data() + i * dh, dh, s.k.data(), dh, T(0), p + i * m,
              m);  // S = scale Q K^T
      masked_softmax_rows(p + i * m, visible + i * m, queries + i, keys, rows, m);
      gemm<T>(false, false, rows, dh, m, T(1), p + i * m, m, s.v.data(), dh, T(0), s.o.data() + i * dh, dh);  // O = P V
    }
    for (int64_t r = 0; r < np; ++r) {
      if (queries[r] >= 0) std::copy_n(s.o.data() + r * dh, dh, out.row(queries[r]));
    }
  }
}

// Backward, one task, block by block, from its probs [blocks, P, M] and dO (grad's rows of its queries):
//   dV += P^T dO,  dP = dO V^T,  dS = P * (dP - rowsum(dP * P)) * scale,  dQ = dS K,  dK += dS^T Q
// added into grad's rows, which the caller zeroed.
template <typename T>
void block_attention_backward_task(const BlockPattern& b, const QkvRows<const T>& x, HeadRows<const T> dout,
                                   const T* probs, int64_t dh, T scale, const QkvRows<T>& grad, BlockScratch<T>& s) {
  const int64_t np = b.block_queries, m = b.block_keys, chunk = rows_per_chunk(m, dh);
  for (int64_t block = 0; block < b.blocks(); ++block) {
    const int64_t *queries = b.queries.data() + block * np, *keys = b.keys.data() + block * m;
    const T* p = probs + block * np * m;
    gather_rows(x.q, queries, np, dh, s.q.data()), gather_rows(x.k, keys, m, dh, s.k.data()),
        gather_rows(x.v, keys, m, dh, s.v.data());
    gather_rows(dout, queries, np, dh, s.o.data());
    for (int64_t i = 0; i < np; i += chunk) {
      const int64_t rows = std::min(chunk, np - i);
      const T* p_rows = p + i * m;
      T *ds = s.ds.data() + i * m, *o = s.o.data() + i * dh;
      const T beta = i == 0 ? T(0) : T(1);
      gemm<T>(true, false, m, dh, rows, T(1), p_rows, m, o, dh, beta, s.dv.data(), dh);                 // dV += P^T dO
      gemm<T>(false, true, rows, m, dh, T(1), o, dh, s.v.data(), dh, T(0), ds, m);                      // dP = dO V^T
      softmax_backward_rows(p_rows, ds, rows, m, scale);                                                // dS
      gemm<T>(false, false, rows, dh, m, T(1), ds, m, s.k.data(), dh, T(0), s.dq.data() + i * dh, dh);  // dQ = dS K
      gemm<T>(true, false, m, dh, rows, T(1), ds, m, s.q.data() + i * dh, dh, beta, s.dk.data(), dh);   // dK += dS^T Q
    }
    scatter_add_rows(s.dq.data(), queries, np, dh, grad.q);
    scatter_add_rows(s.dk.data(), keys, m, dh, grad.k), scatter_add_rows(s.dv.data(), keys, m, dh, grad.v);
  }
}

// Zeros a task's rows of the three gradients: L rows of Dh each.
template <typename T>
void zero_rows(const QkvRows<T>& grad, int64_t length, int64_t dh) {
  for (int64_t i = 0; i < length; ++i) {
    for (const HeadRows<T>* rows : {&grad.q, &grad.k, &grad.v}) std::fill_n(rows->row(i), dh, T(0));
  }
}

template <typename T>
void block_attention(const Tensor& qkv, const AttentionLines& lines, int64_t heads, const BlockPattern& b,
                     const Tensor& out, const Tensor& probs) {
  const int64_t dh = out.size(-1) / heads, per_task = b.blocks() * b.block_queries * b.block_keys;
  const T scale = static_cast<T>(1.0 / std::sqrt(static_cast<double>(dh)));
  parallel_for(lines.count() * heads, 1, [&](int64_t begin, int64_t end) {
    BlockScratch<T> scratch(b.block_queries, b.block_keys, dh);
    for (int64_t t = begin; t < end; ++t) {
      block_attention_task(b, qkv_rows<const T>(lines, t, heads, dh, qkv.data<T>()),
                           head_rows(lines, t, heads, dh, out.data<T>()), probs.data<T>() + t * per_task, dh, scale,
                           scratch);
    }
  });
}

template <typename T>
void block_attention_backward(const Tensor& qkv, const Tensor& probs, const Tensor& grad_out,
                              const AttentionLines& lines, int64_t heads, const BlockPattern& b,
                              const Tensor& grad_qkv) {
  const int64_t dh = grad_out.size(-1) / heads, per_task = b.blocks() * b.block_queries * b.block_keys;
  const T scale = static_cast<T>(1.0 / std::sqrt(static_cast<double>(dh)));
  parallel_for(lines.count() * heads, 1, [&](int64_t begin, int64_t end) {
    BlockScratch<T> scratch(b.block_queries, b.block_keys, dh);
    for (int64_t t = begin; t < end; ++t) {
      const QkvRows<T> grad = qkv_rows(lines, t, heads, dh, grad_qkv.data<T>());
      zero_rows(grad, lines.length, dh);
      block_attention_backward_task(b, qkv_rows<const T>(lines, t, heads, dh, qkv.data<T>()),
                                    head_rows<const T>(lines, t, heads, dh, grad_out.data<T>()),
                                    probs.data<T>() + t * per_task, dh, scale, grad, scratch);
    }
  });
}

// Forward along lines (no block pattern) of qkv [..., 3D] stored as S: float or double (T), or
// bfloat16's bits (uint16_t, T float: only for lines_in_cache, widened as they are copied).
template <typename S, typename T>
void line_attention(const Tensor& qkv, const AttentionLines& lines, int64_t heads, bool causal, const Tensor& out,
                    const Tensor& probs) {
  const int64_t d = out.size(-1), dh = d / heads, l = lines.length;
  const T scale = static_cast<T>(1.0 / std::sqrt(static_cast<double>(dh)));
  // One head of one line: q, k, v [L, Dh] with rows `ld` apart, p [L, L], o [L, Dh] with rows `ld_o` apart.
  auto head = [&](const T* q, int64_t ld, T* p, T* o, int64_t ld_o) {
    const T *k = q + d, *v = q + 2 * d;
    gemm<T>(false, true, l, l, dh, scale, q, ld, k, ld, T(0), p, l);  // S = scale * Q K^T
    softmax_rows(p, l, causal);
    gemm<T>(false, false, l, dh, l, T(1), p, l, v, ld, T(0), o, ld_o);  // O = P V
  };
  LineRows<const S> x(lines, 3 * d, qkv.data<S>());
  LineRows<T> o(lines, d, out.data<T>());
  if constexpr (std::is_same_v<S, T>) {
    if (!lines_in_cache<T>(lines, d, heads)) {  // long or wide lines: on the tensors in place
      return for_each_chunk_of_tasks(lines.count() * heads, l, dh, [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t) {
          const int64_t line = t / heads, offset = (t % heads) * dh;
          head(x.first(line) + offset, x.step, probs.data<T>() + t * l * l, o.first(line) + offset, o.step);
        }
      });
    }
  }
  parallel_for(lines.count(), lines_per_task(lines, dh, heads), [&](int64_t begin, int64_t end) {
    std::vector<T> x_line(static_cast<size_t>(l * 3 * d)), o_line(static_cast<size_t>(l * d));
    for (int64_t line = begin; line < end; ++line) {
      x.copy_out(line, x_line.data());
      for (int64_t h = 0; h < heads; ++h) {
        head(x_line.data() + h * dh, 3 * d, probs.data<T>() + (line * heads + h) * l * l, o_line.data() + h * dh, d);
      }
      o.copy_in(line, o_line.data());
    }
  });
}

// Backward along lines (no block pattern), qkv stored as S, as line_attention. A copied line's
// gradient rows [L, 3D] go to write_line(line, rows): into grad_qkv (copy_in), or rounded and
// summed (RoundedRows); lines that are not copied are written into grad_qkv in place.
template <typename S, typename T, typename WriteLine>
void line_attention_backward(const Tensor& qkv, const Tensor& probs, const Tensor& grad_out,
                             const AttentionLines& lines, int64_t heads, const Tensor& grad_qkv, WriteLine write_line) {
  const int64_t d = grad_out.size(-1), dh = d / heads, l = lines.length;
  const T scale = static_cast<T>(1.0 / std::sqrt(static_cast<double>(dh)));
  // One head of one line: q, k, v and dq, dk, dv [L, Dh] with rows `ld` apart, p [L, L], dout
  // [L, Dh] with rows `ld_out` apart, ds [L, L] scratch.
  auto head = [&](const T* q, T* dq, int64_t ld, const T* p, const T* dout, int64_t ld_out, T* ds) {
    const T *k = q + d, *v = q + 2 * d;
    T *dk = dq + d, *dv = dq + 2 * d;
    gemm<T>(true, false, l, dh, l, T(1), p, l, dout, ld_out, T(0), dv, ld);  // dV = P^T dO
    gemm<T>(false, true, l, l, dh, T(1), dout, ld_out, v, ld, T(0), ds, l);  // dP = dO V^T
    softmax_backward_rows(p, ds, l, l, scale);                               // dS
    gemm<T>(false, false, l, dh, l, T(1), ds, l, k, ld, T(0), dq, ld);       // dQ = dS K
    gemm<T>(true, false, l, dh, l, T(1), ds, l, q, ld, T(0), dk, ld);        // dK = dS^T Q
  };
  LineRows<const S> x(lines, 3 * d, qkv.data<S>());
  LineRows<const T> dout(lines, d, grad_out.data<T>());
  const T* p = probs.data<T>();
  if constexpr (std::is_same_v<S, T>) {
    if (!lines_in_cache<T>(lines, d, heads)) {  // long or wide lines: on the tensors in place
      LineRows<T> dx(lines, 3 * d, grad_qkv.data<T>());
      return for_each_chunk_of_tasks(lines.count() * heads, l, dh, [&](int64_t begin, int64_t end) {
        std::vector<T> ds(static_cast<size_t>(l * l));  // one dS block per chunk, reused by its tasks
        for (int64_t t = begin; t < end; ++t) {
          const int64_t line = t / heads, offset = (t % heads) * dh;
          head(x.first(line) + offset, dx.first(line) + offset, x.step, p + t * l * l, dout.first(line) + offset,
               dout.step, ds.data());
        }
      });
    }
  }
  parallel_for(lines.count(), lines_per_task(lines, dh, heads), [&](int64_t begin, int64_t end) {
    std::vector<T> x_line(static_cast<size_t>(l * 3 * d)), dx_line(x_line.size());
    std::vector<T> dout_line(static_cast<size_t>(l * d)), ds(static_cast<size_t>(l * l));
    for (int64_t line = begin; line < end; ++line) {
      x.copy_out(line, x_line.data()), dout.copy_out(line, dout_line.data());
      for (int64_t h = 0; h < heads; ++h) {
        head(x_line.data() + h * dh, dx_line.data() + h * dh, 3 * d, p + (line * heads + h) * l * l,
             dout_line.data() + h * dh, d, ds.data());
      }
      write_line(line, dx_line.data());
    }
  });
}

// A line's gradient rows written rounded to bfloat16 into `rounded` [..., 3D] (as LineRows finds
// them), and summed into the line's own row of `partial` [lines, 3D] (rows in order).
struct RoundedRows {
  LineRows<uint16_t> rounded;
  float* partial;
  void operator()(int64_t line, const float* rows) const {
    float* sums = partial + line * rounded.width;
    std::fill_n(sums, rounded.width, 0.0f);
    for (int64_t i = 0; i < rounded.lines.length; ++i) {
      const float* row = rows + i * rounded.width;
      vec::round_to_bfloat16(row, rounded.first(line) + i * rounded.step, rounded.width);
      for (int64_t c = 0; c < rounded.width; ++c) sums[c] += row[c];
    }
  }
};

// A bfloat16 qkv is widened line by line where its lines are copied (lines_in_cache, no block
// pattern); for any other attention, all of it first, into a float32 copy.
bool widened_by_lines(const Tensor& qkv, const AttentionLines& lines, int64_t heads, const AttentionMask& mask) {
  return mask.kind() != AttentionMask::Kind::blocks && lines_in_cache<float>(lines, qkv.size(-1) / 3, heads);
}

}  // namespace

void CpuBackend::attention(const Tensor& qkv, int axis, int64_t heads, const AttentionMask& mask, const Tensor& out,
                           const Tensor& probs) {
  const AttentionLines lines(qkv.shape(), axis);
  const bool causal = mask.kind() == AttentionMask::Kind::causal;
  if (qkv.dtype() == Dtype::bfloat16) {
    if (!widened_by_lines(qkv, lines, heads, mask))
      return attention(qkv.to(Dtype::float32), axis, heads, mask, out, probs);
    return line_attention<uint16_t, float>(qkv, lines, heads, causal, out, probs);
  }
  dispatch_floating("attention", qkv.dtype(), [&]<typename T>() {
    if (mask.kind() == AttentionMask::Kind::blocks)
      return block_attention<T>(qkv, lines, heads, mask.pattern(), out, probs);
    line_attention<T, T>(qkv, lines, heads, causal, out, probs);
  });
}

// One query per line (a sampler's step), per line of q [..., 1, Dh], keys_t [..., Dh, S],
// values [..., S, Dh], rows contiguous:
//   p[s] = scale * sum_d q[d] keys_t[d, s]   (rows of keys_t added up: contiguous runs; -inf if hidden[s])
//   p = softmax(p)
//   out[:] = sum_s p[s] values[s, :]         (rows of values added up)
void CpuBackend::attention_step(const Tensor& q, const Tensor& keys_t, const Tensor& values, double scale,
                                const std::vector<uint8_t>& hidden, const Tensor& out) {
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
          vec::attention_step_line(q_line, k_line, k_row, values.data<T>() + v_at[line], v_row, dh, seen,
                                   static_cast<float>(scale), hidden.empty() ? nullptr : hidden.data(), p.data(),
                                   out.data<T>() + line * dh);
          continue;
        }
        std::fill(p.begin(), p.end(), T(0));
        for (int64_t d = 0; d < dh; ++d) {
          const T* k = k_line + d * k_row;
          for (int64_t s = 0; s < seen; ++s) p[s] += q_line[d] * k[s];
        }
        for (int64_t s = 0; s < seen; ++s)
          p[s] = hidden.empty() || !hidden[s] ? p[s] * static_cast<T>(scale) : -std::numeric_limits<T>::infinity();
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

void CpuBackend::attention_backward(const Tensor& qkv, const Tensor& probs, const Tensor& grad_out, int axis,
                                    int64_t heads, const AttentionMask& mask, const Tensor& grad_qkv) {
  const AttentionLines lines(qkv.shape(), axis);
  if (qkv.dtype() == Dtype::bfloat16) {
    if (!widened_by_lines(qkv, lines, heads, mask))
      return attention_backward(qkv.to(Dtype::float32), probs, grad_out, axis, heads, mask, grad_qkv);
    const LineRows<float> dx(lines, qkv.size(-1), grad_qkv.data<float>());
    return line_attention_backward<uint16_t, float>(qkv, probs, grad_out, lines, heads, grad_qkv,
                                                    [&](int64_t line, const float* rows) { dx.copy_in(line, rows); });
  }
  dispatch_floating("attention_backward", qkv.dtype(), [&]<typename T>() {
    if (mask.kind() == AttentionMask::Kind::blocks) {
      return block_attention_backward<T>(qkv, probs, grad_out, lines, heads, mask.pattern(), grad_qkv);
    }
    const LineRows<T> dx(lines, qkv.size(-1), grad_qkv.data<T>());
    line_attention_backward<T, T>(qkv, probs, grad_out, lines, heads, grad_qkv,
                                  [&](int64_t line, const T* rows) { dx.copy_in(line, rows); });
  });
}

// Each line's gradient rounded as it is written, its rows summed per line, then the lines' sums
// added in order (the same bits on any number of threads).
void CpuBackend::attention_backward_rounded(const Tensor& qkv, const Tensor& probs, const Tensor& grad_out, int axis,
                                            int64_t heads, const AttentionMask& mask, const Tensor& rounded,
                                            const Tensor& sums) {
  const AttentionLines lines(qkv.shape(), axis);
  if (!widened_by_lines(qkv, lines, heads, mask))
    return Backend::attention_backward_rounded(qkv, probs, grad_out, axis, heads, mask, rounded, sums);
  const int64_t width = qkv.size(-1);
  std::vector<float> partial(static_cast<size_t>(lines.count() * width));  // [lines, 3D]
  const RoundedRows write{LineRows<uint16_t>(lines, width, rounded.data<uint16_t>()), partial.data()};
  line_attention_backward<uint16_t, float>(qkv, probs, grad_out, lines, heads, Tensor(), write);
  float* total = sums.data<float>();
  std::fill_n(total, width, 0.0f);
  for (int64_t line = 0; line < lines.count(); ++line) {
    for (int64_t c = 0; c < width; ++c) total[c] += partial[static_cast<size_t>(line * width + c)];
  }
}

}  // namespace axiom::core::cpu
