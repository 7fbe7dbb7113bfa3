// BatchShare: the random draws of one process's share of a data-parallel batch.
#pragma once

#include <cstdint>

#include "../random.h"

namespace axiom::core {

// Data parallelism draws what one process would. While a BatchShare lives, every draw from `gen`
// is taken to be for examples [first, first + count) of a batch of `total` examples: a draw of n
// values (n / count per example, example-major: a tensor whose first axis is the batch) gets the
// values that the same draw for the whole batch would give those examples, and advances the
// generator as far as the whole batch's draw would. So N processes, each with its own share of a
// batch, draw between them exactly the dropout masks and channels of one process, and the
// generator's offset after a step (which a checkpoint saves) does not depend on N.
//   whole batch:  counters offset + [0, total * k)        (k values per example)
//   this share:   counters offset + [first * k, (first + count) * k);   offset += total * k
class BatchShare {
 public:
  BatchShare(Generator& gen, int64_t first, int64_t count, int64_t total);
  ~BatchShare() { gen_.slice_ = {}; }
  BatchShare(const BatchShare&) = delete;
  BatchShare& operator=(const BatchShare&) = delete;

 private:
  Generator& gen_;
};

}  // namespace axiom::core
