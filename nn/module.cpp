#include "nn/module.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/launch.h"
#include "autograd/internal.h"

namespace axiom::nn {

void Module::check_name(const std::string& name) const {
  if (name.empty() || name.find('.') != std::string::npos) {
    throw Error("Module", "a parameter or submodule name must be non-empty and without dots, got '", name, "'");
  }
  const bool taken =
      std::any_of(parameters_.begin(), parameters_.end(), [&](const auto& p) { return p.first == name; }) ||
      std::any_of(children_.begin(), children_.end(), [&](const auto& c) { return c.first == name; });
  if (taken) throw Error("Module", "the name '", name, "' is registered twice");
}

Tensor Module::register_parameter(const std::string& name, const Tensor& value) {
  check_name(name);
  if (!value.defined()) throw Error("Module", "parameter '", name, "' is an undefined tensor");
  if (value.requires_grad()) {
    // another parameter, say: sharing its numbers would tie the two silently, each with its own
    // gradient and its own update
    throw Error("Module", "parameter '", name,
                "' is given a tensor that requires a gradient; register fresh values "
                "(axiom::normal, zeros, ...) or value.detach() to share its numbers on purpose");
  }
  Tensor parameter(core_tensor(value), /*requires_grad=*/true);  // a leaf of its own, holding value's numbers
  parameters_.emplace_back(name, parameter);
  return parameter;
}

void Module::collect(const std::string& prefix, NamedParameters& out) const {
  for (const auto& [name, parameter] : parameters_) out.emplace_back(prefix + name, parameter);
  for (const auto& [name, child] : children_) child->collect(prefix + name + ".", out);
}

NamedParameters Module::named_parameters() const {
  NamedParameters out;
  collect("", out);
  return out;
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (auto& [name, parameter] : named_parameters()) out.push_back(parameter);
  return out;
}

int64_t Module::parameter_count() const {
  int64_t count = 0;
  for (const auto& [name, parameter] : named_parameters()) count += parameter.numel();
  return count;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [name, child] : children_) child->train(on);
}

void Module::to(Device device) {
  for (auto& [name, parameter] : named_parameters()) parameter.impl()->data = core_tensor(parameter).to(device);
}

void Module::to(Dtype dtype) {
  if (!is_floating(dtype)) throw Error("Module::to", "parameters must be float32 or float64, not ", dtype);
  for (auto& [name, parameter] : named_parameters()) parameter.impl()->data = core_tensor(parameter).to(dtype);
}

void Module::zero_grad() {
  for (auto& [name, parameter] : named_parameters()) parameter.zero_grad();
}

StateDict Module::state() const {
  StateDict out;
  for (const auto& [name, parameter] : named_parameters()) out.emplace_back(name, parameter.detach());
  return out;
}

void Module::load_state(const StateDict& state) {
  std::map<std::string, Tensor> given(state.begin(), state.end());
  std::vector<std::string> problems;
  const NamedParameters own = named_parameters();
  for (const auto& [name, parameter] : own) {
    auto found = given.find(name);
    if (found == given.end()) {
      problems.push_back("missing '" + name + "'");
    } else if (!found->second.defined()) {
      problems.push_back("'" + name + "' is an undefined tensor");
    } else if (found->second.shape() != parameter.shape() || found->second.dtype() != parameter.dtype()) {
      std::ostringstream line;
      line << "'" << name << "' is " << found->second.dtype() << " " << core::shape_str(found->second.shape())
           << ", the model has " << parameter.dtype() << " " << core::shape_str(parameter.shape());
      problems.push_back(line.str());
    }
  }
  std::set<std::string> known;
  for (const auto& [name, parameter] : own) known.insert(name);
  for (const auto& [name, tensor] : state) {
    if (!known.count(name)) problems.push_back("unexpected '" + name + "'");
  }
  if (!problems.empty()) {
    std::string joined;
    for (const std::string& p : problems) joined += (joined.empty() ? "" : "; ") + p;
    throw Error("load_state", joined);
  }
  for (const auto& [name, parameter] : own)
    core::copy_into(core_tensor(given.at(name)).to(parameter.device()), core_tensor(parameter));
}

void Module::save(const std::string& path, const Metadata& metadata) const {
  NamedTensors values;  // the file format's own currency
  for (const auto& [name, value] : state()) values.emplace_back(name, core_tensor(value));
  core::save_safetensors(path, values, metadata);
}

void Module::load(const std::string& path) {
  const core::SafetensorsFile file = core::load_safetensors(path);  // its errors name the file
  try {
    load_state(StateDict(file.tensors.begin(), file.tensors.end()));
  } catch (const Error& e) {
    throw Error("load", path, ": ", e.what());
  }
}

}  // namespace axiom::nn
