// Parameters' first values. Every layer draws its parameters through these, so that a model can be
// made where its numbers are never drawn: on the shape-only device (core/meta), to measure what it
// costs without the memory or the time that its weights need (models/training/cost.h).
//
//   nn::Dense layer(512, 2048, gen);                       // weights drawn on the CPU
//   { nn::init::MadeOn meta(Device::meta());
//     nn::Dense shapes(512, 2048, gen); }                  // [512, 2048] on meta: nothing drawn
//
// On the CPU (the default) the values are drawn there; under MadeOn(device) they are drawn on the
// CPU and moved, the same numbers on every device; on meta nothing is drawn, but the generator
// still moves past the draws, so whatever is drawn next is the same.
#pragma once

#include "../autograd/tensor.h"
#include "../core/random.h"

namespace axiom::nn::init {

Tensor normal(const Shape& shape, double mean, double std, Generator& gen);  // float32
Tensor uniform(const Shape& shape, double low, double high, Generator& gen);
Tensor constant(const Shape& shape, double value);

// While one lives, the functions above make their tensors on `device` (on this thread).
class MadeOn {
 public:
  explicit MadeOn(Device device);
  ~MadeOn();
  MadeOn(const MadeOn&) = delete;
  MadeOn& operator=(const MadeOn&) = delete;

 private:
  Device previous_;
};

}  // namespace axiom::nn::init
