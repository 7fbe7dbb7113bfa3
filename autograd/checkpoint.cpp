#include "autograd/checkpoint.h"

#include <algorithm>
#include <optional>

#include "core/error.h"
#include "autograd/internal.h"

namespace axiom {

namespace {

// Takes the parameters' gradients out while the second run's backward pass fills them, so that
// afterwards they hold that pass's gradients alone; puts the earlier ones back when it dies (also
// when f throws).
class GradientsSetAside {
 public:
  explicit GradientsSetAside(const std::vector<Tensor>& parameters) : parameters_(parameters) {
    for (const Tensor& p : parameters_) {
      earlier_.push_back(p.grad());
      p.zero_grad();
    }
  }
  ~GradientsSetAside() {
    for (size_t i = 0; i < parameters_.size(); ++i) parameters_[i].impl()->grad = earlier_[i];
  }
  GradientsSetAside(const GradientsSetAside&) = delete;
  GradientsSetAside& operator=(const GradientsSetAside&) = delete;

 private:
  const std::vector<Tensor>& parameters_;
  std::vector<Tensor> earlier_;
};

// Puts the generator back at `state` while alive, and where it was before when it dies.
class GeneratorRewound {
 public:
  GeneratorRewound(Generator* gen, const Generator& state) : gen_(gen) {
    if (!gen_) return;
    now_ = *gen_;
    *gen_ = state;
  }
  ~GeneratorRewound() {
    if (gen_) *gen_ = *now_;
  }
  GeneratorRewound(const GeneratorRewound&) = delete;
  GeneratorRewound& operator=(const GeneratorRewound&) = delete;

 private:
  Generator* gen_;
  std::optional<Generator> now_;
};

// What f's checkpoint keeps for the backward pass.
struct SavedRun {
  std::function<Tensor(const Tensor&)> f;
  core::Tensor x;
  std::vector<Tensor> parameters;
  Generator* gen;
  Generator start;  // the generator before f's first run (unused when gen is null)
};

// The backward rule: f again on x, with recording, and the output's gradient g [f's output shape]
// sent back through it. Returns dL/dx [x's shape] and one gradient per parameter.
Grads run_again(const SavedRun& saved, const Tensor& g, const Needs& needs) {
  if (grad_enabled()) {  // the engine records the rules: a graph of the backward pass is wanted
    throw Error("checkpoint",
                "its backward pass runs f again with a backward pass of its own, which cannot be "
                "differentiated again (create_graph); call f without checkpoint for higher derivatives");
  }
  const GeneratorRewound rewound(saved.gen, saved.start);
  const Tensor x(saved.x, needs[0]);  // a leaf: the second run's backward pass stops here
  Grads grads(needs.size());
  {
    const GradientsSetAside set_aside(saved.parameters);
    const EnableGrad recording;            // also inside a NoGrad of the caller's
    const GradientReadyHooksPaused quiet;  // the outer pass reports the parameters once complete
    const Tensor y = saved.f(x);
    if (y.requires_grad()) y.backward(g);
    for (size_t i = 0; i < saved.parameters.size(); ++i) grads[i + 1] = saved.parameters[i].grad();
  }
  if (needs[0]) grads[0] = x.grad();
  return grads;
}

}  // namespace

Tensor checkpoint(std::function<Tensor(const Tensor&)> f, const Tensor& x, const std::vector<Tensor>& parameters,
                  Generator* gen) {
  if (!f) throw Error("checkpoint", "the function is empty");
  if (!x.defined()) throw Error("checkpoint", "the input is undefined");
  for (size_t i = 0; i < parameters.size(); ++i) {
    const auto same = [&](const Tensor& p) { return p.impl() == parameters[i].impl(); };
    if (!parameters[i].defined() ||
        std::any_of(parameters.begin(), parameters.begin() + static_cast<std::ptrdiff_t>(i), same)) {
      throw Error("checkpoint", "parameter ", i, " is undefined or listed twice");
    }
  }
  std::vector<Tensor> inputs{x};
  inputs.insert(inputs.end(), parameters.begin(), parameters.end());
  const bool wanted =
      grad_enabled() && std::any_of(inputs.begin(), inputs.end(), [](const Tensor& t) { return t.requires_grad(); });
  if (!wanted) return f(x);
  SavedRun saved{std::move(f), core_tensor(x), parameters, gen, gen ? *gen : Generator()};
  Tensor y;
  {
    const NoGrad keep_nothing;
    y = saved.f(x);
  }
  if (!y.defined()) throw Error("checkpoint", "the function returned an undefined tensor");
  return record("checkpoint", inputs, core_tensor(y),
                [saved = std::move(saved)](const Tensor& g, const Needs& needs) { return run_again(saved, g, needs); });
}

}  // namespace axiom
