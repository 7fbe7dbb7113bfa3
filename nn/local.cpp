#include "nn/local.h"

#include <algorithm>
#include <array>
#include <map>
#include <mutex>
#include <vector>

#include "core/error.h"

namespace axiom::nn {

namespace {

struct Offset {
  int64_t rows, columns;  // a memory block's place, in blocks, from the query block
};

// The grid cut into blocks: R x C positions, padded up to block_rows x block_columns blocks of
// rows x columns. A block taller or wider than the grid is cut to it: every query sees the same
// keys (local_sees divides positions inside the grid alike), without padding up to the block.
struct BlockGrid {
  BlockGrid(const LocalBlocks& wanted, int64_t grid_rows, int64_t grid_columns)
      : blocks{.rows = std::min(wanted.rows, grid_rows), .columns = std::min(wanted.columns, grid_columns)},
        rows(grid_rows),
        columns(grid_columns),
        block_rows((grid_rows + blocks.rows - 1) / blocks.rows),
        block_columns((grid_columns + blocks.columns - 1) / blocks.columns) {}
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

  // The raster position of the n-th position (in raster order within the block) of block
  // (block_row, block_column), or -1 where that is padding outside the grid.
  int64_t position(int64_t block_row, int64_t block_column, int64_t n) const {
    const int64_t r = block_row * blocks.rows + n / blocks.columns,
                  c = block_column * blocks.columns + n % blocks.columns;
    return r >= 0 && r < rows && c >= 0 && c < columns ? r * columns + c : -1;
  }

  // Every block's queries, its memory (the blocks at `offsets`, side by side) and which of those
  // keys each query sees (local_sees).
  core::BlockPattern pattern() const {
    const std::vector<Offset> offsets = memory();
    const int64_t p = block_size(), m = static_cast<int64_t>(offsets.size()) * p;
    core::BlockPattern b{
        .length = rows * columns, .block_queries = p, .block_keys = m, .queries = {}, .keys = {}, .visible = {}};
    for (int64_t bi = 0; bi < block_rows; ++bi) {
      for (int64_t bj = 0; bj < block_columns; ++bj) {
        const size_t first_key = b.keys.size();
        for (int64_t n = 0; n < p; ++n) b.queries.push_back(position(bi, bj, n));
        for (const Offset& o : offsets) {
          for (int64_t n = 0; n < p; ++n) b.keys.push_back(position(bi + o.rows, bj + o.columns, n));
        }
        for (int64_t n = 0; n < p; ++n) {
          const int64_t query = b.queries.end()[-p + n];
          for (int64_t k = 0; k < m; ++k) {
            const int64_t key = b.keys[first_key + static_cast<size_t>(k)];
            b.visible.push_back(query >= 0 && key >= 0 &&
                                local_sees(blocks, query / columns, query % columns, key / columns, key % columns));
          }
        }
      }
    }
    return b;
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

int64_t local_first_visible(const LocalBlocks& blocks, int64_t columns_of_grid, int64_t t) {
  const int64_t i = t / columns_of_grid, j = t % columns_of_grid;
  const int64_t first_row = std::max<int64_t>(i / blocks.rows - 1, 0) * blocks.rows;
  const int64_t first_column = std::max<int64_t>(j / blocks.columns - 1, 0) * blocks.columns;
  return first_row * columns_of_grid + first_column;
}

AttentionMask local_mask(const LocalBlocks& blocks, int64_t grid_rows, int64_t grid_columns) {
  if (blocks.rows < 1 || blocks.columns < 1 || grid_rows < 1 || grid_columns < 1) {
    throw Error("local_mask", "blocks and the grid must be at least 1 x 1, got blocks ", blocks.rows, " x ",
                blocks.columns, " on a grid ", grid_rows, " x ", grid_columns);
  }
  const BlockGrid grid(blocks, grid_rows, grid_columns);  // its table: [blocks, P, K P] flags
  const double entries = static_cast<double>(grid.block_rows) * static_cast<double>(grid.block_columns) *
                         static_cast<double>(grid.block_size()) *
                         static_cast<double>(grid.block_size() * grid.memory().size());
  if (entries > kMaxMaskEntries) {
    throw Error("local_mask", "blocks of ", blocks.rows, " x ", blocks.columns, " on a grid ", grid_rows, " x ",
                grid_columns, " make a mask of ", entries, " entries, over the ", kMaxMaskEntries, " it may have");
  }
  // Made once per shape (every layer of a model and every step share it).
  static std::mutex guard;
  static std::map<std::array<int64_t, 4>, AttentionMask> made;
  const std::array<int64_t, 4> key{blocks.rows, blocks.columns, grid_rows, grid_columns};
  const std::lock_guard<std::mutex> lock(guard);
  auto found = made.find(key);
  if (found == made.end()) {
    found = made.emplace(key, AttentionMask::blocks(grid.pattern(), "local_mask")).first;
  }
  return found->second;
}

}  // namespace axiom::nn
