// gradcheck: is an op's backward rule right? It compares the analytic gradient (from backward())
// with central finite differences, (f(x + eps) - f(x - eps)) / (2 eps), in float64.
//
//   auto result = axiom::gradcheck([](const std::vector<Tensor>& in) { return tanh(in[0]); }, {x});
//   CHECK_MESSAGE(result.ok, result.message);
//
// Full mode builds the whole Jacobian both ways (one backward per output element, two forwards per
// input element): exact, for small inputs. Projection mode compares v^T J u for a few random
// directions u (inputs) and v (output): two forwards and one backward each, for larger inputs.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "tensor.h"

namespace axiom {

struct GradcheckOptions {
  double eps = 1e-6;   // finite-difference step
  double atol = 1e-5;  // |analytical - numerical| <= atol + rtol * |numerical|
  double rtol = 1e-3;
  bool full_jacobian = true;  // false: random projections
  int projections = 8;
  uint64_t seed = 0;  // for the projection directions
};

struct GradcheckResult {
  bool ok = true;
  std::string message;  // on failure: which output, input and element, numerical vs analytical
  double worst_error = 0;
};

// `inputs` must be float64; those with requires_grad() are checked. fn may return any shape.
GradcheckResult gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                          const std::vector<Tensor>& inputs, const GradcheckOptions& options = {});

// gradgradcheck: are fn's second derivatives right? gradcheck of the function
//   inputs -> d<fn(inputs), v>/d(inputs)   (v a fixed random direction, seeded by options.seed),
// the first derivatives computed by grad() with create_graph: the double backward pass against
// finite differences of the first one. It also checks that the first derivatives with a graph
// (where a fused op differentiates its composite definition instead of running its fused rule) are
// the first derivatives without one. The same inputs and options as gradcheck.
GradcheckResult gradgradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                              const std::vector<Tensor>& inputs, const GradcheckOptions& options = {});

}  // namespace axiom
