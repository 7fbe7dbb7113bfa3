// The optimizer state's JSON (the metadata of optimizer-*.safetensors): Optimizer::load_state, on
// an Adam over two small parameters, with the tensors of a real state, so that a JSON that names
// them right reaches the checks of the tensors too.
#include "autograd/ops.h"
#include "autograd/tensor.h"
#include "core/factory.h"
#include "optim/optim.h"
#include "tests/fuzz/fuzz_target.h"

using namespace axiom;

namespace {
struct Setup {
  Tensor w = Tensor(core::ones({2, 3}), /*requires_grad=*/true);
  Tensor b = Tensor(core::zeros({3}), /*requires_grad=*/true);
  optim::Adam adam{{{"w", w}, {"b", b}}, {.lr = 1e-3}};
  optim::OptimizerState real;
  Setup() {
    add(sum(w), sum(b)).backward();
    adam.step();
    real = adam.state();
  }
};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Setup setup;
  const optim::OptimizerState state{setup.real.tensors, fuzz::text_of(data, size)};
  fuzz::refusals_allowed([&] { setup.adam.load_state(state, "fuzz"); });
  return 0;
}
