// SGD: stochastic gradient descent with optional momentum (classical or Nesterov) and L2 weight
// decay, exactly as torch.optim.SGD computes it.
#pragma once

#include "optimizer.h"

namespace axiom::optim {

// PyTorch's defaults. Nesterov momentum needs momentum > 0 and dampening 0.
struct SGDOptions {
  double lr = 1e-3;
  double momentum = 0;
  double dampening = 0;
  double weight_decay = 0;  // L2: weight_decay * p is added to the gradient
  bool nesterov = false;
};

class SGD : public Optimizer {
 public:
  //   axiom::optim::SGD opt(params, {.lr = 0.1, .momentum = 0.9, .nesterov = true});
  SGD(NamedParameters parameters, SGDOptions options = {});

  SGDOptions options() const;  // lr as it is now (set_lr may have changed it)

 protected:
  void update(const Tensor& param, const Tensor& grad, ParamState& state) override;
  Hyperparameters hyperparameters() const override;
  void set_hyperparameters(const Hyperparameters& values) override;
  std::vector<std::string> buffer_names(const Hyperparameters& values) const override;

 private:
  void check(const SGDOptions& options) const;
  SGDOptions options_;
};

}  // namespace axiom::optim
