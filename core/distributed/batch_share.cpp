#include "core/distributed/batch_share.h"

#include "core/error.h"

namespace axiom::core {

BatchShare::BatchShare(Generator& gen, int64_t first, int64_t count, int64_t total) : gen_(gen) {
  if (count <= 0 || first < 0 || first + count > total) {
    throw Error("BatchShare", "examples [", first, ", ", first + count, ") are not a share of a batch of ", total);
  }
  if (gen.slice_.count != 0) throw Error("BatchShare", "the generator already draws for a share of a batch");
  gen_.slice_ = {first, count, total};
}

}  // namespace axiom::core
