#include "nn/local.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/error.h"
#include "core/factory.h"

namespace axiom::nn {

namespace {

// x padded with `extra` zeros at the end of `axis`, or x itself.
Tensor pad_end(const Tensor& x, int64_t axis, int64_t extra) { return extra == 0 ? x : pad(x, axis, 0, extra); }
// out[n] = x[n + ahead] along `axis`, zeros past the ends.
Tensor look(const Tensor& x, int64_t axis, int64_t ahead) { return ahead == 0 ? x : shift(x, axis, -ahead); }

struct Offset {
  int64_t rows, columns;  // a memory block's place, in blocks, from the query block
};

// The grid cut into blocks: R x C positions, padded up to block_rows x block_columns blocks of
// rows x columns. A block taller or wider than the grid is cut to it: every query sees the same
// keys (local_sees divides positions inside the grid alike), without padding up to the block.
struct BlockGrid {
  BlockGrid(const LocalBlocks& wanted, int64_t grid_rows, int64_t grid_columns)
      : blocks{.rows = std::min(wanted.rows, grid_rows), .columns = std::min(wanted.columns, grid_columns)},
        rows(grid_rows), columns(grid_columns),
        block_rows((grid_rows + blocks.rows - 1) / blocks.rows), block_columns((grid_columns + blocks.columns - 1) / blocks.columns) {}
  int64_t block_size() const { return blocks.rows * blocks.columns; }

  // The memory blocks that can hold a visible key: the block above exists only below the first
  // block row; the block to the right holds earlier positions only when a block has several rows.
  std::vector<Offset> memory() const {
    std::vector<Offset> offsets;
    for (int64_t up : {-1, 0}) {
      if (up < 0 && block_rows == 1) continue;
      for (int64_t across : {-1, 0, 1}) {
        if (across != 0 && block_columns == 1) continue;
        if (up == 0 && across == 1 && blocks.rows == 1) continue;
        offsets.push_back({up, across});
      }
    }
    return offsets;
  }

  // x [..., R, C, Dh] -> [..., block_rows, block_columns, rows * columns, Dh]: each block's positions in raster order
  Tensor to_blocks(const Tensor& x) const {
    const Tensor padded = pad_end(pad_end(x, -3, block_rows * blocks.rows - rows), -2, block_columns * blocks.columns - columns);
    Shape split(x.shape().begin(), x.shape().end() - 3);
    const Shape lead = split;
    split.insert(split.end(), {block_rows, blocks.rows, block_columns, blocks.columns, x.size(-1)});
    Shape grouped = lead;
    grouped.insert(grouped.end(), {block_rows, block_columns, block_size(), x.size(-1)});
    return padded.reshape(split).transpose(-4, -3).reshape(grouped);
  }

  // The inverse of to_blocks, without the padding: [..., block_rows, block_columns, rows * columns, Dh] -> [..., R, C, Dh]
  Tensor from_blocks(const Tensor& x) const {
    Shape split(x.shape().begin(), x.shape().end() - 4);
    Shape merged = split;
    split.insert(split.end(), {block_rows, block_columns, blocks.rows, blocks.columns, x.size(-1)});
    merged.insert(merged.end(), {block_rows * blocks.rows, block_columns * blocks.columns, x.size(-1)});
    return x.reshape(split).transpose(-4, -3).reshape(merged).narrow(-3, 0, rows).narrow(-2, 0, columns);
  }

  // Each block's memory side by side: x [..., block_rows, block_columns, P, Dh] -> [..., block_rows, block_columns, K P, Dh]
  // (block (I, J) gets blocks (I + up, J + across), zeros outside the grid)
  Tensor gather_memory(const Tensor& x, const std::vector<Offset>& offsets) const {
    std::vector<Tensor> parts;
    for (const Offset& o : offsets) parts.push_back(look(look(x, -4, o.rows), -3, o.columns));
    return concat(parts, -2);
  }

  // uint8 [block_rows, block_columns, P, K P]: 1 where a query may not see a key of its memory
  // (not local_sees, or padding). Every query, padding included, sees at least one real key.
  core::Tensor hidden(const std::vector<Offset>& offsets, Device device) const {
    const int64_t p = block_size(), k = static_cast<int64_t>(offsets.size());
    std::vector<uint8_t> flags;
    flags.reserve(static_cast<size_t>(block_rows * block_columns * p * k * p));
    for (int64_t bi = 0; bi < block_rows; ++bi) {
      for (int64_t bj = 0; bj < block_columns; ++bj) {
        for (int64_t query = 0; query < p; ++query) {
          const int64_t i = bi * blocks.rows + query / blocks.columns, j = bj * blocks.columns + query % blocks.columns;
          for (const Offset& o : offsets) {
            for (int64_t key = 0; key < p; ++key) {
              const int64_t r = (bi + o.rows) * blocks.rows + key / blocks.columns;
              const int64_t c = (bj + o.columns) * blocks.columns + key % blocks.columns;
              const bool real = r >= 0 && r < rows && c >= 0 && c < columns;
              flags.push_back(real && local_sees(blocks, i, j, r, c) ? 0 : 1);
            }
          }
        }
      }
    }
    return core::from_vector(flags, {block_rows, block_columns, p, k * p}, device);
  }

  LocalBlocks blocks;
  int64_t rows, columns, block_rows, block_columns;
};

}  // namespace

bool local_sees(const LocalBlocks& blocks, int64_t i, int64_t j, int64_t r, int64_t c) {
  const bool not_after = r < i || (r == i && c <= j);
  const int64_t up = i / blocks.rows - r / blocks.rows, across = c / blocks.columns - j / blocks.columns;
  return not_after && (up == 0 || up == 1) && across >= -1 && across <= 1;
}

LocalCost local_cost(const LocalBlocks& blocks, int64_t grid_rows, int64_t grid_columns) {
  const BlockGrid grid(blocks, grid_rows, grid_columns);
  const double padded = static_cast<double>(grid.block_rows * grid.block_columns * grid.block_size());
  const double keys = padded * static_cast<double>(grid.memory().size()) / (static_cast<double>(grid_rows) * static_cast<double>(grid_columns));
  return {.keys_per_position = keys, .scores_per_position = keys * static_cast<double>(grid.block_size())};
}

int64_t local_first_visible(const LocalBlocks& blocks, int64_t columns_of_grid, int64_t t) {
  const int64_t i = t / columns_of_grid, j = t % columns_of_grid;
  const int64_t first_row = std::max<int64_t>(i / blocks.rows - 1, 0) * blocks.rows;
  const int64_t first_column = std::max<int64_t>(j / blocks.columns - 1, 0) * blocks.columns;
  return first_row * columns_of_grid + first_column;
}

Tensor local_attention(const Tensor& q, const Tensor& k, const Tensor& v, const LocalBlocks& blocks) {
  if (q.dim() < 3 || q.shape() != k.shape() || q.shape() != v.shape() || q.numel() == 0) {
    throw Error("local_attention", "q, k and v must share one non-empty shape [..., R, C, Dh], got ", q.shape(), ", ", k.shape(),
                " and ", v.shape());
  }
  if (blocks.rows < 1 || blocks.columns < 1) {
    throw Error("local_attention", "blocks must be at least 1 x 1, got ", blocks.rows, " x ", blocks.columns);
  }
  const BlockGrid grid(blocks, q.size(-3), q.size(-2));
  const std::vector<Offset> memory = grid.memory();
  // (the queries scaled by 1/sqrt(Dh) before the product: K P times fewer numbers than the scores)
  const Tensor queries = mul(grid.to_blocks(q), 1 / std::sqrt(static_cast<double>(q.size(-1))));  // [..., I, J, P, Dh]
  const Tensor keys = grid.gather_memory(grid.to_blocks(k), memory);    // [..., I, J, K P, Dh]
  const Tensor values = grid.gather_memory(grid.to_blocks(v), memory);  // [..., I, J, K P, Dh]
  // scores = q k^T / sqrt(Dh), hidden keys at -inf: [..., I, J, P, K P]
  Tensor scores = matmul(queries, keys.transpose(-1, -2));
  scores = masked_fill(scores, Tensor(grid.hidden(memory, q.device())), -std::numeric_limits<double>::infinity());
  return grid.from_blocks(matmul(softmax(scores, -1), values));  // [..., I, J, P, Dh] -> [..., R, C, Dh]
}

}  // namespace axiom::nn
