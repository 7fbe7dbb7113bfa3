// Elementwise ops and their backward rules. Each rule returns gradients in the broadcast shape
// the op worked in; the engine sums them back to each input's shape.
//
// Notation: x, a, b the inputs, y the output, g = dL/dy (same shape as y).
#include "autograd/ops.h"
#include "core/factory.h"
#include "core/ops.h"

namespace axiom {

namespace {

core::Tensor zero_like(const core::Tensor& t) { return core::scalar(0, t.dtype(), t.device()); }
// uint8 mask -> 0/1 in t's dtype
core::Tensor as_numbers(const core::Tensor& mask, const core::Tensor& like) { return mask.to(like.dtype()); }

// Records a one-input op whose gradient is g * derivative(x, y), elementwise.
template <typename Derivative>
Tensor unary(const char* name, const Tensor& x, core::Tensor y, Derivative derivative) {
  return record(name, {x}, y, [x = x.data(), y, derivative](const core::Tensor& g, const Needs&) {
    return Grads{core::mul(g, derivative(x, y))};
  });
}
}  // namespace

// dL/da = g, dL/db = g                                    : y's shape (summed back by the engine)
Tensor add(const Tensor& a, const Tensor& b) {
  return record("add", {a, b}, core::add(a.data(), b.data()), [](const core::Tensor& g, const Needs&) {
    return Grads{g, g};
  });
}

// dL/da = g, dL/db = -g
Tensor sub(const Tensor& a, const Tensor& b) {
  return record("sub", {a, b}, core::sub(a.data(), b.data()), [](const core::Tensor& g, const Needs& needs) {
    return Grads{g, needs[1] ? core::neg(g) : core::Tensor()};
  });
}

// dL/da = g * b, dL/db = g * a
Tensor mul(const Tensor& a, const Tensor& b) {
  return record("mul", {a, b}, core::mul(a.data(), b.data()),
                [a = a.data(), b = b.data()](const core::Tensor& g, const Needs& needs) {
                  return Grads{needs[0] ? core::mul(g, b) : core::Tensor(), needs[1] ? core::mul(g, a) : core::Tensor()};
                });
}

// dL/da = g / b, dL/db = -g * a / b^2 = -g * y / b
Tensor div(const Tensor& a, const Tensor& b) {
  core::Tensor y = core::div(a.data(), b.data());
  return record("div", {a, b}, y, [b = b.data(), y](const core::Tensor& g, const Needs& needs) {
    const core::Tensor g_over_b = core::div(g, b);
    return Grads{g_over_b, needs[1] ? core::neg(core::mul(g_over_b, y)) : core::Tensor()};
  });
}

// dL/da = g * b * a^(b-1), dL/db = g * y * log(a)
Tensor pow(const Tensor& a, const Tensor& b) {
  core::Tensor y = core::pow(a.data(), b.data());
  return record("pow", {a, b}, y, [a = a.data(), b = b.data(), y](const core::Tensor& g, const Needs& needs) {
    core::Tensor da, db;
    if (needs[0]) da = core::mul(g, core::mul(b, core::pow(a, core::sub(b, 1.0))));
    if (needs[1]) db = core::mul(g, core::mul(y, core::log(a)));
    return Grads{da, db};
  });
}

// maximum and minimum: the input that wins gets g; where a and b tie, each gets half of g (the
// subgradient PyTorch uses too).  For maximum:
// dL/da = g * ([a > b] + [a == b] / 2), dL/db = g * ([a < b] + [a == b] / 2)
namespace {
Tensor pick(const char* name, const Tensor& a, const Tensor& b, core::Tensor y, bool larger) {
  return record(name, {a, b}, y, [a = a.data(), b = b.data(), larger](const core::Tensor& g, const Needs&) {
    const core::Tensor a_wins = as_numbers(larger ? core::gt(a, b) : core::lt(a, b), g);
    const core::Tensor b_wins = as_numbers(larger ? core::lt(a, b) : core::gt(a, b), g);
    const core::Tensor half_tie = core::mul(as_numbers(core::eq(a, b), g), 0.5);
    return Grads{core::mul(g, core::add(a_wins, half_tie)), core::mul(g, core::add(b_wins, half_tie))};
  });
}
}  // namespace

Tensor maximum(const Tensor& a, const Tensor& b) { return pick("maximum", a, b, core::maximum(a.data(), b.data()), true); }
Tensor minimum(const Tensor& a, const Tensor& b) { return pick("minimum", a, b, core::minimum(a.data(), b.data()), false); }

Tensor add(const Tensor& a, double b) {
  return record("add", {a}, core::add(a.data(), b), [](const core::Tensor& g, const Needs&) { return Grads{g}; });
}
Tensor sub(const Tensor& a, double b) { return add(a, -b); }
Tensor mul(const Tensor& a, double b) {
  return record("mul", {a}, core::mul(a.data(), b), [b](const core::Tensor& g, const Needs&) {
    return Grads{core::mul(g, b)};  // dL/da = g * b
  });
}
Tensor div(const Tensor& a, double b) { return mul(a, 1.0 / b); }

// dL/dx = g * p * x^(p-1)
Tensor pow(const Tensor& x, double p) {
  return unary("pow", x, core::pow(x.data(), p), [p](const core::Tensor& x, const core::Tensor&) {
    return core::mul(core::pow(x, p - 1), p);
  });
}

// dL/dx = -g
Tensor neg(const Tensor& x) {
  return record("neg", {x}, core::neg(x.data()), [](const core::Tensor& g, const Needs&) { return Grads{core::neg(g)}; });
}

// dL/dx = g * sign(x)   (0 at x = 0)
Tensor abs(const Tensor& x) {
  return unary("abs", x, core::abs(x.data()), [](const core::Tensor& x, const core::Tensor&) {
    return core::sub(as_numbers(core::gt(x, zero_like(x)), x), as_numbers(core::lt(x, zero_like(x)), x));
  });
}

// dL/dx = g * y
Tensor exp(const Tensor& x) {
  return unary("exp", x, core::exp(x.data()), [](const core::Tensor&, const core::Tensor& y) { return y; });
}

// dL/dx = g / x
Tensor log(const Tensor& x) {
  return record("log", {x}, core::log(x.data()), [x = x.data()](const core::Tensor& g, const Needs&) {
    return Grads{core::div(g, x)};
  });
}

// dL/dx = g / (2 y)
Tensor sqrt(const Tensor& x) {
  core::Tensor y = core::sqrt(x.data());
  return record("sqrt", {x}, y, [y](const core::Tensor& g, const Needs&) {
    return Grads{core::div(core::mul(g, 0.5), y)};
  });
}

// y = x^(-1/2):  dL/dx = g * (-1/2) y^3
Tensor rsqrt(const Tensor& x) {
  return unary("rsqrt", x, core::rsqrt(x.data()), [](const core::Tensor&, const core::Tensor& y) {
    return core::mul(core::pow(y, 3.0), -0.5);
  });
}

// dL/dx = g * (1 - y^2)
Tensor tanh(const Tensor& x) {
  return unary("tanh", x, core::tanh(x.data()), [](const core::Tensor&, const core::Tensor& y) {
    return core::sub(core::ones({}, y.dtype(), y.device()), core::mul(y, y));
  });
}

// dL/dx = g * y * (1 - y)
Tensor sigmoid(const Tensor& x) {
  return unary("sigmoid", x, core::sigmoid(x.data()), [](const core::Tensor&, const core::Tensor& y) {
    return core::mul(y, core::sub(core::ones({}, y.dtype(), y.device()), y));
  });
}

// dL/dx = g * [x > 0]
Tensor relu(const Tensor& x) {
  return unary("relu", x, core::relu(x.data()), [](const core::Tensor& x, const core::Tensor&) {
    return as_numbers(core::gt(x, zero_like(x)), x);
  });
}

// dL/dx = g * (Phi(x) + x phi(x))
Tensor gelu(const Tensor& x) {
  return unary("gelu", x, core::gelu(x.data()),
               [](const core::Tensor& x, const core::Tensor&) { return core::gelu_derivative(x); });
}

Tensor gelu_tanh(const Tensor& x) {
  return unary("gelu_tanh", x, core::gelu_tanh(x.data()),
               [](const core::Tensor& x, const core::Tensor&) { return core::gelu_tanh_derivative(x); });
}

// dL/da = g where cond, else 0; dL/db = g where not cond, else 0
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  return record("where", {a, b}, core::where(cond.data(), a.data(), b.data()),
                [c = cond.data()](const core::Tensor& g, const Needs& needs) {
                  const core::Tensor zero = zero_like(g);
                  return Grads{needs[0] ? core::where(c, g, zero) : core::Tensor(),
                               needs[1] ? core::where(c, zero, g) : core::Tensor()};
                });
}

// dL/dx = g where the mask is 0, else 0
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value) {
  return record("masked_fill", {x}, core::masked_fill(x.data(), mask.data(), value),
                [m = mask.data()](const core::Tensor& g, const Needs&) {
                  return Grads{core::where(m, zero_like(g), g)};
                });
}

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator-(const Tensor& x) { return neg(x); }

Tensor eq(const Tensor& a, const Tensor& b) { return Tensor(core::eq(a.data(), b.data())); }
Tensor lt(const Tensor& a, const Tensor& b) { return Tensor(core::lt(a.data(), b.data())); }
Tensor gt(const Tensor& a, const Tensor& b) { return Tensor(core::gt(a.data(), b.data())); }

}  // namespace axiom
