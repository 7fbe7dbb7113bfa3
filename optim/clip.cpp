// clip_grad_norm (clip.h).
#include "optim/clip.h"

#include <cmath>

#include "core/launch.h"
#include "autograd/internal.h"

namespace axiom::optim {

double clip_grad_norm(const NamedParameters& parameters, double max_norm) {
  if (!(max_norm > 0) || !std::isfinite(max_norm)) {
    throw Error("clip_grad_norm", "max_norm must be finite and > 0, got ", max_norm);
  }
  // norm^2 = sum over every gradient of sum(g^2), in double whatever the gradients' dtype, added
  // up where the gradients are: one read of one number (on a GPU, one wait, not one a parameter)
  core::Tensor sum_of_squares;
  for (const auto& [name, p] : parameters) {
    if (!p.grad().defined()) continue;
    const core::Tensor g64 = core_tensor(p.grad()).to(Dtype::float64);
    const core::Tensor squares = core::sum(core::mul(g64, g64));
    sum_of_squares = sum_of_squares.defined() ? core::add(sum_of_squares, squares) : squares;
  }
  const double norm = sum_of_squares.defined() ? std::sqrt(sum_of_squares.item()) : 0.0;
  if (!std::isfinite(norm) || norm <= max_norm) return norm;
  // g = g * max_norm / (norm + 1e-6), written into the gradient's own buffer
  const double scale = max_norm / (norm + 1e-6);
  for (const auto& [name, p] : parameters) {
    if (!p.grad().defined()) continue;
    const core::Tensor& g = core_tensor(p.grad());
    core::copy_into(core::mul(g, scale), g);
  }
  return norm;
}

}  // namespace axiom::optim
