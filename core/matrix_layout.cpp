#include "core/matrix_layout.h"

#include <algorithm>

namespace axiom::core {

std::optional<MatrixLayout> matrix_layout(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride) {
  // Row-major: columns adjacent, rows `row_stride` apart.
  if ((col_stride == 1 || cols == 1) && (rows == 1 || row_stride >= std::max<int64_t>(cols, 1))) {
    return MatrixLayout{false, rows == 1 ? std::max<int64_t>(cols, 1) : row_stride};
  }
  // Column-major (a transposed row-major matrix): rows adjacent, columns `col_stride` apart.
  if ((row_stride == 1 || rows == 1) && (cols == 1 || col_stride >= std::max<int64_t>(rows, 1))) {
    return MatrixLayout{true, cols == 1 ? std::max<int64_t>(rows, 1) : col_stride};
  }
  return std::nullopt;
}

Tensor compact_matrices(const Tensor& x) {
  Tensor shared = x;
  for (int64_t axis = 0; axis < x.dim() - 2; ++axis) {
    if (x.stride(axis) == 0) shared = shared.narrow(axis, 0, 1);
  }
  return shared.contiguous().expand(x.shape());
}

std::vector<int64_t> batch_offsets(const Tensor& x) {
  const Shape batch(x.shape().begin(), x.shape().end() - 2);
  const Strides strides(x.strides().begin(), x.strides().end() - 2);
  std::vector<int64_t> offsets(static_cast<size_t>(numel(batch)), 0);
  // the odometer: index[a] counts along batch axis a, the last one fastest
  std::vector<int64_t> index(batch.size(), 0);
  int64_t offset = 0;
  for (size_t i = 0; i < offsets.size(); ++i) {
    offsets[i] = offset;
    for (size_t a = batch.size(); a-- > 0;) {
      offset += strides[a];
      if (++index[a] < batch[a]) break;
      offset -= batch[a] * strides[a];
      index[a] = 0;
    }
  }
  return offsets;
}

std::optional<int64_t> even_spacing(const std::vector<int64_t>& offsets) {
  const int64_t stride = offsets.size() > 1 ? offsets[1] - offsets[0] : 0;
  for (size_t i = 0; i < offsets.size(); ++i) {
    if (offsets[i] != static_cast<int64_t>(i) * stride) return std::nullopt;
  }
  return stride;
}

bool rows_fold_into_one_matrix(const Tensor& x) {
  if (x.size(-1) > 1 && x.stride(-1) != 1) return false;
  int64_t expected = x.stride(-2);
  for (int64_t axis = x.dim() - 2; axis-- > 0;) {
    expected *= x.size(axis + 1);
    if (x.size(axis) > 1 && x.stride(axis) != expected) return false;
  }
  return true;
}

bool is_shared_across_batch(const Tensor& x) {
  for (int64_t axis = 0; axis < x.dim() - 2; ++axis) {
    if (x.size(axis) > 1 && x.stride(axis) != 0) return false;
  }
  return true;
}

namespace {

bool has_broadcast_batch_axis(const Tensor& x) {
  for (int64_t axis = 0; axis < x.dim() - 2; ++axis) {
    if (x.size(axis) > 1 && x.stride(axis) == 0) return true;
  }
  return false;
}

}  // namespace

ProductPlan plan_product(const Tensor& a, const Tensor& b) {
  const int64_t m = a.size(-2), k = a.size(-1), n = b.size(-1);
  const std::optional<MatrixLayout> a_view = matrix_layout(m, k, a.stride(-2), a.stride(-1));
  const std::optional<MatrixLayout> b_view = matrix_layout(k, n, b.stride(-2), b.stride(-1));
  GemmShape gemm{m, n, k, a_view && a_view->transposed, b_view && b_view->transposed};
  const int64_t batch = a.numel() / std::max<int64_t>(1, m * k);
  // a copied (core/cpu/matmul.cpp: compact_matrices) is contiguous but for its broadcast batch axes
  const bool a_rows_fold = a_view ? !a_view->transposed && rows_fold_into_one_matrix(a) : !has_broadcast_batch_axis(a);
  const bool folds = a.dim() > 2 && is_large(gemm) && m > 1 && is_shared_across_batch(b) && a_rows_fold;
  if (folds) return {.gemm = {batch * m, n, k, false, gemm.b_transposed}, .count = 1, .folded = true};
  return {.gemm = gemm, .count = a.dim() > 2 ? batch : 1, .folded = false};
}

}  // namespace axiom::core
