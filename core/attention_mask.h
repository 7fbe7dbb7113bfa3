// Which keys each query of a line may see, for attention (core/launch.h, autograd/ops.h). A mask is
// one of three kinds:
//
//   all      every query sees every key of its line (unmasked attention)
//   causal   query i sees keys 0..i, itself included
//   blocks   a block pattern, made by a mask producer (local attention: nn/local.h local_mask):
//            the line's queries are cut into blocks of P; every block has a memory of M key
//            positions and a table saying which of them each of its queries sees.
//
//     block b:  queries[b]  = [q_0 .. q_P-1]    positions along the line (-1: padding, no query)
//               keys[b]     = [k_0 .. k_M-1]    positions along the line (-1: no key)
//               visible[b]  = [P, M]            1 where query q_p sees key k_m
//
// The fused kernels work block by block and never touch a key outside a block's memory, so a
// pattern whose memories are short (local attention's M is a few blocks, not the whole line) costs
// O(L M) instead of O(L^2). Every position must be the query of one block, and see at least one
// key (AttentionMask::blocks checks it).
// A mask is cheap to copy: the pattern is shared.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace axiom::core {

struct BlockPattern {
  int64_t length = 0;            // L: the line the pattern is for
  int64_t block_queries = 0;     // P
  int64_t block_keys = 0;        // M
  std::vector<int64_t> queries;  // [blocks, P]
  std::vector<int64_t> keys;     // [blocks, M]
  std::vector<uint8_t> visible;  // [blocks, P, M]
  int64_t blocks() const { return block_queries == 0 ? 0 : static_cast<int64_t>(queries.size()) / block_queries; }
};

class AttentionMask {
 public:
  enum class Kind { all, causal, blocks };
  static AttentionMask all() { return AttentionMask(Kind::all); }
  static AttentionMask causal() { return AttentionMask(Kind::causal); }
  static AttentionMask causal_if(bool causal) { return AttentionMask(causal ? Kind::causal : Kind::all); }
  // A checked block pattern (an Error names `name` and what is wrong: sizes, positions outside
  // [-1, L), a position in no block's queries or in two, a query that sees nothing).
  static AttentionMask blocks(BlockPattern pattern, const char* name);

  Kind kind() const { return kind_; }
  const BlockPattern& pattern() const { return *pattern_; }  // kind() == blocks only
  // The mask written out for a line of `length`: [L, L], 1 where query i sees key j (for the
  // composite path and the tests; an Error if a block pattern was made for another length, or if
  // length is negative or over kMaxTableLength: the table would not fit in memory).
  std::vector<uint8_t> table(int64_t length) const;
  static constexpr int64_t kMaxTableLength = int64_t{1} << 16;  // a table of 4 GiB

 private:
  explicit AttentionMask(Kind kind) : kind_(kind) {}
  Kind kind_;
  std::shared_ptr<const BlockPattern> pattern_;
};

}  // namespace axiom::core
