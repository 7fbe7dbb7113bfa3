// clip_grad_norm (clip.h).
#include "optim/clip.h"

#include <cmath>

#include "core/factory.h"
#include "core/launch.h"
#include "autograd/internal.h"

namespace axiom::optim {

core::Tensor gradient_sum_of_squares(const NamedParameters& parameters) {
  core::Tensor sum_of_squares;
  for (const auto& [name, p] : parameters) {
    if (!p.grad().defined()) continue;
    const core::Tensor g64 = core_tensor(p.grad()).to(Dtype::float64);
    const core::Tensor squares = core::sum(core::mul(g64, g64)).reshape({1});
    sum_of_squares = sum_of_squares.defined() ? core::add(sum_of_squares, squares) : squares;
  }
  if (sum_of_squares.defined()) return sum_of_squares;
  return core::zeros({1}, Dtype::float64, parameters.empty() ? Device::cpu() : parameters[0].second.device());
}

double clip_grad_norm(const NamedParameters& parameters, double max_norm) {
  return clip_grad_norm(parameters, max_norm, gradient_sum_of_squares(parameters));
}

double clip_grad_norm(const NamedParameters& parameters, double max_norm, const core::Tensor& sum_of_squares) {
  if (!(max_norm > 0) || !std::isfinite(max_norm)) {
    throw Error("clip_grad_norm", "max_norm must be finite and > 0, got ", max_norm);
  }
  if (!sum_of_squares.defined() || sum_of_squares.dtype() != Dtype::float64 || sum_of_squares.shape() != Shape{1}) {
    throw Error("clip_grad_norm", "the gradients' sum of squares must be float64 [1] (gradient_sum_of_squares), got ",
                sum_of_squares.defined() ? sum_of_squares.dtype() : Dtype::float64, " ",
                sum_of_squares.defined() ? sum_of_squares.shape() : Shape{});
  }
  // one read of one number (on a GPU, one wait, not one a parameter)
  const double norm = std::sqrt(sum_of_squares.to(Device::cpu()).at({0}));
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
