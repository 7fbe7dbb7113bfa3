// Adam (Kingma & Ba, 2015) and AdamW (Loshchilov & Hutter, 2019), exactly as torch.optim.Adam
// and torch.optim.AdamW compute them. They differ only in their weight decay: Adam adds
// weight_decay * p to the gradient (L2 regularisation, which the moving averages then rescale);
// AdamW shrinks the parameter by lr * weight_decay * p directly ("decoupled" weight decay).
// AdamW is Adam with decoupled weight decay and PyTorch's AdamW default weight_decay of 0.01.
#pragma once

#include <utility>

#include "optimizer.h"

namespace axiom::optim {

// PyTorch's defaults.
struct AdamOptions {
  double lr = 1e-3;
  std::pair<double, double> betas = {0.9, 0.999};  // decay rates of the gradient's mean and of its square's
  double eps = 1e-8;
  double weight_decay = 0;
  bool decoupled_weight_decay = false;  // true: AdamW's update
};

struct AdamWOptions {
  double lr = 1e-3;
  std::pair<double, double> betas = {0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 1e-2;
};

class Adam : public Optimizer {
 public:
  //   axiom::optim::Adam opt(params, {.lr = 1e-3, .betas = {0.9, 0.98}});
  Adam(NamedParameters parameters, AdamOptions options = {});

  AdamOptions options() const;  // lr as it is now (set_lr may have changed it)

 protected:
  Adam(const char* name, NamedParameters parameters, AdamOptions options);
  void update(const Tensor& param, const Tensor& grad, ParamState& state) override;
  void update_all(const std::vector<PendingUpdate>& updates) override;
  Hyperparameters hyperparameters() const override;
  void set_hyperparameters(const Hyperparameters& values) override;
  std::vector<std::string> buffer_names(const Hyperparameters& values) const override;

 private:
  void check(const AdamOptions& options) const;
  AdamOptions options_;
};

class AdamW : public Adam {
 public:
  //   axiom::optim::AdamW opt(params, {.lr = 3e-4, .weight_decay = 0.1});
  AdamW(NamedParameters parameters, AdamWOptions options = {});
};

}  // namespace axiom::optim
