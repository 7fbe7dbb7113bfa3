// The basic layers. Each is a Module with a forward(x) (also callable as layer(x)).
#pragma once

#include "../autograd/ops.h"
#include "../core/random.h"
#include "module.h"

namespace axiom::nn {

// How a Dense layer starts, with s = init_scale / sqrt(in):
//   uniform: W and b uniform in [-s, s] (PyTorch's Linear)
//   normal:  W normal with standard deviation s (variance init_scale^2 / fan_in), b = 0
//            (LeCun's normal; the Axial Transformer authors' code)
enum class DenseInit { uniform, normal };

// y = x @ W + b over the last axis of x of any rank:  [..., in] -> [..., out].
// W is [in, out]; init_scale = 0 starts the layer at exactly zero (the Axial Transformer's output
// projections), whatever the init.
struct DenseOptions {
  bool bias = true;
  double init_scale = 1.0;
  DenseInit init = DenseInit::uniform;
};
class Dense : public Module {
 public:
  Dense(int64_t in, int64_t out, Generator& gen, DenseOptions options = {});
  Tensor forward(const Tensor& x) const;
  Tensor operator()(const Tensor& x) const { return forward(x); }
  int64_t in_features() const { return weight.size(0); }

  Tensor weight;  // [in, out]
  Tensor bias;    // [out], or undefined
};

// Normalises the last axis to zero mean and unit variance, then y = xhat * weight + bias.
class LayerNorm : public Module {
 public:
  explicit LayerNorm(int64_t features, double eps = 1e-5);
  Tensor forward(const Tensor& x) const;
  Tensor operator()(const Tensor& x) const { return forward(x); }

  Tensor weight;  // [features], starts at 1
  Tensor bias;    // [features], starts at 0
  double eps;
};

// A table of `count` vectors of size `features`: indices [...] (int64) -> [..., features].
class Embedding : public Module {
 public:
  Embedding(int64_t count, int64_t features, Generator& gen, double init_std = 1.0);
  Tensor forward(const Tensor& indices) const;
  Tensor operator()(const Tensor& indices) const { return forward(indices); }

  Tensor weight;  // [count, features], starts normal(0, init_std)
};

// Zeroes elements with probability p in training mode (scaling the rest by 1/(1-p)); identity in eval.
class Dropout : public Module {
 public:
  explicit Dropout(double p, Generator& gen = default_generator());
  Tensor forward(const Tensor& x) const;
  Tensor operator()(const Tensor& x) const { return forward(x); }
  double p;

 private:
  Generator* gen_;
};

}  // namespace axiom::nn
