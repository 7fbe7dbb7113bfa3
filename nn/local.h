// Local self-attention (Parmar et al., 2018, the Image Transformer, section 3.2): instead of every
// position before it, a query attends only to a neighbourhood, so that a layer costs O(n m)
// instead of O(n^2) for n positions and neighbourhoods of m.
//
// The positions form a grid [R, C] in raster order (an image's rows and columns; for 1-D local
// attention, one row of R*C positions). The grid is cut into query blocks of `rows` x `columns`
// positions; a query block's memory is itself and the blocks around it that the raster order has
// (partly) reached: the block to its left and to its right, and the three blocks above.
//
//      +-----+-----+-----+        Q: the query block; M: its memory, with Q.
//      |  M  |  M  |  M  |        A query at (i, j) attends to the positions (r, c) of M and Q
//      +-----+-----+-----+        that come before it in raster order, itself included:
//      |  M  |  Q  |  M  |          r < i, or r == i and c <= j.
//      +-----+-----+-----+
//
// With rows == 1 on a one-row grid this is the paper's 1-D local attention (a block attends to
// itself and the block before it); with rows > 1 on an image it is its 2-D local attention with
// memory flanks as wide and as high as the block. Unlike the paper's 2-D model, the positions keep
// the image's raster order (so every image model here factorizes the same way); a query near a
// block's top sees the part of its block row that came before it.
//
// The attention weights:  softmax_{(r, c) in memory, before (i, j)} (q_ij . k_rc / sqrt(Dh)).
#pragma once

#include "../autograd/ops.h"

namespace axiom::nn {

struct LocalBlocks {
  int64_t rows = 0;     // a query block's height (1 for 1-D blocks); 0: not local
  int64_t columns = 0;  // a query block's width (a 1-D block's length)
  bool active() const { return rows > 0; }
};

// Whether the query at grid position (i, j) sees the key at (r, c): (r, c) is in the memory of
// (i, j)'s block and not after (i, j) in raster order. The rule that every path below follows.
bool local_sees(const LocalBlocks& blocks, int64_t i, int64_t j, int64_t r, int64_t c);

// The mask of causal local attention on a grid [R, C], for attention (autograd/ops.h) along one
// line of its R*C positions in raster order: a block pattern (core/attention_mask.h) whose query
// blocks are the grid's blocks and whose memories are their neighbourhoods, so that the fused
// kernel computes [P, K P] scores per block (K <= 6 memory blocks) instead of [R C, R C]. Blocks
// larger than the grid are cut to it. Made once per shape and shared. An Error for a mask of over
// kMaxMaskEntries flags (a grid of millions of positions).
inline constexpr double kMaxMaskEntries = double(int64_t{1} << 28);
AttentionMask local_mask(const LocalBlocks& blocks, int64_t grid_rows, int64_t grid_columns);

// The first raster position that a query at raster position t of a grid `columns_of_grid` wide can
// see: the positions it attends to lie in [first, t] (a sampler's step narrows its cache to them).
int64_t local_first_visible(const LocalBlocks& blocks, int64_t columns_of_grid, int64_t t);

}  // namespace axiom::nn
