// Gradient clipping by the global norm, as torch.nn.utils.clip_grad_norm_ does it.
#pragma once

#include "optimizer.h"

namespace axiom::optim {

// The L2 norm of all the gradients together, ||(g_1, ..., g_n)||_2 = sqrt(sum_i sum(g_i^2)),
// computed in double; parameters without a gradient are skipped. When it exceeds max_norm (> 0),
// every gradient is scaled in place by max_norm / (norm + 1e-6), so that the norm becomes (just
// under) max_norm; otherwise the gradients are left untouched. Returns the norm before clipping.
//
// A non-finite norm (a NaN or infinite gradient somewhere) is returned as it is and the gradients
// are left untouched (PyTorch would scale them all by NaN): check the result and skip the step,
//   if (!std::isfinite(clip_grad_norm(params, 1.0))) { opt.zero_grad(); continue; }
double clip_grad_norm(const NamedParameters& parameters, double max_norm);

// The same, given the gradients' sum of squares (gradient_sum_of_squares) already computed.
double clip_grad_norm(const NamedParameters& parameters, double max_norm, const core::Tensor& sum_of_squares);

// sum_i sum(g_i^2) over the gradients that are defined, float64 [1], where the gradients are (0
// where none is): the global norm squared, not yet read back, so that a training step can read it
// together with its loss in one copy.
core::Tensor gradient_sum_of_squares(const NamedParameters& parameters);

}  // namespace axiom::optim
