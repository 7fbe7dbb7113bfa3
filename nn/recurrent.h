// What the recurrent layers (LSTM, GRU) share: their gate projections, started as PyTorch starts
// them, every weight and bias uniform in +-1/sqrt(hidden) whatever the projection's fan-in.
#pragma once

#include <cmath>
#include <memory>

#include "core/error.h"
#include "nn/layers.h"

namespace axiom::nn {

// A Dense layer from `in` features to `gates` * `hidden` (one block of `hidden` per gate), for the
// recurrent layer `op`; an Error names `op` when a size is not positive.
inline std::shared_ptr<Dense> gate_projection(const char* op, int64_t in, int64_t hidden, int64_t gates, bool bias,
                                              Generator& gen) {
  if (in <= 0 || hidden <= 0) throw Error(op, "feature sizes must be positive, got ", in, " and ", hidden);
  const double scale =
      std::sqrt(static_cast<double>(in) / static_cast<double>(hidden));  // Dense draws +-scale/sqrt(in)
  return std::make_shared<Dense>(in, gates * hidden, gen, DenseOptions{.bias = bias, .init_scale = scale});
}

}  // namespace axiom::nn
