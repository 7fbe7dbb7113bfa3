#include "nn/layers.h"

#include <cmath>

#include "core/error.h"
#include "core/factory.h"
#include "core/launch.h"
#include "autograd/factory.h"
#include "nn/init.h"

namespace axiom::nn {

namespace {
void check_positive(const char* layer, const char* what, int64_t value) {
  if (value <= 0) throw Error(layer, what, " must be positive, got ", value);
}
}  // namespace

Dense::Dense(int64_t in, int64_t out, Generator& gen, DenseOptions options) {
  check_positive("Dense", "in", in);
  check_positive("Dense", "out", out);
  if (options.init != DenseInit::uniform && options.init != DenseInit::normal)
    throw Error("Dense", "init must be uniform or normal, got DenseInit(", static_cast<int>(options.init), ")");
  const double s = options.init_scale / std::sqrt(static_cast<double>(in));
  const bool normal = options.init == DenseInit::normal;
  auto draw = [&](const Shape& shape) {
    if (s == 0) return init::constant(shape, 0);
    return normal ? init::normal(shape, 0, s, gen) : init::uniform(shape, -s, s, gen);
  };
  weight = register_parameter("weight", draw({in, out}));
  if (options.bias) bias = register_parameter("bias", normal ? init::constant({out}, 0) : draw({out}));
}

// [..., in] @ [in, out] + [out] -> [..., out]
Tensor Dense::forward(const Tensor& x) const {
  if (x.dim() == 0 || x.size(-1) != in_features()) {
    throw Error("Dense", "expected input [..., ", in_features(), "], got ", x.shape());
  }
  return bias.defined() ? linear(x, weight, bias) : matmul(x, weight);
}

LayerNorm::LayerNorm(int64_t features, double eps) : eps(eps) {
  check_positive("LayerNorm", "features", features);
  weight = register_parameter("weight", init::constant({features}, 1));
  bias = register_parameter("bias", init::constant({features}, 0));
}

Tensor LayerNorm::forward(const Tensor& x) const { return layer_norm(x, weight, bias, eps); }

Embedding::Embedding(int64_t count, int64_t features, Generator& gen, double init_std) {
  check_positive("Embedding", "count", count);
  check_positive("Embedding", "features", features);
  weight = register_parameter("weight", init::normal({count, features}, 0, init_std, gen));
}

Tensor Embedding::forward(const Tensor& indices) const { return embedding(weight, indices); }

Dropout::Dropout(double p, Generator& gen) : p(p), gen_(&gen) {
  if (!(p >= 0 && p <= 1)) throw Error("Dropout", "p must be in [0, 1], got ", p);
}

Tensor Dropout::forward(const Tensor& x) const { return dropout(x, p, is_training(), *gen_); }

}  // namespace axiom::nn
