#include "core/attention_mask.h"

#include "core/error.h"

namespace axiom::core {

namespace {

// Every position in [-1, length): -1 is "none".
void check_positions(const char* name, const char* what, const std::vector<int64_t>& positions, int64_t length) {
  for (int64_t p : positions) {
    if (p < -1 || p >= length)
      throw Error(name, "a block's ", what, " position ", p, " is outside the line of ", length);
  }
}

// Every position of the line a query once, and every query sees at least one real key.
void check_queries(const char* name, const BlockPattern& b) {
  std::vector<uint8_t> seen(static_cast<size_t>(b.length), 0);
  for (int64_t block = 0; block < b.blocks(); ++block) {
    for (int64_t p = 0; p < b.block_queries; ++p) {
      const int64_t query = b.queries[static_cast<size_t>(block * b.block_queries + p)];
      if (query < 0) continue;
      if (seen[static_cast<size_t>(query)]++) throw Error(name, "query ", query, " is in two blocks");
      bool sees_a_key = false;
      for (int64_t m = 0; m < b.block_keys; ++m) {
        const size_t at = static_cast<size_t>((block * b.block_queries + p) * b.block_keys + m);
        sees_a_key = sees_a_key || (b.visible[at] && b.keys[static_cast<size_t>(block * b.block_keys + m)] >= 0);
      }
      if (!sees_a_key) throw Error(name, "query ", query, " sees no key");
    }
  }
  for (int64_t position = 0; position < b.length; ++position) {
    if (!seen[static_cast<size_t>(position)]) throw Error(name, "position ", position, " is in no block's queries");
  }
}

}  // namespace

AttentionMask AttentionMask::blocks(BlockPattern pattern, const char* name) {
  const BlockPattern& b = pattern;
  const int64_t blocks = b.blocks();
  if (b.length < 1 || b.block_queries < 1 || b.block_keys < 1 ||
      static_cast<int64_t>(b.queries.size()) != blocks * b.block_queries ||
      static_cast<int64_t>(b.keys.size()) != blocks * b.block_keys ||
      static_cast<int64_t>(b.visible.size()) != blocks * b.block_queries * b.block_keys) {
    throw Error(
        name,
        "a block pattern needs L, P, M >= 1, queries [blocks, P], keys [blocks, M] and visible [blocks, P, M]; got L ",
        b.length, ", P ", b.block_queries, ", M ", b.block_keys, " and ", b.queries.size(), ", ", b.keys.size(),
        " and ", b.visible.size(), " entries");
  }
  check_positions(name, "query", b.queries, b.length);
  check_positions(name, "key", b.keys, b.length);
  check_queries(name, b);
  AttentionMask mask(Kind::blocks);
  mask.pattern_ = std::make_shared<const BlockPattern>(std::move(pattern));
  return mask;
}

std::vector<uint8_t> AttentionMask::table(int64_t length) const {
  if (length < 0 || length > kMaxTableLength) {
    throw Error("attention", "a mask's table is for lines of 0 to ", kMaxTableLength, " positions, got ", length);
  }
  const size_t n = static_cast<size_t>(length);
  std::vector<uint8_t> sees(n * n, kind_ == Kind::all ? 1 : 0);
  if (kind_ == Kind::causal) {
    for (size_t i = 0; i < n; ++i) {
      for (size_t j = 0; j <= i; ++j) sees[i * n + j] = 1;
    }
  }
  if (kind_ != Kind::blocks) return sees;
  const BlockPattern& b = *pattern_;
  if (b.length != length)
    throw Error("attention", "the mask's block pattern is for lines of ", b.length, ", not ", length);
  for (int64_t block = 0; block < b.blocks(); ++block) {
    for (int64_t p = 0; p < b.block_queries; ++p) {
      const int64_t query = b.queries[static_cast<size_t>(block * b.block_queries + p)];
      for (int64_t m = 0; m < b.block_keys && query >= 0; ++m) {
        const int64_t key = b.keys[static_cast<size_t>(block * b.block_keys + m)];
        if (key >= 0 && b.visible[static_cast<size_t>((block * b.block_queries + p) * b.block_keys + m)]) {
          sees[static_cast<size_t>(query) * n + static_cast<size_t>(key)] = 1;
        }
      }
    }
  }
  return sees;
}

}  // namespace axiom::core
