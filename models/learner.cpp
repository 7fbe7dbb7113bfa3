#include "models/learner.h"

#include "core/error.h"

namespace axiom::models {

void Learner::set_checkpoint_blocks(int64_t blocks) {
  if (blocks != 0)
    throw Error(name(), "recomputes no blocks in the backward pass (checkpoint_blocks must be 0, got ", blocks, ")");
}

}  // namespace axiom::models
