#include "nn/position.h"

#include <cmath>

#include "core/error.h"
#include "autograd/factory.h"
#include "nn/init.h"

namespace axiom::nn {

FactorizedPositionEmbedding::FactorizedPositionEmbedding(const Shape& sizes, int64_t features, Generator& gen,
                                                         double init_std)
    : sizes(sizes) {
  if (sizes.empty() || features <= 0) {
    throw Error("FactorizedPositionEmbedding", "needs at least one axis and positive features, got sizes ", sizes,
                " and features ", features);
  }
  for (size_t k = 0; k < sizes.size(); ++k) {
    if (sizes[k] <= 0) throw Error("FactorizedPositionEmbedding", "axis sizes must be positive, got ", sizes);
    tables.push_back(
        register_parameter("axis_" + std::to_string(k + 1), init::normal({sizes[k], features}, 0, init_std, gen)));
  }
}

// sum over k of table_k reshaped to [1, ..., d_k, ..., 1, D]: broadcasting builds the grid
Tensor FactorizedPositionEmbedding::embeddings() const {
  Tensor total;
  for (size_t k = 0; k < tables.size(); ++k) {
    Shape shape(sizes.size() + 1, 1);
    shape[k] = sizes[k];
    shape.back() = tables[k].size(1);
    const Tensor table = tables[k].reshape(shape);
    total = total.defined() ? add(total, table) : table;
  }
  return total;
}

Tensor FactorizedPositionEmbedding::forward(const Tensor& x) const {
  Shape expected = sizes;
  expected.push_back(tables.front().size(1));
  const Shape got(x.shape().begin() + (x.dim() > 0 ? 1 : 0), x.shape().end());
  if (got != expected) {
    throw Error("FactorizedPositionEmbedding", "input ", x.shape(), " must be [B, ",
                core::shape_str(expected).substr(1));
  }
  return add(x, embeddings());
}

Tensor sinusoidal_encoding(int64_t length, int64_t features, Dtype dtype) {
  if (length < 0 || features <= 0 || features % 2 != 0) {
    throw Error("sinusoidal_encoding", "needs length >= 0 and an even, positive features, got ", length, " and ",
                features);
  }
  std::vector<double> values(static_cast<size_t>(length * features));
  for (int64_t t = 0; t < length; ++t) {
    for (int64_t i = 0; i < features / 2; ++i) {
      const double angle =
          static_cast<double>(t) / std::pow(10000.0, 2.0 * static_cast<double>(i) / static_cast<double>(features));
      values[t * features + 2 * i] = std::sin(angle);
      values[t * features + 2 * i + 1] = std::cos(angle);
    }
  }
  return from_vector(values, {length, features}).to(dtype);  // the numbers, computed here
}

}  // namespace axiom::nn
