#include "autograd/gradcheck.h"

#include <cmath>
#include <sstream>

#include "autograd/ops.h"
#include "core/error.h"
#include "core/factory.h"
#include "core/launch.h"
#include "core/random.h"
#include "autograd/internal.h"

namespace axiom {

namespace {

std::vector<int64_t> unravel(int64_t flat, const Shape& shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t i = shape.size(); i-- > 0;) index[i] = flat % shape[i], flat /= shape[i];
  return index;
}

std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double total = 0;
  for (size_t i = 0; i < a.size(); ++i) total += a[i] * b[i];
  return total;
}

// Keeps the worst disagreement seen; fails when it exceeds the tolerance.
struct Comparison {
  const GradcheckOptions& options;
  GradcheckResult result;
  double worst_excess = 0;

  void compare(double numerical, double analytical, const std::string& where) {
    const double error = std::abs(numerical - analytical);
    const double excess = error - (options.atol + options.rtol * std::abs(numerical));
    result.worst_error = std::max(result.worst_error, error);
    if (!(excess <= 0) && (result.ok || excess > worst_excess || std::isnan(excess))) {
      worst_excess = excess;
      result.ok = false;
      std::ostringstream message;
      message.precision(10);
      message << "gradcheck: " << where << ": numerical " << numerical << ", analytical " << analytical
              << " (difference " << error << " > atol " << options.atol << " + rtol " << options.rtol
              << " * |numerical|)";
      result.message = message.str();
    }
  }
};

std::vector<size_t> checked_inputs(const std::vector<Tensor>& inputs) {
  std::vector<size_t> checked;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].requires_grad()) continue;
    if (inputs[i].dtype() != Dtype::float64) {
      throw Error("gradcheck", "input ", i, " is ", inputs[i].dtype(), "; gradcheck needs float64 inputs");
    }
    checked.push_back(i);
  }
  if (checked.empty()) throw Error("gradcheck", "no input requires a gradient: nothing to check");
  return checked;
}

void zero_grads(const std::vector<Tensor>& inputs) {
  for (const Tensor& t : inputs) {
    if (t.defined()) t.zero_grad();
  }
}

// Options that could make a check pass without checking anything are an Error.
void check_options(const char* op, const GradcheckOptions& options) {
  if (!std::isfinite(options.eps) || options.eps <= 0)
    throw Error(op, "eps must be finite and positive, got ", options.eps);
  if (!std::isfinite(options.atol) || options.atol < 0 || !std::isfinite(options.rtol) || options.rtol < 0) {
    throw Error(op, "atol and rtol must be finite and 0 or more, got ", options.atol, " and ", options.rtol);
  }
  if (!options.full_jacobian && options.projections < 1) {
    throw Error(op, "projections must be at least 1, got ", options.projections);
  }
}

// The inputs' values as they were when made, put back when it goes, even when fn throws: the
// finite differences move them, and a caller's tensors must not stay moved.
class RestoredOnExit {
 public:
  RestoredOnExit(const std::vector<Tensor>& inputs, const std::vector<size_t>& checked)
      : inputs_(inputs), checked_(checked) {
    for (size_t c : checked) originals_.push_back(core_tensor(inputs[c]).clone());
  }
  ~RestoredOnExit() {
    try {
      for (size_t c = 0; c < checked_.size(); ++c) core::copy_into(originals_[c], core_tensor(inputs_[checked_[c]]));
      zero_grads(inputs_);
    } catch (const std::exception&) {
      // the function changed an input beyond repair (another dtype or device): the check's own
      // result or Error says more than this would, and a destructor must not throw
    }
  }
  RestoredOnExit(const RestoredOnExit&) = delete;
  RestoredOnExit& operator=(const RestoredOnExit&) = delete;

 private:
  const std::vector<Tensor>& inputs_;
  const std::vector<size_t>& checked_;
  std::vector<core::Tensor> originals_;
};

// The analytic gradient of input i after a backward pass, as numbers (zeros if none arrived).
std::vector<double> analytic_grad(const Tensor& input) {
  if (!input.grad().defined()) return std::vector<double>(static_cast<size_t>(input.numel()), 0.0);
  return input.grad().to_vector<double>();
}

void check_full_jacobian(const std::function<Tensor(const std::vector<Tensor>&)>& fn, const std::vector<Tensor>& inputs,
                         const std::vector<size_t>& checked, const Tensor& y, Comparison& comparison) {
  const int64_t outputs = y.numel();
  const double eps = comparison.options.eps;
  // analytic[c][j * n + k] = d y_j / d x_k for checked input c: one backward per output element.
  std::vector<std::vector<double>> analytic(checked.size());
  for (int64_t j = 0; j < outputs; ++j) {
    zero_grads(inputs);
    core::Tensor seed = core::zeros({outputs}, Dtype::float64, y.device());
    seed.set({j}, 1.0);
    if (y.requires_grad()) y.backward(Tensor(seed.reshape(y.shape())), {.retain_graph = true});
    for (size_t c = 0; c < checked.size(); ++c) {
      const std::vector<double> row = analytic_grad(inputs[checked[c]]);
      analytic[c].insert(analytic[c].end(), row.begin(), row.end());
    }
  }
  // numerical: two forward passes per input element.
  NoGrad no_grad;
  for (size_t c = 0; c < checked.size(); ++c) {
    const core::Tensor& x = core_tensor(inputs[checked[c]]);
    for (int64_t k = 0; k < x.numel(); ++k) {
      const std::vector<int64_t> at = unravel(k, x.shape());
      const double original = x.at(at);
      x.set(at, original + eps);
      const std::vector<double> plus = values(fn(inputs));
      x.set(at, original - eps);
      const std::vector<double> minus = values(fn(inputs));
      x.set(at, original);
      for (int64_t j = 0; j < outputs; ++j) {
        std::ostringstream where;
        where << "Jacobian mismatch for output element " << core::shape_str(unravel(j, y.shape()))
              << " with respect to input " << checked[c] << " element " << core::shape_str(at);
        comparison.compare((plus[j] - minus[j]) / (2 * eps), analytic[c][j * x.numel() + k], where.str());
      }
    }
  }
}

void check_projections(const std::function<Tensor(const std::vector<Tensor>&)>& fn, const std::vector<Tensor>& inputs,
                       const std::vector<size_t>& checked, const Tensor& y, Comparison& comparison) {
  const double eps = comparison.options.eps;
  Generator gen(comparison.options.seed);
  // analytical first, for every projection: v^T J u = sum over inputs of <grad_i(v), u_i>. (The
  // numerical passes below write into the inputs, after which y's graph refuses a backward pass.)
  std::vector<core::Tensor> vs;
  std::vector<std::vector<core::Tensor>> directions;
  std::vector<double> analytical;
  for (int r = 0; r < comparison.options.projections; ++r) {
    vs.push_back(core::randn(y.shape(), gen, Dtype::float64).to(y.device()));
    directions.emplace_back();
    for (size_t i : checked)
      directions[r].push_back(core::randn(inputs[i].shape(), gen, Dtype::float64).to(y.device()));
    zero_grads(inputs);
    if (y.requires_grad()) y.backward(Tensor(vs[r]), {.retain_graph = true});
    analytical.push_back(0);
    for (size_t c = 0; c < checked.size(); ++c) {
      analytical[r] += dot(analytic_grad(inputs[checked[c]]), directions[r][c].to_vector<double>());
    }
  }
  // numerical: (<f(x + eps u), v> - <f(x - eps u), v>) / (2 eps), moving every input at once
  NoGrad no_grad;
  for (int r = 0; r < comparison.options.projections; ++r) {
    auto moved_by = [&](double step) {
      std::vector<core::Tensor> originals;
      for (size_t c = 0; c < checked.size(); ++c) {
        const core::Tensor& x = core_tensor(inputs[checked[c]]);
        originals.push_back(x.clone());
        core::copy_into(core::add(originals.back(), core::mul(directions[r][c], step)), x);
      }
      const double projected = dot(values(fn(inputs)), vs[r].to_vector<double>());
      for (size_t c = 0; c < checked.size(); ++c) core::copy_into(originals[c], core_tensor(inputs[checked[c]]));
      return projected;
    };
    const double numerical = (moved_by(eps) - moved_by(-eps)) / (2 * eps);
    comparison.compare(numerical, analytical[r], "projection " + std::to_string(r) + " (v^T J u over every input)");
  }
}

}  // namespace

GradcheckResult gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                          const std::vector<Tensor>& inputs, const GradcheckOptions& options) {
  check_options("gradcheck", options);
  const std::vector<size_t> checked = checked_inputs(inputs);
  const RestoredOnExit restored(inputs, checked);
  const Tensor y = fn(inputs);
  if (!y.defined() || y.dtype() != Dtype::float64)
    throw Error("gradcheck", "the function must return a float64 tensor");
  Comparison comparison{options, {}};
  if (options.full_jacobian) {
    check_full_jacobian(fn, inputs, checked, y, comparison);
  } else {
    check_projections(fn, inputs, checked, y, comparison);
  }
  return comparison.result;
}

GradcheckResult gradgradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                              const std::vector<Tensor>& inputs, const GradcheckOptions& options) {
  check_options("gradgradcheck", options);
  const std::vector<size_t> checked = checked_inputs(inputs);
  const Tensor y = fn(inputs);
  if (!y.defined() || y.dtype() != Dtype::float64)
    throw Error("gradgradcheck", "the function must return a float64 tensor");
  Generator gen(options.seed + 1);
  const Tensor v(core::randn(y.shape(), gen, Dtype::float64).to(y.device()));
  // d<fn(in), v>/d(in) for every checked input, flattened and joined: [total elements]
  auto first_derivatives_with = [&](const std::vector<Tensor>& in, bool create_graph) {
    const EnableGrad recording;  // also during gradcheck's finite differences, which run under NoGrad
    const Tensor out = fn(in);
    std::vector<Tensor> wanted, flat;
    for (size_t c : checked) wanted.push_back(in[c]);
    std::vector<Tensor> grads(wanted.size());
    if (out.requires_grad()) grads = grad({out}, wanted, {v}, {.create_graph = create_graph, .allow_unused = true});
    for (size_t k = 0; k < wanted.size(); ++k) {
      flat.push_back(grads[k].defined() ? grads[k].reshape({-1})
                                        : Tensor(core::zeros({wanted[k].numel()}, Dtype::float64, wanted[k].device())));
    }
    return concat(flat, 0);
  };
  // The first derivatives with a graph must be those without: a fused op's composite is its op.
  const std::vector<double> fused = values(first_derivatives_with(inputs, false));
  const std::vector<double> composed = values(first_derivatives_with(inputs, true));
  Comparison agreement{options, {}};
  for (size_t i = 0; i < fused.size(); ++i) {
    agreement.compare(fused[i], composed[i],
                      "first derivative " + std::to_string(i) +
                          " (flattened over the checked inputs) without a graph (numerical) and with one (analytical)");
  }
  if (!agreement.result.ok) return agreement.result;
  return gradcheck([&](const std::vector<Tensor>& in) { return first_derivatives_with(in, true); }, inputs, options);
}

}  // namespace axiom
