// Elementwise ops and their backward rules. Each rule returns gradients in the broadcast shape
// the op worked in; the engine sums them back to each input's shape. The rules are written in the
// ops of this file, so they have rules of their own: second derivatives come from the same code.
//
// Notation: x, a, b the inputs, y the output, g = dL/dy (same shape as y).
#include <cmath>

#include "autograd/ops.h"
#include "core/error.h"
#include "core/factory.h"
#include "core/formulas.h"
#include "core/launch.h"
#include "core/random.h"
#include "autograd/internal.h"

namespace axiom {

namespace {

Tensor zero_like(const Tensor& t) { return Tensor(core::scalar(0, t.dtype(), t.device())); }
// uint8 mask -> 0/1 in t's dtype: a constant (its derivative is 0 almost everywhere)
Tensor as_numbers(const core::Tensor& mask, const Tensor& like) { return Tensor(mask.to(like.dtype())); }

// Records a one-input op whose gradient is g * slope(x), elementwise.
template <typename Slope>
Tensor unary(const char* name, const Tensor& x, core::Tensor y, Slope slope) {
  return record(name, {x}, std::move(y), [x, slope](const Tensor& g, const Needs&) { return Grads{mul(g, slope(x))}; });
}

// Records a one-input op whose gradient is g * slope(y), from its output y.
template <typename Slope>
Tensor unary_from_output(const char* name, const Tensor& x, core::Tensor y, Slope slope) {
  return record_keeping_output(name, {x}, std::move(y), [slope](const Tensor& g, const Tensor& y, const Needs&) {
    return Grads{mul(g, slope(y))};
  });
}

// gelu'(x) = Phi(x) + x phi(x), from core's kernel. Its own rule:
//   gelu''(x) = phi(x) (2 - x^2),  phi(x) = exp(-x^2 / 2) / sqrt(2 pi)
Tensor gelu_slope(const Tensor& x) {
  return record("gelu_derivative", {x}, core::gelu_derivative(core_tensor(x)), [x](const Tensor& g, const Needs&) {
    const Tensor x2 = mul(x, x);
    const Tensor phi = mul(exp(mul(x2, -0.5)), core::formulas::kInvSqrt2Pi);
    return Grads{mul(g, mul(phi, add(neg(x2), 2.0)))};
  });
}

// gelu_tanh(x) = x/2 (1 + t), t = tanh(u), u = c (x + k x^3), c = sqrt(2 / pi), k = 0.044715.
// Its slope from core's kernel; the slope's own rule:
//   gelu_tanh''(x) = (1 - t^2) (u' + x/2 (u'' - 2 t u'^2)),  u' = c (1 + 3 k x^2), u'' = 6 c k x
Tensor gelu_tanh_slope(const Tensor& x) {
  return record(
      "gelu_tanh_derivative", {x}, core::gelu_tanh_derivative(core_tensor(x)), [x](const Tensor& g, const Needs&) {
        const double c = core::formulas::kSqrt2OverPi, k = core::formulas::kGeluCubic;  // core/activations.inc
        const Tensor x2 = mul(x, x);
        const Tensor t = tanh(mul(add(mul(mul(x2, x), k), x), c));
        const Tensor du = mul(add(mul(x2, 3 * k), 1.0), c), ddu = mul(x, 6 * c * k);
        const Tensor bracket = add(du, mul(mul(x, 0.5), sub(ddu, mul(mul(t, mul(du, du)), 2.0))));
        return Grads{mul(g, mul(add(neg(mul(t, t)), 1.0), bracket))};
      });
}
}  // namespace

// dL/da = g, dL/db = g                                    : y's shape (summed back by the engine)
Tensor add(const Tensor& a, const Tensor& b) {
  return record("add", {a, b}, core::add(core_tensor(a), core_tensor(b)), [](const Tensor& g, const Needs&) {
    return Grads{g, g};
  });
}

// dL/da = g, dL/db = -g
Tensor sub(const Tensor& a, const Tensor& b) {
  return record("sub", {a, b}, core::sub(core_tensor(a), core_tensor(b)), [](const Tensor& g, const Needs& needs) {
    return Grads{g, needs[1] ? neg(g) : Tensor()};
  });
}

// dL/da = g * b, dL/db = g * a
Tensor mul(const Tensor& a, const Tensor& b) {
  return record("mul", {a, b}, core::mul(core_tensor(a), core_tensor(b)), [a, b](const Tensor& g, const Needs& needs) {
    return Grads{needs[0] ? mul(g, b) : Tensor(), needs[1] ? mul(g, a) : Tensor()};
  });
}

// dL/da = g / b, dL/db = -g * a / b^2 = -(g / b) * y
Tensor div(const Tensor& a, const Tensor& b) {
  return record_keeping_output("div", {a, b}, core::div(core_tensor(a), core_tensor(b)),
                               [b](const Tensor& g, const Tensor& y, const Needs& needs) {
                                 const Tensor g_over_b = div(g, b);
                                 return Grads{g_over_b, needs[1] ? neg(mul(g_over_b, y)) : Tensor()};
                               });
}

// dL/da = g * b * a^(b-1), dL/db = g * y * log(a)
Tensor pow(const Tensor& a, const Tensor& b) {
  return record_keeping_output("pow", {a, b}, core::pow(core_tensor(a), core_tensor(b)),
                               [a, b](const Tensor& g, const Tensor& y, const Needs& needs) {
                                 Tensor da, db;
                                 if (needs[0]) da = mul(g, mul(b, pow(a, sub(b, 1.0))));
                                 if (needs[1]) db = mul(g, mul(y, log(a)));
                                 return Grads{da, db};
                               });
}

// maximum and minimum: the input that wins gets g; where a and b tie, each gets half of g (the
// subgradient PyTorch uses too).  For maximum:
// dL/da = g * ([a > b] + [a == b] / 2), dL/db = g * ([a < b] + [a == b] / 2)
namespace {
Tensor pick(const char* name, const Tensor& a, const Tensor& b, core::Tensor y, bool larger) {
  return record(name, {a, b}, std::move(y),
                [a = core_tensor(a), b = core_tensor(b), larger](const Tensor& g, const Needs&) {
                  const core::Tensor tie = core::mul(core::eq(a, b).to(g.dtype()), 0.5);
                  const Tensor a_wins(core::add((larger ? core::gt(a, b) : core::lt(a, b)).to(g.dtype()), tie));
                  const Tensor b_wins(core::add((larger ? core::lt(a, b) : core::gt(a, b)).to(g.dtype()), tie));
                  return Grads{mul(g, a_wins), mul(g, b_wins)};
                });
}
}  // namespace

Tensor maximum(const Tensor& a, const Tensor& b) {
  return pick("maximum", a, b, core::maximum(core_tensor(a), core_tensor(b)), true);
}
Tensor minimum(const Tensor& a, const Tensor& b) {
  return pick("minimum", a, b, core::minimum(core_tensor(a), core_tensor(b)), false);
}

Tensor add(const Tensor& a, double b) {
  return record("add", {a}, core::add(core_tensor(a), b), [](const Tensor& g, const Needs&) { return Grads{g}; });
}
Tensor sub(const Tensor& a, double b) { return add(a, -b); }
Tensor mul(const Tensor& a, double b) {
  return record("mul", {a}, core::mul(core_tensor(a), b), [b](const Tensor& g, const Needs&) {
    return Grads{mul(g, b)};  // dL/da = g * b
  });
}
Tensor div(const Tensor& a, double b) { return mul(a, 1.0 / b); }

// dL/dx = g * p * x^(p-1)
Tensor pow(const Tensor& x, double p) {
  return unary("pow", x, core::pow(core_tensor(x), p), [p](const Tensor& x) { return mul(pow(x, p - 1), p); });
}

// dL/dx = -g
Tensor neg(const Tensor& x) {
  return record("neg", {x}, core::neg(core_tensor(x)), [](const Tensor& g, const Needs&) { return Grads{neg(g)}; });
}

// dL/dx = g * sign(x)   (0 at x = 0)
Tensor abs(const Tensor& x) {
  return unary("abs", x, core::abs(core_tensor(x)), [](const Tensor& x) {
    const core::Tensor zero = core::scalar(0, x.dtype(), x.device());
    return Tensor(
        core::sub(core::gt(core_tensor(x), zero).to(x.dtype()), core::lt(core_tensor(x), zero).to(x.dtype())));
  });
}

// dL/dx = g * y
Tensor exp(const Tensor& x) {
  return unary_from_output("exp", x, core::exp(core_tensor(x)), [](const Tensor& y) { return y; });
}

// dL/dx = g / x
Tensor log(const Tensor& x) {
  return record("log", {x}, core::log(core_tensor(x)), [x](const Tensor& g, const Needs&) { return Grads{div(g, x)}; });
}

// dL/dx = g / (2 y)
Tensor sqrt(const Tensor& x) {
  return record_keeping_output(
      "sqrt", {x}, core::sqrt(core_tensor(x)),
      [](const Tensor& g, const Tensor& y, const Needs&) { return Grads{div(mul(g, 0.5), y)}; });
}

// y = x^(-1/2):  dL/dx = g * (-1/2) y^3
Tensor rsqrt(const Tensor& x) {
  return unary_from_output("rsqrt", x, core::rsqrt(core_tensor(x)),
                           [](const Tensor& y) { return mul(pow(y, 3.0), -0.5); });
}

// dL/dx = g * (1 - y^2)
Tensor tanh(const Tensor& x) {
  return unary_from_output("tanh", x, core::tanh(core_tensor(x)),
                           [](const Tensor& y) { return add(neg(mul(y, y)), 1.0); });
}

// dL/dx = g * y * (1 - y)
Tensor sigmoid(const Tensor& x) {
  return unary_from_output("sigmoid", x, core::sigmoid(core_tensor(x)),
                           [](const Tensor& y) { return mul(y, add(neg(y), 1.0)); });
}

// dL/dx = g * [x > 0]
Tensor relu(const Tensor& x) {
  return unary("relu", x, core::relu(core_tensor(x)), [](const Tensor& x) {
    return as_numbers(core::gt(core_tensor(x), core::scalar(0, x.dtype(), x.device())), x);
  });
}

// dL/dx = g * gelu'(x) = g * (Phi(x) + x phi(x))
Tensor gelu(const Tensor& x) { return unary("gelu", x, core::gelu(core_tensor(x)), gelu_slope); }

Tensor gelu_tanh(const Tensor& x) { return unary("gelu_tanh", x, core::gelu_tanh(core_tensor(x)), gelu_tanh_slope); }

// dL/da = g where cond, else 0; dL/db = g where not cond, else 0
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  return record("where", {a, b}, core::where(core_tensor(cond), core_tensor(a), core_tensor(b)),
                [cond](const Tensor& g, const Needs& needs) {
                  const Tensor zero = zero_like(g);
                  return Grads{needs[0] ? where(cond, g, zero) : Tensor(), needs[1] ? where(cond, zero, g) : Tensor()};
                });
}

// dL/dx = g where the mask is 0, else 0
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value) {
  return record("masked_fill", {x}, core::masked_fill(core_tensor(x), core_tensor(mask), value),
                [mask](const Tensor& g, const Needs&) { return Grads{where(mask, zero_like(g), g)}; });
}

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator-(const Tensor& x) { return neg(x); }

Tensor eq(const Tensor& a, const Tensor& b) { return Tensor(core::eq(core_tensor(a), core_tensor(b))); }
Tensor lt(const Tensor& a, const Tensor& b) { return Tensor(core::lt(core_tensor(a), core_tensor(b))); }
Tensor gt(const Tensor& a, const Tensor& b) { return Tensor(core::gt(core_tensor(a), core_tensor(b))); }

// dL/dx = g * mask, with mask = [kept] / (1 - p)
Tensor dropout(const Tensor& x, double p, bool training, Generator& gen) {
  if (!(p >= 0 && p <= 1)) throw Error("dropout", "p must be in [0, 1], got ", p);
  if (!training || p == 0) return x;
  core::Tensor mask = core::bernoulli(x.shape(), 1 - p, gen, x.dtype()).to(x.device());
  if (p < 1) mask = core::mul(mask, 1 / (1 - p));
  return record("dropout", {x}, core::mul(core_tensor(x), mask),
                [mask = Tensor(mask)](const Tensor& g, const Needs&) { return Grads{mul(g, mask)}; });
}

}  // namespace axiom
