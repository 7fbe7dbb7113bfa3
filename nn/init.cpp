#include "nn/init.h"

#include <cmath>

#include "core/error.h"
#include "core/factory.h"

namespace axiom::nn::init {

namespace {
void check_fans(const char* name, int64_t fan_in, int64_t fan_out) {
  if (fan_in <= 0 || fan_out <= 0) throw Error(name, "fan_in and fan_out must be positive, got ", fan_in, " and ", fan_out);
}
}  // namespace

core::Tensor zeros(const core::Shape& shape) { return core::zeros(shape); }
core::Tensor ones(const core::Shape& shape) { return core::ones(shape); }

core::Tensor uniform(const core::Shape& shape, double low, double high, core::Generator& gen) {
  return core::uniform(shape, low, high, gen);
}

core::Tensor normal(const core::Shape& shape, double mean, double std, core::Generator& gen) {
  return core::normal(shape, mean, std, gen);
}

// U(-a, a) has variance a^2 / 3, so a = sqrt(3 * variance).
core::Tensor xavier_uniform(int64_t fan_in, int64_t fan_out, core::Generator& gen) {
  check_fans("xavier_uniform", fan_in, fan_out);
  const double a = std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
  return core::uniform({fan_in, fan_out}, -a, a, gen);
}

core::Tensor xavier_normal(int64_t fan_in, int64_t fan_out, core::Generator& gen) {
  check_fans("xavier_normal", fan_in, fan_out);
  return core::normal({fan_in, fan_out}, 0, std::sqrt(2.0 / static_cast<double>(fan_in + fan_out)), gen);
}

core::Tensor kaiming_uniform(int64_t fan_in, int64_t fan_out, core::Generator& gen) {
  check_fans("kaiming_uniform", fan_in, fan_out);
  const double a = std::sqrt(6.0 / static_cast<double>(fan_in));
  return core::uniform({fan_in, fan_out}, -a, a, gen);
}

core::Tensor kaiming_normal(int64_t fan_in, int64_t fan_out, core::Generator& gen) {
  check_fans("kaiming_normal", fan_in, fan_out);
  return core::normal({fan_in, fan_out}, 0, std::sqrt(2.0 / static_cast<double>(fan_in)), gen);
}

}  // namespace axiom::nn::init
