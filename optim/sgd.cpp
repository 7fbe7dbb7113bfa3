// SGD (sgd.h). One parameter's update, with g its gradient, mu the momentum, tau the dampening,
// lambda the weight decay and b the momentum buffer (torch.optim.SGD's documented algorithm):
//
//   g = g + lambda * p                        (if lambda != 0)
//   b = g                                     (first step)
//   b = mu * b + (1 - tau) * g                (later steps)          } if mu != 0
//   g = g + mu * b   (Nesterov)   or   g = b  (classical)           }
//   p = p - lr * g
#include "optim/sgd.h"

#include "autograd/ops.h"
#include "core/launch.h"

namespace axiom::optim {

SGD::SGD(NamedParameters parameters, SGDOptions options) : Optimizer("SGD", std::move(parameters), options.lr) {
  check(options);
  options_ = options;
}

void SGD::check(const SGDOptions& o) const {
  check_non_negative("momentum", o.momentum);
  if (!(o.dampening >= 0 && o.dampening <= 1)) throw Error(name(), "dampening must be in [0, 1], got ", o.dampening);
  check_non_negative("weight_decay", o.weight_decay);
  if (o.nesterov && (o.momentum <= 0 || o.dampening != 0)) {
    throw Error(name(), "nesterov momentum needs momentum > 0 and dampening 0, got momentum ", o.momentum,
                " and dampening ", o.dampening);
  }
}

SGDOptions SGD::options() const {
  SGDOptions o = options_;
  o.lr = lr();
  return o;
}

void SGD::update(const Tensor& param, const Tensor& grad, ParamState& state) {
  const SGDOptions& o = options_;
  state.step += 1;
  Tensor g = grad;
  // g = g + lambda * p
  if (o.weight_decay != 0) g = add(g, mul(param, o.weight_decay));
  if (o.momentum != 0) {
    Tensor& b = state.buffers["momentum_buffer"];
    if (!b.defined()) {
      b = mul(g, 1.0);  // b = g, copied into a buffer of its own (the gradient may be scaled in place later)
    } else {
      // b = mu b + (1 - tau) g   (without the multiplication by 1 when tau = 0, the default)
      b = add(mul(b, o.momentum), o.dampening == 0 ? g : mul(g, 1 - o.dampening));
    }
    g = o.nesterov ? add(g, mul(b, o.momentum)) : b;  // g = g + mu b  or  g = b
  }
  // p = p - lr * g
  copy_into(sub(param, mul(g, lr())), param);
}

Hyperparameters SGD::hyperparameters() const {
  return {{"momentum", options_.momentum},
          {"dampening", options_.dampening},
          {"weight_decay", options_.weight_decay},
          {"nesterov", options_.nesterov ? 1.0 : 0.0}};
}

void SGD::set_hyperparameters(const Hyperparameters& values) {
  SGDOptions o = options_;
  o.momentum = hyperparameter(values, "momentum");
  o.dampening = hyperparameter(values, "dampening");
  o.weight_decay = hyperparameter(values, "weight_decay");
  o.nesterov = hyperparameter(values, "nesterov") != 0;
  check(o);
  options_ = o;
}

std::vector<std::string> SGD::buffer_names(const Hyperparameters& values) const {
  if (hyperparameter(values, "momentum") != 0) return {"momentum_buffer"};
  return {};
}

}  // namespace axiom::optim
