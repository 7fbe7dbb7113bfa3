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

}  // namespace axiom::core
