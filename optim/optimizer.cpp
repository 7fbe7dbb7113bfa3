// Optimizer: parameter checks, the step loop, and the state's save and load (optimizer.h).
#include "optim/optimizer.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_map>

#include "core/formats/json.h"
#include "core/launch.h"
#include "autograd/internal.h"

namespace axiom::optim {

using json = nlohmann::ordered_json;  // keeps the keys in the order written

namespace {

// "F32"-style names are the file's business; the JSON says "float32".
Dtype dtype_from_name(const std::string& name, const std::string& op, const std::string& origin) {
  for (Dtype d : {Dtype::float32, Dtype::float64, Dtype::int64, Dtype::uint8}) {
    if (dtype_name(d) == name) return d;
  }
  throw Error(op, origin, ": unknown dtype \"", name, "\"");
}

// --- reading a saved state, part by part (Optimizer::load_state) -----------------------------------

// What a state's JSON says.
struct SavedState {
  Hyperparameters hyperparameters;                     // lr among them
  std::vector<std::pair<std::string, int64_t>> steps;  // (parameter, step), in the file's order
  std::map<std::string, core::Shape> shapes;           // parameter -> shape
};

// Reads and checks a saved state for the optimizer `type`; errors say "[Adam] <origin>: ...".
struct StateReader {
  const std::string& type;
  const std::string& origin;

  SavedState read_json(const std::string& text) const {
    const core::StrictJson parsed = core::read_json(text);
    if (!parsed.ok()) throw Error(type, origin, ": the optimizer state is not valid JSON (", parsed.problem(), ")");
    const json doc(parsed.value);
    try {
      // (version compared as JSON: reading 5e33 as an int is undefined; found by fuzz_optimizer_state)
      if (doc.value("format", "") != "axiom optimizer state" || doc.value("version", json()) != json(1)) {
        throw Error(type, origin, ": not an axiom optimizer state (version 1)");
      }
      const std::string saved_type = doc.at("type").get<std::string>();
      if (saved_type != type) throw Error(type, origin, " holds ", saved_type, " state, not ", type, " state");
      SavedState saved;
      for (const auto& [key, value] : doc.at("hyperparameters").items())
        saved.hyperparameters[key] = value.get<double>();
      for (const json& p : doc.at("parameters")) read_parameter(p, saved);
      return saved;
    } catch (const json::exception& e) {
      throw Error(type, origin, ": malformed optimizer state (", e.what(), ")");
    }
  }

  // One entry of "parameters": {"name": ..., "shape": [...], "dtype": ..., "step": ...}.
  void read_parameter(const json& p, SavedState& saved) const {
    const std::string key = p.at("name").get<std::string>();
    // Integers are checked to be integers first: converting 1e38 to int64 is undefined (found by fuzz_optimizer_state).
    const json& step = p.at("step");
    const json& shape = p.at("shape");
    const auto integer = [](const json& value) { return value.is_number_integer(); };
    if (!integer(step))
      throw Error(type, origin, ": malformed optimizer state (the step of '", key, "' is ", step.dump(),
                  ", not an integer)");
    if (!shape.is_array() || !std::all_of(shape.begin(), shape.end(), integer)) {
      throw Error(type, origin, ": malformed optimizer state (the shape of '", key, "' is ", shape.dump(),
                  ", not an array of integers)");
    }
    saved.steps.emplace_back(key, step.get<int64_t>());
    saved.shapes[key] = shape.get<core::Shape>();
    (void)dtype_from_name(p.at("dtype").get<std::string>(), type, origin);
  }

  // The same hyperparameters as this optimizer has (their values are restored at the end).
  void check_same_hyperparameters(const Hyperparameters& expected, const Hyperparameters& saved) const {
    for (const auto& [key, value] : expected) {
      if (!saved.count(key)) throw Error(type, origin, ": hyperparameter '", key, "' is missing");
    }
    for (const auto& [key, value] : saved) {
      if (!expected.count(key)) throw Error(type, origin, ": unexpected hyperparameter '", key, "'");
    }
  }

  // The same parameters, with the same shapes, each listed once.
  void check_same_parameters(const NamedParameters& parameters, const SavedState& saved) const {
    for (const auto& [key, p] : parameters) {
      const auto it = saved.shapes.find(key);
      if (it == saved.shapes.end()) throw Error(type, origin, ": parameter '", key, "' is missing");
      if (it->second != p.shape()) {
        throw Error(type, origin, ": parameter '", key, "' has shape ", it->second, " there but ", p.shape(), " here");
      }
    }
    const std::map<std::string, size_t> index = positions_of(parameters);
    std::set<std::string> seen;
    for (const auto& [key, step] : saved.steps) {
      if (!index.count(key)) throw Error(type, origin, ": unexpected parameter '", key, "'");
      if (!seen.insert(key).second) throw Error(type, origin, ": parameter '", key, "' is listed twice");
      if (step < 0) throw Error(type, origin, ": parameter '", key, "' has step ", step);
    }
  }

  // The tensors: each "<buffer>.<parameter>" of a known buffer and parameter, in the parameter's
  // shape, converted to its dtype and device; every updated parameter has all its buffers.
  std::vector<ParamState> read_buffers(const NamedTensors& tensors, const NamedParameters& parameters,
                                       const SavedState& saved, const std::vector<std::string>& buffers) const {
    const std::map<std::string, size_t> index = positions_of(parameters);
    std::vector<ParamState> states(parameters.size());
    for (const auto& [key, step] : saved.steps) states[index.at(key)].step = step;
    for (const auto& [tensor_name, tensor] : tensors) {
      const size_t dot = tensor_name.find('.');
      const std::string buffer = tensor_name.substr(0, dot);
      const std::string key = dot == std::string::npos ? "" : tensor_name.substr(dot + 1);
      if (std::find(buffers.begin(), buffers.end(), buffer) == buffers.end() || !index.count(key)) {
        throw Error(type, origin, ": unexpected tensor '", tensor_name, "'");
      }
      const size_t i = index.at(key);
      add_buffer(tensor_name, tensor, parameters[i].second, buffer, states[i]);
    }
    for (size_t i = 0; i < parameters.size(); ++i) {
      for (const std::string& buffer : buffers) {
        if (states[i].step > 0 && !states[i].buffers.count(buffer)) {
          throw Error(type, origin, ": tensor '", buffer, ".", parameters[i].first, "' is missing");
        }
      }
    }
    return states;
  }

  // The saved tensor `name`, buffer `buffer` of parameter p, checked and put into p's state.
  void add_buffer(const std::string& name, const core::Tensor& tensor, const Tensor& p, const std::string& buffer,
                  ParamState& state) const {
    if (tensor.shape() != p.shape()) {
      throw Error(type, origin, ": tensor '", name, "' has shape ", tensor.shape(), ", the parameter ", p.shape());
    }
    if (!is_floating(tensor.dtype())) {
      throw Error(type, origin, ": tensor '", name, "' is ", tensor.dtype(), " (float32 or float64 only)");
    }
    const std::string key = name.substr(buffer.size() + 1);
    if (state.step == 0)
      throw Error(type, origin, ": unexpected tensor '", name, "' (parameter '", key, "' has step 0)");
    if (!state.buffers.emplace(buffer, Tensor(tensor.to(p.device()).to(p.dtype()).contiguous())).second) {
      throw Error(type, origin, ": tensor '", name, "' appears twice");
    }
  }

  // Parameter name -> its position in `parameters`.
  static std::map<std::string, size_t> positions_of(const NamedParameters& parameters) {
    std::map<std::string, size_t> index;
    for (size_t i = 0; i < parameters.size(); ++i) index[parameters[i].first] = i;
    return index;
  }
};

}  // namespace

Optimizer::Optimizer(std::string name, NamedParameters parameters, double lr)
    : name_(std::move(name)), parameters_(std::move(parameters)), lr_(0) {
  if (parameters_.empty()) throw Error(name_, "got no parameters to optimize");
  std::unordered_map<std::string, size_t> names;
  std::unordered_map<const TensorImpl*, std::string> tensors;
  for (size_t i = 0; i < parameters_.size(); ++i) {
    const auto& [key, p] = parameters_[i];
    if (key.empty()) throw Error(name_, "parameter ", i, " has an empty name");
    if (!names.emplace(key, i).second) throw Error(name_, "two parameters are called '", key, "'");
    if (!p.defined()) throw Error(name_, "parameter '", key, "' is an undefined tensor");
    if (!is_floating(p.dtype())) {
      throw Error(name_, "parameter '", key, "' is ", p.dtype(), " (float32 or float64 only)");
    }
    if (!p.is_leaf())
      throw Error(name_, "parameter '", key, "' is not a leaf (it was computed by ", p.grad_fn()->name, ")");
    if (!p.requires_grad()) throw Error(name_, "parameter '", key, "' does not require a gradient");
    const auto [seen, fresh] = tensors.emplace(p.impl().get(), key);
    if (!fresh) throw Error(name_, "parameters '", seen->second, "' and '", key, "' are the same tensor");
  }
  states_.resize(parameters_.size());
  set_lr(lr);
}

void Optimizer::check_non_negative(const char* what, double value) const {
  if (!(value >= 0) || !std::isfinite(value)) throw Error(name_, what, " must be finite and >= 0, got ", value);
}

double Optimizer::hyperparameter(const Hyperparameters& values, const std::string& key) const {
  const auto it = values.find(key);
  if (it == values.end()) throw Error(name_, "hyperparameter '", key, "' is missing");
  return it->second;
}

void Optimizer::set_lr(double lr) {
  check_non_negative("lr", lr);
  lr_ = lr;
}

const ParamState& Optimizer::state_of(const std::string& name) const {
  for (size_t i = 0; i < parameters_.size(); ++i) {
    if (parameters_[i].first == name) return states_[i];
  }
  throw Error(name_, "no parameter is called '", name, "'");
}

void Optimizer::step() {
  // A gradient set by hand could be wrong: check them all before changing anything.
  for (const auto& [key, p] : parameters_) {
    const Tensor grad = p.grad();
    if (grad.defined() && (grad.shape() != p.shape() || grad.dtype() != p.dtype() || grad.device() != p.device())) {
      throw Error(name_, "the gradient of '", key, "' is ", grad.dtype(), " ", grad.shape(), " on ", grad.device(),
                  ", the parameter ", p.dtype(), " ", p.shape(), " on ", p.device());
    }
  }
  NoGrad no_grad;  // an update is not part of any model's computation
  std::vector<PendingUpdate> updates;
  for (size_t i = 0; i < parameters_.size(); ++i) {
    const Tensor& p = parameters_[i].second;
    if (!p.grad().defined()) continue;  // no backward pass reached it: leave it (and its state) alone
    updates.push_back({p.detach(), p.grad().detach(), &states_[i]});
  }
  update_all(updates);
}

void Optimizer::update_all(const std::vector<PendingUpdate>& updates) {
  for (const PendingUpdate& u : updates) update(u.param, u.grad, *u.state);
}

void Optimizer::zero_grad() {
  for (const auto& [key, p] : parameters_) p.zero_grad();
}

// --- state -----------------------------------------------------------------------------------------

OptimizerState Optimizer::state() const {
  json hyper = json::object();
  hyper["lr"] = lr_;
  for (const auto& [key, value] : hyperparameters()) hyper[key] = value;
  json params = json::array();
  OptimizerState out;
  for (size_t i = 0; i < parameters_.size(); ++i) {
    const auto& [key, p] = parameters_[i];
    params.push_back({{"name", key},
                      {"shape", p.shape()},
                      {"dtype", std::string(dtype_name(p.dtype()))},
                      {"step", states_[i].step}});
    // copies: the update changes the buffers in place (core::adam_update), and a snapshot must not move
    for (const auto& [buffer, tensor] : states_[i].buffers)
      out.tensors.emplace_back(buffer + "." + key, core_tensor(tensor).clone());
  }
  out.json = json{
      {"format", "axiom optimizer state"},
      {"version", 1},
      {"type", name_},
      {"hyperparameters", hyper},
      {"parameters",
       params}}.dump();
  return out;
}

void Optimizer::load_state(const OptimizerState& state, const std::string& origin) {
  const StateReader reader{name_, origin};
  const SavedState saved = reader.read_json(state.json);
  Hyperparameters expected = hyperparameters();
  expected["lr"] = lr_;
  reader.check_same_hyperparameters(expected, saved.hyperparameters);
  reader.check_same_parameters(parameters_, saved);
  std::vector<ParamState> states =
      reader.read_buffers(state.tensors, parameters_, saved, buffer_names(saved.hyperparameters));

  // Nothing has changed so far. The hyperparameters check themselves before they change anything;
  // after them nothing can fail.
  Hyperparameters values = saved.hyperparameters;
  const double lr = values.at("lr");
  check_non_negative("lr", lr);
  values.erase("lr");
  set_hyperparameters(values);
  lr_ = lr;
  states_ = std::move(states);
}

void Optimizer::save(const std::string& path) const {
  OptimizerState s = state();
  core::save_safetensors(path, s.tensors, {{"optimizer", s.json}});
}

void Optimizer::load(const std::string& path) {
  core::SafetensorsFile file = core::load_safetensors(path);
  const auto it = file.metadata.find("optimizer");
  if (it == file.metadata.end()) {
    throw Error(name_, "'", path, "' holds no optimizer state (no \"optimizer\" key in its metadata)");
  }
  load_state({std::move(file.tensors), it->second}, "'" + path + "'");
}

}  // namespace axiom::optim
