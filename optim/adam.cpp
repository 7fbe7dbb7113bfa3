// Adam and AdamW (adam.h). One parameter's update at step t (1, 2, ...), with g its gradient,
// lambda the weight decay, m and v the moving averages of g and g^2 (both 0 before step 1):
//
//   p = p - lr * lambda * p                  (AdamW: decoupled weight decay)
//   g = g + lambda * p                       (Adam: L2 weight decay)
//   m = beta1 * m + (1 - beta1) * g
//   v = beta2 * v + (1 - beta2) * g^2
//   m_hat = m / (1 - beta1^t),  v_hat = v / (1 - beta2^t)      (bias correction: m and v start at 0)
//   p = p - lr * m_hat / (sqrt(v_hat) + eps)
//
// The last line is computed as PyTorch does, with the corrections on scalars rather than tensors:
//   p = p - (lr / (1 - beta1^t)) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
#include "optim/adam.h"

#include <cmath>

#include "autograd/factory.h"
#include "core/factory.h"
#include "core/launch.h"
#include "autograd/internal.h"

namespace axiom::optim {

Adam::Adam(NamedParameters parameters, AdamOptions options) : Adam("Adam", std::move(parameters), options) {}

Adam::Adam(const char* name, NamedParameters parameters, AdamOptions options)
    : Optimizer(name, std::move(parameters), options.lr) {
  check(options);
  options_ = options;
}

AdamW::AdamW(NamedParameters parameters, AdamWOptions options)
    : Adam("AdamW", std::move(parameters),
           AdamOptions{.lr = options.lr,
                       .betas = options.betas,
                       .eps = options.eps,
                       .weight_decay = options.weight_decay,
                       .decoupled_weight_decay = true}) {}

void Adam::check(const AdamOptions& o) const {
  const auto [beta1, beta2] = o.betas;
  if (!(beta1 >= 0 && beta1 < 1)) throw Error(name(), "beta1 must be in [0, 1), got ", beta1);
  if (!(beta2 >= 0 && beta2 < 1)) throw Error(name(), "beta2 must be in [0, 1), got ", beta2);
  if (!(o.eps > 0) || !std::isfinite(o.eps)) throw Error(name(), "eps must be finite and > 0, got ", o.eps);
  check_non_negative("weight_decay", o.weight_decay);
  if (name() == "AdamW" && !o.decoupled_weight_decay) throw Error(name(), "AdamW's weight decay is always decoupled");
}

AdamOptions Adam::options() const {
  AdamOptions o = options_;
  o.lr = lr();
  return o;
}

void Adam::update(const Tensor& param, const Tensor& grad, ParamState& state) { update_all({{param, grad, &state}}); }

// One fused pass over each parameter and its two moving averages, all of them at once
// (core::adam_update_many; the formula is core/adam_step.h's, the one at the top of this file).
void Adam::update_all(const std::vector<PendingUpdate>& updates) {
  const AdamOptions& o = options_;
  std::vector<core::AdamUpdate> fused;
  for (const PendingUpdate& u : updates) {
    Tensor& m = u.state->buffers["exp_avg"];
    Tensor& v = u.state->buffers["exp_avg_sq"];
    if (!m.defined()) m = zeros_like(u.param), v = zeros_like(u.param);
    // the fused update works in place on the numbers of contiguous memory; a parameter that is a
    // strided view is updated in a copy, then written back through the view
    const core::Tensor& param = core_tensor(u.param);
    const core::Tensor p = param.is_contiguous() ? param : param.contiguous();
    fused.push_back({p,
                     core_tensor(u.grad),
                     core_tensor(m),
                     core_tensor(v),
                     {.lr = lr(),
                      .beta1 = o.betas.first,
                      .beta2 = o.betas.second,
                      .eps = o.eps,
                      .weight_decay = o.weight_decay,
                      .decoupled_weight_decay = o.decoupled_weight_decay,
                      .step = u.state->step + 1}});
  }
  core::adam_update_many(fused);  // checks every update before it changes any
  for (size_t i = 0; i < updates.size(); ++i) {
    ++updates[i].state->step;
    if (!updates[i].param.is_contiguous()) core::copy_into(fused[i].param, core_tensor(updates[i].param));
  }
}

Hyperparameters Adam::hyperparameters() const {
  return {{"beta1", options_.betas.first},
          {"beta2", options_.betas.second},
          {"eps", options_.eps},
          {"weight_decay", options_.weight_decay},
          {"decoupled_weight_decay", options_.decoupled_weight_decay ? 1.0 : 0.0}};
}

void Adam::set_hyperparameters(const Hyperparameters& values) {
  AdamOptions o = options_;
  o.betas = {hyperparameter(values, "beta1"), hyperparameter(values, "beta2")};
  o.eps = hyperparameter(values, "eps");
  o.weight_decay = hyperparameter(values, "weight_decay");
  o.decoupled_weight_decay = hyperparameter(values, "decoupled_weight_decay") != 0;
  check(o);
  options_ = o;
}

std::vector<std::string> Adam::buffer_names(const Hyperparameters&) const { return {"exp_avg", "exp_avg_sq"}; }

}  // namespace axiom::optim
