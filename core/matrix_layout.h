// How a BLAS library can read the matrices of a strided tensor, shared by the CPU (OpenBLAS) and
// CUDA (cuBLAS) matmul kernels.
//
// BLAS takes a row-major matrix as (pointer, leading dimension, transposed or not), so a view
// whose rows or columns are evenly spaced — a transpose, a slice, one matrix of a batch — goes to
// BLAS as it is. Only a matrix with neither unit-stride rows nor unit-stride columns is copied.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/gemm_shape.h"
#include "core/tensor.h"

namespace axiom::core {

// A [rows, cols] matrix as BLAS reads it: row-major with row stride `ld`, or (transposed)
// column-major with column stride `ld`.
struct MatrixLayout {
  bool transposed;
  int64_t ld;
};

// The layout of a [rows, cols] matrix with these strides, if BLAS can read it in place.
std::optional<MatrixLayout> matrix_layout(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride);

// A copy of x [..., rows, cols] whose matrices are contiguous; broadcast batch axes (stride 0)
// stay broadcast, so a shared matrix is copied once.
Tensor compact_matrices(const Tensor& x);

// The element offset of every matrix of x [..., rows, cols]: offsets[i] for batch index i in
// row-major order (relative to x's first element).
std::vector<int64_t> batch_offsets(const Tensor& x);

// The stride s when matrix i of the batch starts at offsets[i] = i * s (s may be 0: one matrix
// shared by the batch), else nothing. Then BLAS can take the batch as (pointer, stride).
std::optional<int64_t> even_spacing(const std::vector<int64_t>& offsets);

// True when x's batch axes and its row axis together form one evenly spaced axis of rows, and
// its columns are adjacent: then the whole batch is one tall [batch * rows, cols] matrix.
bool rows_fold_into_one_matrix(const Tensor& x);

// True when every matrix of x [..., rows, cols] is the same one (the batch axes broadcast it).
bool is_shared_across_batch(const Tensor& x);

// How the CPU runs out [..., M, N] = a [..., M, K] @ b [..., K, N] (core/gemm_shape.h).
ProductPlan plan_product(const Tensor& a, const Tensor& b);

}  // namespace axiom::core
