// Random tensors from a seedable, counter-based generator.
//
// Element i of a draw is a pure function of (seed, offset + i), computed with Philox-4x32-10
// (Salmon et al., 2011, the generator cuRAND and PyTorch's CUDA backend use). Chunks of a tensor
// can therefore be filled by any number of threads in any order: same seed, same numbers, whatever
// the thread count. Each draw advances the generator's offset by the number of elements it used.
#pragma once

#include <array>
#include <cstdint>

#include "tensor.h"

namespace axiom::core {
class BatchShare;
}  // namespace axiom::core

// Generator is axiom's own: users and core code alike write Generator (axiom::Generator).
namespace axiom {

// Which examples of a batch this process draws for (see core/distributed/batch_share.h); count 0 = all of them.
struct BatchSlice {
  int64_t first = 0, count = 0, total = 0;
};

class Generator {
 public:
  explicit Generator(uint64_t seed = 0) : seed_(seed) {}
  uint64_t seed() const { return seed_; }
  uint64_t offset() const { return offset_; }
  void set_state(uint64_t seed, uint64_t offset) { seed_ = seed, offset_ = offset; }
  // Reserves `count` counters and returns the first (callers then use [first, first + count)).
  // Within a BatchShare, see there.
  uint64_t reserve(uint64_t count);

 private:
  friend class core::BatchShare;
  uint64_t seed_;
  uint64_t offset_ = 0;
  BatchSlice slice_;
};

// The process-wide generator used when none is passed; manual_seed resets it.
Generator& default_generator();
void manual_seed(uint64_t seed);

}  // namespace axiom

namespace axiom::core {

// Four random 32-bit words for one counter value.
std::array<uint32_t, 4> philox4x32(uint64_t seed, uint64_t counter);
// The float32 value that uniform(low, high) draws from one counter (core/cpu/vector_math.h's
// uniform draws the same, several counters at a time).
float uniform_float32(uint64_t seed, uint64_t counter, double low, double high);

// Uniform in [low, high).
Tensor uniform(const Shape& shape, double low, double high, Generator& gen = default_generator(),
               Dtype dtype = Dtype::float32);
inline Tensor rand(const Shape& shape, Generator& gen = default_generator(), Dtype dtype = Dtype::float32) {
  return uniform(shape, 0, 1, gen, dtype);
}
// Normal with the given mean and standard deviation (Box-Muller).
Tensor normal(const Shape& shape, double mean, double std, Generator& gen = default_generator(),
              Dtype dtype = Dtype::float32);
inline Tensor randn(const Shape& shape, Generator& gen = default_generator(), Dtype dtype = Dtype::float32) {
  return normal(shape, 0, 1, gen, dtype);
}
// 1 with probability p, else 0.
Tensor bernoulli(const Shape& shape, double p, Generator& gen = default_generator(), Dtype dtype = Dtype::float32);
// Integers uniform in [low, high).
Tensor randint(const Shape& shape, int64_t low, int64_t high, Generator& gen = default_generator(),
               Dtype dtype = Dtype::int64);

}  // namespace axiom::core
