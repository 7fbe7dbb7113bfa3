// Optimizer: the base class of SGD, Adam and AdamW.
//
// An optimizer holds named parameters (leaf tensors that require a gradient, as a Module's
// named_parameters() gives them) and, for each one, the state its update rule keeps between steps
// (a momentum buffer, Adam's moving averages, a step count). step() moves every parameter that has
// a gradient by its update rule; zero_grad() forgets the gradients before the next backward pass.
//
//   axiom::optim::Adam opt(model.named_parameters(), {.lr = 1e-3, .betas = {0.9, 0.98}});
//   opt.zero_grad();
//   loss.backward();
//   opt.step();
//
// The state can be saved and loaded (safetensors holding the tensors, with the hyperparameters and
// step counts as JSON in its metadata), so that a resumed run continues exactly: loading restores
// the tensors, the step counts and every hyperparameter (lr included), as PyTorch's
// load_state_dict does.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "../autograd/tensor.h"
#include "../core/formats/safetensors.h"

namespace axiom::optim {

// Parameters by name, in a fixed order: ("encoder.0.weight", leaf), ...
using NamedParameters = std::vector<std::pair<std::string, Tensor>>;

// What an update rule remembers about one parameter between steps.
struct ParamState {
  int64_t step = 0;                       // updates this parameter has received
  std::map<std::string, Tensor> buffers;  // "momentum_buffer", "exp_avg", ...: the parameter's shape and dtype
};

// An optimizer's whole state, as save() writes it: the buffers of every parameter that has been
// updated, named "<buffer>.<parameter>" ("exp_avg.encoder.0.weight"), and a JSON document with the
// optimizer's type, its hyperparameters and each parameter's name, shape, dtype and step count.
struct OptimizerState {
  NamedTensors tensors;
  std::string json;
};

// Hyperparameters by name, for the state's JSON (flags are 0 or 1).
using Hyperparameters = std::map<std::string, double>;

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // Updates every parameter that has a gradient (the others are left as they are, with no state),
  // in place and without recording anything for autograd.
  void step();
  // Forgets every parameter's gradient: the next backward() starts from zero.
  void zero_grad();

  double lr() const { return lr_; }
  void set_lr(double lr);  // >= 0; a Schedule calls this before each step

  const std::string& name() const { return name_; }  // "SGD", "Adam", "AdamW": the prefix of its errors
  const NamedParameters& parameters() const { return parameters_; }
  // The state of the parameter called `name` (step 0 and no buffers until its first update).
  const ParamState& state_of(const std::string& name) const;

  // --- saving and resuming --------------------------------------------------------------------
  // The tensors are the optimizer's own (not copies): step() never writes into a state tensor but
  // replaces it, so what state() returned stays as it was.
  OptimizerState state() const;
  // Restores a state made by state() of an optimizer of the same type over parameters with the
  // same names and shapes; `origin` names the state's source in errors. Everything is checked
  // before anything changes: on an error the optimizer is as it was.
  void load_state(const OptimizerState& state, const std::string& origin = "optimizer state");
  // A safetensors file with the state's tensors and its JSON under the metadata key "optimizer".
  void save(const std::string& path) const;
  void load(const std::string& path);

 protected:
  // Checks the parameters (each a floating-point leaf that requires a gradient, names unique and
  // not empty, no tensor twice) and the learning rate; errors start with "[<name>]".
  Optimizer(std::string name, NamedParameters parameters, double lr);

  // One update of `param` (the parameter's numbers, detached from it: write into them with
  // copy_into) from `grad` (its gradient, same shape and dtype), keeping what it needs in `state`.
  // Runs under NoGrad, so the update's ops record nothing.
  virtual void update(const Tensor& param, const Tensor& grad, ParamState& state) = 0;

  // The updates of one step: the parameters that have a gradient, in order. The default calls
  // update() for each; an optimizer that can do them all at once overrides it (Adam: on a GPU, a
  // few launches for every parameter rather than one each).
  struct PendingUpdate {
    Tensor param, grad;  // as update() gets them
    ParamState* state;
  };
  virtual void update_all(const std::vector<PendingUpdate>& updates);

  // Every hyperparameter but lr, by name, and their restoration from a saved state (which must
  // validate them all before changing anything).
  virtual Hyperparameters hyperparameters() const = 0;
  virtual void set_hyperparameters(const Hyperparameters& values) = 0;
  // The buffers every updated parameter has under the hyperparameters `values`.
  virtual std::vector<std::string> buffer_names(const Hyperparameters& values) const = 0;

  // For checks in subclasses: `value` (called `what`) must be finite and >= 0, else an Error.
  void check_non_negative(const char* what, double value) const;
  // values.at(key), or an Error naming the missing key.
  double hyperparameter(const Hyperparameters& values, const std::string& key) const;

 private:
  std::string name_;
  NamedParameters parameters_;
  std::vector<ParamState> states_;  // states_[i] belongs to parameters_[i]
  double lr_;
};

}  // namespace axiom::optim
