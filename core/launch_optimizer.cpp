// Op functions of the optimizer family: Adam's (AdamW's) fused step, for one parameter or for many
// in one call a device (kernels: core/cpu/optimizer.cpp, core/cuda/optimizer.cu).
#include <algorithm>

#include "core/backend.h"
#include "core/checks.h"
#include "core/error.h"
#include "core/launch.h"

namespace axiom::core {

namespace {

void check_adam_update(const char* op, const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                       const Tensor& exp_avg_sq, const AdamStep& step) {
  const std::pair<const Tensor*, const char*> operands[] = {
      {&param, "param"}, {&grad, "grad"}, {&exp_avg, "exp_avg"}, {&exp_avg_sq, "exp_avg_sq"}};
  for (const auto& [t, what] : operands) {
    checks::defined(op, *t, what);
    checks::same_device(op, param, *t);
    checks::same_dtype(op, param, *t);
    if (t->shape() != param.shape()) throw Error(op, what, " has shape ", t->shape(), ", param ", param.shape());
    if (t != &grad && !t->is_contiguous()) throw Error(op, what, " must be contiguous (it is updated in place)");
  }
  checks::floating(op, param);
  if (!(step.beta1 >= 0 && step.beta1 < 1) || !(step.beta2 >= 0 && step.beta2 < 1)) {
    throw Error(op, "betas must be in [0, 1), got ", step.beta1, " and ", step.beta2);
  }
  if (!(step.eps > 0)) throw Error(op, "eps must be > 0, got ", step.eps);
  if (step.step < 1) throw Error(op, "step must be 1 or more, got ", step.step);
}

void mark_adam_written(const AdamUpdate& u) {  // (autograd's versions)
  for (const Tensor* written : {&u.param, &u.exp_avg, &u.exp_avg_sq}) written->storage()->mark_written();
}

}  // namespace

void adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                 const AdamStep& step) {
  check_adam_update("adam_update", param, grad, exp_avg, exp_avg_sq, step);
  backend(param.device()).adam_update(param, grad.contiguous(), exp_avg, exp_avg_sq, step);
  mark_adam_written({param, grad, exp_avg, exp_avg_sq, step});
}

void adam_update_many(const std::vector<AdamUpdate>& updates) {
  if (updates.empty()) return;
  for (const AdamUpdate& u : updates)
    check_adam_update("adam_update_many", u.param, u.grad, u.exp_avg, u.exp_avg_sq, u.step);
  // one call per device and dtype, in the order of `updates`
  std::vector<std::vector<AdamUpdate>> groups;
  for (const AdamUpdate& u : updates) {
    auto same_kind = [&](const std::vector<AdamUpdate>& g) {
      return g.front().param.device() == u.param.device() && g.front().param.dtype() == u.param.dtype();
    };
    auto group = std::find_if(groups.begin(), groups.end(), same_kind);
    if (group == groups.end()) group = groups.insert(groups.end(), std::vector<AdamUpdate>{});
    group->push_back({u.param, u.grad.contiguous(), u.exp_avg, u.exp_avg_sq, u.step});
  }
  for (const std::vector<AdamUpdate>& group : groups) backend(group.front().param.device()).adam_update_many(group);
  for (const AdamUpdate& u : updates) mark_adam_written(u);
}

}  // namespace axiom::core
