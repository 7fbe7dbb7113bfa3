#include "nn/init.h"

#include "autograd/factory.h"

namespace axiom::nn::init {

namespace {

thread_local Device made_on = Device::cpu();

// A tensor of `shape` on made_on: draw() on the CPU, moved; on meta, a tensor of shapes only, and
// the generator moved past the draws that were not made.
template <typename Draw>
Tensor made(const Shape& shape, Generator* gen, Draw draw) {
  if (made_on.type != DeviceType::meta) return draw().to(made_on);
  if (gen) gen->reserve(static_cast<uint64_t>(core::numel(shape)));
  return Tensor(core::empty(shape, Dtype::float32, made_on));
}

}  // namespace

Tensor normal(const Shape& shape, double mean, double std, Generator& gen) {
  return made(shape, &gen, [&] { return axiom::normal(shape, mean, std, gen); });
}
Tensor uniform(const Shape& shape, double low, double high, Generator& gen) {
  return made(shape, &gen, [&] { return axiom::uniform(shape, low, high, gen); });
}
Tensor constant(const Shape& shape, double value) {
  return made(shape, nullptr, [&] { return axiom::full(shape, value); });
}

MadeOn::MadeOn(Device device) : previous_(made_on) { made_on = device; }
MadeOn::~MadeOn() { made_on = previous_; }

}  // namespace axiom::nn::init
