// Shared helpers for the optim tests: a tiny problem whose gradients autograd computes and the
// test can also write down, and reference optimizers written out in double, element by element,
// from the published update equations (torch.optim.SGD's algorithm, Kingma & Ba's Algorithm 1,
// Loshchilov & Hutter's AdamW). The references never call the code they check.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <unistd.h>
#include <map>
#include <source_location>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "optim/optim.h"
#include "tests/support/reference.h"
#include "autograd/internal.h"

namespace axiom::test {

using axiom::Dtype;
using core::Shape;
using Values = std::map<std::string, std::vector<double>>;  // parameter name -> elements, row-major

// --- the problem -------------------------------------------------------------------------------------
//   loss = sum_i c_i (w_i - t_i)^2 + sum_j b_j^4 / 4
//   dloss/dw = 2 c (w - t),   dloss/db = b^3
// w is [3], b is [2, 2]: a quadratic and a quartic, so the gradients change as the parameters move.
inline const std::vector<double> kC = {0.5, 1.5, 2.0};
inline const std::vector<double> kT = {1.0, -2.0, 0.5};
inline const Values kStart = {{"w", {0.3, -0.7, 1.2}}, {"b", {0.5, -1.0, 1.5, -0.2}}};

// Fresh leaves holding `values` (default: the starting point) in `dtype`: ("w", [3]), ("b", [2, 2]).
inline optim::NamedParameters make_parameters(Dtype dtype, const Values& values = kStart) {
  return {{"w", Tensor(core::from_vector<double>(values.at("w"), {3}).to(dtype), true)},
          {"b", Tensor(core::from_vector<double>(values.at("b"), {2, 2}).to(dtype), true)}};
}

// The loss above, through autograd.
inline Tensor loss_of(const optim::NamedParameters& params) {
  const Tensor& w = params[0].second;
  const Tensor& b = params[1].second;
  const Tensor c(core::from_vector<double>(kC, {3}).to(w.dtype()));
  const Tensor t(core::from_vector<double>(kT, {3}).to(w.dtype()));
  return add(sum(mul(c, pow(sub(w, t), 2.0))), mul(sum(pow(b, 4.0)), 0.25));
}

// The same gradients, written down: 2 c (w - t) and b^3.
inline Values gradients_of(const Values& p) {
  Values g;
  for (size_t i = 0; i < 3; ++i) g["w"].push_back(2 * kC[i] * (p.at("w")[i] - kT[i]));
  for (double b : p.at("b")) g["b"].push_back(b * b * b);
  return g;
}

// One training step with the optimizer under test: zero_grad, backward, step.
inline void train_step(optim::Optimizer& opt) {
  opt.zero_grad();
  loss_of(opt.parameters()).backward();
  opt.step();
}

// The parameters' values, read element by element.
inline Values values_of(const optim::NamedParameters& params) {
  Values out;
  for (const auto& [name, p] : params) out[name] = test::values_of(core_tensor(p));
  return out;
}

// Every parameter of `params` against `expected`, with one tolerance.
inline void check_values(const optim::NamedParameters& params, const Values& expected, double rtol, double atol,
                         const std::string& what, std::source_location where = std::source_location::current()) {
  for (const auto& [name, p] : params)
    test::check_close(core_tensor(p), expected.at(name), rtol, atol, what + ", " + name, where);
}

// --- references, from the published equations, in double --------------------------------------------

// torch.optim.SGD:  g = g + lambda p;  b = g (first step) or mu b + (1 - tau) g;
//                   g = g + mu b (Nesterov) or b;  p = p - lr g
struct ReferenceSGD {
  double lr = 1e-3, momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false;
  Values buffer = {};

  void step(Values& params, const Values& grads) {
    for (auto& [name, p] : params) {
      const bool first = !buffer.count(name);
      std::vector<double>& b = buffer[name];
      b.resize(p.size());
      for (size_t i = 0; i < p.size(); ++i) {
        double g = grads.at(name)[i] + weight_decay * p[i];
        if (momentum != 0) {
          b[i] = first ? g : momentum * b[i] + (1 - dampening) * g;
          g = nesterov ? g + momentum * b[i] : b[i];
        }
        p[i] -= lr * g;
      }
    }
  }
};

// Adam (Kingma & Ba, Algorithm 1, with PyTorch's L2 weight decay) and AdamW (Loshchilov & Hutter,
// as torch.optim.AdamW: p = p - lr lambda p before the Adam step, no L2 term):
//   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;  m^ = m / (1 - b1^t);  v^ = v / (1 - b2^t)
//   p = p - lr m^ / (sqrt(v^) + eps)
struct ReferenceAdam {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0;
  bool decoupled = false;  // AdamW
  Values m = {}, v = {};
  std::map<std::string, int> t = {};

  void step(Values& params, const Values& grads) {
    for (auto& [name, p] : params) {
      m[name].resize(p.size());
      v[name].resize(p.size());
      const int step = ++t[name];
      for (size_t i = 0; i < p.size(); ++i) {
        double g = grads.at(name)[i];
        if (decoupled) {
          p[i] = p[i] - lr * weight_decay * p[i];
        } else {
          g = g + weight_decay * p[i];
        }
        double& mi = m[name][i];
        double& vi = v[name][i];
        mi = beta1 * mi + (1 - beta1) * g;
        vi = beta2 * vi + (1 - beta2) * g * g;
        const double m_hat = mi / (1 - std::pow(beta1, step));
        const double v_hat = vi / (1 - std::pow(beta2, step));
        p[i] = p[i] - lr * m_hat / (std::sqrt(v_hat) + eps);
      }
    }
  }
};

// Tolerances against the double references: float64 is a few ulp per step away; float32 rounds
// every intermediate to 24 bits.
inline constexpr double kRtol64 = 1e-12, kAtol64 = 1e-14;
inline constexpr double kRtol32 = 2e-5, kAtol32 = 1e-6;

// A path in the temporary directory for this test's files, removed when it goes out of scope.
struct TempFile {
  std::filesystem::path path;
  explicit TempFile(const std::string& name)
      : path(std::filesystem::temp_directory_path() / ("axiom_optim_test_" + std::to_string(::getpid()) + "_" + name)) {
  }
  ~TempFile() {
    std::error_code ignored;
    std::filesystem::remove(path, ignored);
  }
  std::string str() const { return path.string(); }
};

}  // namespace axiom::test
