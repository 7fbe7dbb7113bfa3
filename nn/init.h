// Initial values for parameters, drawn from a seeded generator (same seed, same model).
// Shapes follow axiom's Dense convention: a weight is [fan_in, fan_out] (x @ W).
#pragma once

#include "../core/random.h"
#include "../core/tensor.h"

namespace axiom::nn::init {

core::Tensor zeros(const core::Shape& shape);
core::Tensor ones(const core::Shape& shape);
core::Tensor uniform(const core::Shape& shape, double low, double high, core::Generator& gen);
core::Tensor normal(const core::Shape& shape, double mean, double std, core::Generator& gen);
// Glorot & Bengio (2010): variance 2 / (fan_in + fan_out), for a [fan_in, fan_out] weight.
core::Tensor xavier_uniform(int64_t fan_in, int64_t fan_out, core::Generator& gen);
core::Tensor xavier_normal(int64_t fan_in, int64_t fan_out, core::Generator& gen);
// He et al. (2015): variance 2 / fan_in, for ReLU networks.
core::Tensor kaiming_uniform(int64_t fan_in, int64_t fan_out, core::Generator& gen);
core::Tensor kaiming_normal(int64_t fan_in, int64_t fan_out, core::Generator& gen);

}  // namespace axiom::nn::init
