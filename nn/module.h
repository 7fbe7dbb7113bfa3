// Module: a piece of a network that owns parameters and submodules, with dotted names.
//
//   class Block : public nn::Module {
//    public:
//     Block(int64_t d, Generator& gen)
//         : norm(register_module("norm", std::make_shared<LayerNorm>(d))),
//           dense(register_module("dense", std::make_shared<Dense>(d, d, gen))) {}
//     std::shared_ptr<LayerNorm> norm;
//     std::shared_ptr<Dense> dense;
//   };
//   block.named_parameters()  ->  {"norm.weight", "norm.bias", "dense.weight", "dense.bias"}
//
// Parameters are axiom::Tensor leaves that require a gradient; a subclass keeps its own handle to
// each (same tensor, same gradient). State goes to and from safetensors files by these names.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../autograd/tensor.h"
#include "../core/formats/safetensors.h"

namespace axiom::nn {

using NamedParameters = std::vector<std::pair<std::string, Tensor>>;
// The parameters' values by name (PyTorch's state_dict): what save() writes and load_state() takes.
using StateDict = std::vector<std::pair<std::string, Tensor>>;

class Module {
 public:
  virtual ~Module() = default;
  Module() = default;
  Module(const Module&) = delete;  // parameters are registered by address of their owner
  Module& operator=(const Module&) = delete;

  // Every parameter of this module and its submodules, depth-first in registration order.
  NamedParameters named_parameters() const;
  std::vector<Tensor> parameters() const;
  int64_t parameter_count() const;  // number of scalars

  // Dropout is active in training mode only. Applies to every submodule.
  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  // Moves (or converts) every parameter in place: handles held elsewhere see the change.
  void to(Device device);
  void to(Dtype dtype);
  void zero_grad();

  // The parameters' values by name (sharing their memory, without their gradients), and back.
  // load_state copies the values in; it checks that the names, shapes and dtypes match exactly and
  // names every missing, unexpected or mismatched entry in its error.
  StateDict state() const;
  void load_state(const StateDict& state);
  void save(const std::string& path, const Metadata& metadata = {}) const;  // safetensors
  void load(const std::string& path);

 protected:
  // Registers a parameter: a leaf that requires a gradient, holding value's numbers (shared, not
  // copied; value's history, if any, is left behind). Returns its handle.
  Tensor register_parameter(const std::string& name, const Tensor& value);
  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    check_name(name);
    children_.emplace_back(name, module);
    return module;
  }

 private:
  void check_name(const std::string& name) const;
  void collect(const std::string& prefix, NamedParameters& out) const;

  NamedParameters parameters_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

// Modules in a numbered list: "blocks.0.attn...", "blocks.1.attn...".
template <typename M>
class ModuleList : public Module {
 public:
  void push_back(std::shared_ptr<M> module) {
    items_.push_back(register_module(std::to_string(items_.size()), std::move(module)));
  }
  size_t size() const { return items_.size(); }
  M& operator[](size_t i) const { return *items_.at(i); }
  const std::shared_ptr<M>& at(size_t i) const { return items_.at(i); }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }

 private:
  std::vector<std::shared_ptr<M>> items_;
};

}  // namespace axiom::nn
