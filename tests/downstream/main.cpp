// A program that lives outside axiom's tree and uses an installed axiom, as any project would:
// through CMake (find_package(axiom), target axiom::axiom: CMakeLists.txt here) or pkg-config
// (`c++ -std=c++20 main.cpp $(pkg-config --cflags --libs axiom)`). tests/downstream/run.sh builds
// it both ways against a fresh `cmake --install` and runs it. It includes one header.
//
// 1. A tiny Axial Transformer: its untrained loss is the uniform distribution's 8 bits/dim, and
//    one Adam step runs.
// 2. A Hessian-vector product: for f(w) = sum(tanh(x @ w)^2), axiom::hvp against central
//    differences of the gradient, (grad f(w + e v) - grad f(w - e v)) / 2e, in float64.
#include <axiom/axiom.h>

#include <cmath>
#include <cstdio>

namespace models = axiom::models;
using axiom::Tensor;

bool untrained_model_is_uniform() {
  models::ImageModelConfig config = models::preset("tiny");
  config.height = 4, config.width = 4;
  axiom::Generator gen(1);
  models::AxialTransformer model(config, gen);
  axiom::optim::Adam adam(model.named_parameters(), {.lr = 1e-3});

  const Tensor images =
      axiom::from_vector<uint8_t>({0, 17, 255, 3, 90, 91, 92, 93, 1, 2, 3, 4, 200, 100, 50, 25}, {1, 4, 4});
  const Tensor loss = model.loss(images, gen);  // bits/dim, a scalar
  adam.zero_grad();
  loss.backward();
  adam.step();
  std::printf("an installed axiom: %lld parameters, loss at step 0 %.4f bits/dim (8 expected)\n",
              static_cast<long long>(model.parameter_count()), loss.item());
  return std::abs(loss.item() - 8.0) < 0.01;
}

bool hessian_vector_product_matches_differences() {
  axiom::Generator gen(2);
  const Tensor x = axiom::normal({5, 3}, 0, 1, gen, axiom::Dtype::float64);  // [5, 3]
  const Tensor w = axiom::normal({3, 2}, 0, 1, gen, axiom::Dtype::float64);  // [3, 2]
  const Tensor v = axiom::normal({3, 2}, 0, 1, gen, axiom::Dtype::float64);  // [3, 2], the direction
  auto f = [&](const std::vector<Tensor>& in) {
    const Tensor y = axiom::tanh(axiom::matmul(x, in[0]));  // [5, 2]
    return axiom::sum(axiom::mul(y, y));
  };
  const Tensor hv = axiom::hvp(f, {w}, {v})[0];  // [3, 2]

  auto gradient_at = [&](double step) {  // grad f(w + step v), [3, 2]
    Tensor at = axiom::add(w, axiom::mul(v, step)).detach().set_requires_grad(true);
    return axiom::grad({f({at})}, {at})[0];
  };
  const double e = 1e-5;
  const Tensor differences = axiom::div(axiom::sub(gradient_at(e), gradient_at(-e)), 2 * e);
  const double error = axiom::max(axiom::abs(axiom::sub(hv, differences))).item();
  std::printf("an installed axiom: H v of sum(tanh(x w)^2), largest difference from central differences %.2g\n", error);
  return error < 1e-6;
}

int main() {
  const bool model_ok = untrained_model_is_uniform();
  const bool hvp_ok = hessian_vector_product_matches_differences();
  return model_ok && hvp_ok ? 0 : 1;
}
