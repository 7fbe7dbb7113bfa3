#include "core/random.h"

#include <cmath>

#include "core/backend.h"
#include "core/error.h"
#include "core/factory.h"
#include "core/parallel.h"

namespace axiom::core {

std::array<uint32_t, 4> philox4x32(uint64_t seed, uint64_t counter) {
  // Philox-4x32-10: ten rounds of two 32x32->64-bit multiplications, mixing the halves with the
  // key, which is bumped by two Weyl constants between rounds.
  constexpr uint32_t kMul0 = 0xD2511F53, kMul1 = 0xCD9E8D57;
  constexpr uint32_t kWeyl0 = 0x9E3779B9, kWeyl1 = 0xBB67AE85;
  uint32_t c0 = static_cast<uint32_t>(counter), c1 = static_cast<uint32_t>(counter >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t{kMul0} * c0, p1 = uint64_t{kMul1} * c2;
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    c0 = hi1 ^ c1 ^ k0, c1 = lo1, c2 = hi0 ^ c3 ^ k1, c3 = lo0;
    k0 += kWeyl0, k1 += kWeyl1;
  }
  return {c0, c1, c2, c3};
}

}  // namespace axiom::core

namespace axiom {

uint64_t Generator::reserve(uint64_t count) {
  const uint64_t first = offset_;
  if (slice_.count == 0) {
    offset_ += count;
    return first;
  }
  const auto examples = static_cast<uint64_t>(slice_.count);
  if (count % examples != 0) {
    throw Error("random", "a draw of ", count, " values within a share of ", slice_.count,
                " examples must have the batch as its first axis (a multiple of ", slice_.count, " values)");
  }
  const uint64_t per_example = count / examples;
  offset_ += per_example * static_cast<uint64_t>(slice_.total);
  return first + per_example * static_cast<uint64_t>(slice_.first);
}

Generator& default_generator() {
  static Generator generator(0);
  return generator;
}

void manual_seed(uint64_t seed) { default_generator().set_state(seed, 0); }

}  // namespace axiom

namespace axiom::core {

namespace {

// A uniform double in [0, 1) from 53 random bits.
double unit(uint32_t high, uint32_t low) { return static_cast<double>(((uint64_t{high} << 32) | low) >> 11) * 0x1p-53; }

// A new contiguous tensor of T, filled in chunks on any thread: fill(seed, counter, data, count)
// writes the `count` elements at `data`, drawn from counters counter .. counter + count - 1.
template <typename T, typename Fill>
Tensor fill_from_counters(const Shape& shape, Generator& gen, Dtype dtype, Fill fill) {
  Tensor out = empty(shape, dtype);
  const uint64_t seed = gen.seed(), first = gen.reserve(static_cast<uint64_t>(out.numel()));
  T* data = out.data<T>();
  parallel_for(out.numel(), 16384, [&](int64_t begin, int64_t end) {
    fill(seed, first + static_cast<uint64_t>(begin), data + begin, end - begin);
  });
  return out;
}

// Element i of a new contiguous tensor is value(philox(seed, first + i)); `op` names the caller.
template <typename ValueFn>
Tensor generate(const char* op, const Shape& shape, Generator& gen, Dtype dtype, ValueFn value) {
  if (dtype == Dtype::bfloat16) throw Error(op, bfloat16_refusal);
  Tensor out;
  dispatch(dtype, [&]<typename T>() {
    out = fill_from_counters<T>(shape, gen, dtype, [&](uint64_t seed, uint64_t counter, T* data, int64_t count) {
      for (int64_t i = 0; i < count; ++i)
        data[i] = static_cast<T>(value(philox4x32(seed, counter + static_cast<uint64_t>(i))));
    });
  });
  return out;
}

void check_floating(const char* op, Dtype dtype) {
  if (!is_floating(dtype)) throw Error(op, "dtype ", dtype, " is not supported (float32 or float64 only)");
}

}  // namespace

float uniform_float32(uint64_t seed, uint64_t counter, double low, double high) {
  const std::array<uint32_t, 4> r = philox4x32(seed, counter);
  const auto value = static_cast<float>(low + (high - low) * unit(r[0], r[1]));
  // Rounding to float32 could land on `high` itself, which the half-open interval excludes.
  const auto high32 = static_cast<float>(high);
  return value >= high32 ? std::nextafter(high32, -INFINITY) : value;
}

Tensor uniform(const Shape& shape, double low, double high, Generator& gen, Dtype dtype) {
  check_floating("uniform", dtype);
  if (!(low < high) || !std::isfinite(high - low)) throw Error("uniform", "needs low < high, got ", low, " and ", high);
  if (dtype == Dtype::float32) {  // uniform_float32 of every counter: the CPU backend's kernel
    Tensor out = empty(shape, dtype);
    const uint64_t seed = gen.seed(), first = gen.reserve(static_cast<uint64_t>(out.numel()));
    backend(Device::cpu()).uniform(out, seed, first, low, high);
    return out;
  }
  return generate("uniform", shape, gen, dtype,
                  [&](const std::array<uint32_t, 4>& r) { return low + (high - low) * unit(r[0], r[1]); });
}

Tensor normal(const Shape& shape, double mean, double std, Generator& gen, Dtype dtype) {
  check_floating("normal", dtype);
  if (!(std >= 0)) throw Error("normal", "the standard deviation must be 0 or more, got ", std);
  return generate("normal", shape, gen, dtype, [&](const std::array<uint32_t, 4>& r) {
    // Box-Muller: two uniforms (the first in (0, 1], so the log is finite) -> one standard normal.
    const double u1 = 1.0 - unit(r[0], r[1]), u2 = unit(r[2], r[3]);
    return mean + std * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  });
}

Tensor bernoulli(const Shape& shape, double p, Generator& gen, Dtype dtype) {
  if (!(p >= 0 && p <= 1)) throw Error("bernoulli", "p must be in [0, 1], got ", p);
  return generate("bernoulli", shape, gen, dtype,
                  [&](const std::array<uint32_t, 4>& r) { return unit(r[0], r[1]) < p ? 1.0 : 0.0; });
}

Tensor randint(const Shape& shape, int64_t low, int64_t high, Generator& gen, Dtype dtype) {
  constexpr int64_t kLimit = int64_t{1} << 53;  // values pass through a double
  if (low >= high || low < -kLimit || high > kLimit) {
    throw Error("randint", "needs low < high within +-2^53, got ", low, " and ", high);
  }
  // Every value must fit the dtype: converting an out-of-range double to uint8 is undefined.
  if (dtype == Dtype::uint8 && (low < 0 || high > 256)) {
    throw Error("randint", "values from ", low, " to ", high - 1, " do not fit dtype uint8 (0 to 255)");
  }
  const auto range = static_cast<uint64_t>(high - low);
  return generate("randint", shape, gen, dtype, [&](const std::array<uint32_t, 4>& r) {
    const uint64_t bits = (uint64_t{r[0]} << 32) | r[1];
    return static_cast<double>(low + static_cast<int64_t>(bits % range));  // bias < range / 2^64
  });
}

}  // namespace axiom::core
