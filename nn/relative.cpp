#include "nn/relative.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "autograd/factory.h"

namespace axiom::nn {

namespace {

// The table's clipped row for distance d: M + clip(d, -M, M).
int64_t table_row(int64_t distance, int64_t max_distance) {
  return max_distance + std::clamp(distance, -max_distance, max_distance);
}

// The clipping distance M of a table [2M + 1, Dh], after checking it against q [..., L, Dh].
int64_t check_shapes(const char* op, const Tensor& q, const Tensor& table) {
  if (q.dim() < 2 || q.size(-2) < 1 || table.dim() != 2 || table.size(0) % 2 == 0 || table.size(1) != q.size(-1)) {
    throw Error(op, "expected q [..., L, Dh] with L >= 1 and a table [2M + 1, Dh], got q ", q.shape(), " and table ",
                table.shape());
  }
  if (q.dtype() != table.dtype() || q.device() != table.device()) {
    throw Error(op, "q and the table must share dtype and device, got ", q.dtype(), " on ", q.device(), " and ",
                table.dtype(), " on ", table.device());
  }
  return (table.size(0) - 1) / 2;
}

// int64 indices of the given shape, on a device.
Tensor indices(const std::vector<int64_t>& values, const Shape& shape, Device device) {
  return from_vector(values, shape, device);
}

}  // namespace

Tensor relative_logits_direct(const Tensor& q, const Tensor& table) {
  const int64_t max_distance = check_shapes("relative_logits_direct", q, table), length = q.size(-2);
  std::vector<int64_t> rows;  // [L, L]: the table row for query i and key j
  for (int64_t i = 0; i < length; ++i) {
    for (int64_t j = 0; j < length; ++j) rows.push_back(table_row(j - i, max_distance));
  }
  const Tensor e_rel = embedding(table, indices(rows, {length, length}, q.device()));  // [L, L, Dh]
  // Query i against its own slice E_rel[i]: a product batched over i, q moved to [L, ..., 1, Dh].
  const Tensor per_query = q.unsqueeze(-2).movedim(-3, 0);  // [L, ..., 1, Dh]
  Shape keys_shape = {length};                              // E_rel[i]^T as [L, 1.., Dh, L]
  for (int64_t axis = 0; axis < q.dim() - 2; ++axis) keys_shape.push_back(1);
  keys_shape.insert(keys_shape.end(), {q.size(-1), length});
  const Tensor scores = matmul(per_query, e_rel.transpose(1, 2).reshape(keys_shape));  // [L, ..., 1, L]
  return scores.squeeze(-2).movedim(0, -2);                                            // [..., L, L]
}

Tensor relative_logits_skewed(const Tensor& q, const Tensor& table) {
  const int64_t max_distance = check_shapes("relative_logits_skewed", q, table), length = q.size(-2);
  std::vector<int64_t> rows;  // [2L - 1]: distances -(L-1) .. L-1
  for (int64_t d = -(length - 1); d <= length - 1; ++d) rows.push_back(table_row(d, max_distance));
  const Tensor e_all = embedding(table, indices(rows, {2 * length - 1}, q.device()));  // [2L - 1, Dh]
  const Tensor scores = matmul(q, e_all.transpose(0, 1));  // R [..., L, 2L - 1]: R[i][r], distance r - (L-1)
  if (length == 1) return scores;                          // [..., 1, 1]: distance 0 only
  // R[i][j - i + L - 1] sits at flat index i (2L - 2) + j + (L - 1): drop L - 1 entries, then rows of 2L - 2.
  Shape flat_shape(q.shape().begin(), q.shape().end() - 2), skewed_shape = flat_shape;
  flat_shape.push_back(length * (2 * length - 1));
  skewed_shape.insert(skewed_shape.end(), {length, 2 * length - 2});
  const Tensor flat = scores.reshape(flat_shape).narrow(-1, length - 1, length * (2 * length - 2));
  return flat.reshape(skewed_shape).narrow(-1, 0, length);  // [..., L, L]
}

Tensor relative_bias(const Tensor& q, const Tensor& table) {
  return mul(relative_logits_skewed(q, table), 1 / std::sqrt(static_cast<double>(q.size(-1))));
}

Tensor relative_logits_step(const Tensor& q_t, const Tensor& table, int64_t query, int64_t keys) {
  const int64_t max_distance = check_shapes("relative_logits_step", q_t, table);
  if (q_t.size(-2) != 1 || query < 0 || keys < 1) {
    throw Error("relative_logits_step",
                "expected one query q_t [..., 1, Dh] at a position >= 0 and at least one key, got q_t ", q_t.shape(),
                ", query ", query, ", keys ", keys);
  }
  std::vector<int64_t> rows;  // [keys]: distances -query .. keys - 1 - query
  for (int64_t j = 0; j < keys; ++j) rows.push_back(table_row(j - query, max_distance));
  const Tensor e_keys = embedding(table, indices(rows, {keys}, q_t.device()));  // [keys, Dh]
  return matmul(q_t, e_keys.transpose(0, 1));                                   // [..., 1, keys]
}

}  // namespace axiom::nn
