// A program that lives outside axiom's tree and uses an installed axiom, as any project would:
// through CMake (find_package(axiom), target axiom::axiom: CMakeLists.txt here) or pkg-config
// (`c++ -std=c++20 main.cpp $(pkg-config --cflags --libs axiom)`). tests/downstream/run.sh builds
// it both ways against a fresh `cmake --install` and runs it.
//
// It builds a tiny Axial Transformer, checks that its untrained loss is the uniform
// distribution's 8 bits/dim, and takes one Adam step.
#include <cmath>
#include <cstdio>

#include "core/core.h"
#include "models/models.h"
#include "optim/adam.h"

namespace core = axiom::core;
namespace models = axiom::models;

int main() {
  models::AxialTransformerConfig config = models::preset("tiny");
  config.height = 4, config.width = 4;
  core::Generator gen(1);
  models::AxialTransformer model(config, gen);
  axiom::optim::Adam adam(model.named_parameters(), {.lr = 1e-3});

  const core::Tensor images = core::from_vector<uint8_t>({0, 17, 255, 3, 90, 91, 92, 93, 1, 2, 3, 4, 200, 100, 50, 25}, {1, 4, 4});
  const axiom::Tensor loss = model.loss(images, gen);  // bits/dim, a scalar
  adam.zero_grad();
  loss.backward();
  adam.step();
  std::printf("an installed axiom: %lld parameters, loss at step 0 %.4f bits/dim (8 expected)\n",
              static_cast<long long>(model.parameter_count()), loss.item());
  return std::abs(loss.item() - 8.0) < 0.01 ? 0 : 1;
}
