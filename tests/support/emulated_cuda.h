// EmulatedCuda: a test backend that serves DeviceType::cuda from host memory, running every
// kernel on the CPU backend. With it installed, everything that places tensors on a device
// (Tensor::to, Module::to, the op functions' device checks, a training step or a sampler on
// `cuda`) runs on a machine without a GPU, so the tests check that no layer, loss or sampler
// leaves a tensor on the CPU or reads device memory as host memory. (Device memory here is plain
// host memory, but kernels only ever see host copies: a tensor's data is copied to a CPU
// tensor with the same layout, the CPU kernel runs, and the outputs are copied back.)
//
// The real CUDA kernels are checked by the same tests whenever a GPU is present
// (devices_under_test()).
//
//   {
//     ScopedEmulatedCuda emulated;   // Device::cuda() is served by EmulatedCuda in this scope
//     ...
//   }                                // the previous CUDA backend is back
// No cuda tensor may outlive the scope.
#pragma once

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/tensor.h"

namespace axiom::testing {

using core::Tensor;

class EmulatedCuda : public core::Backend {
 public:
  std::string_view name() const override { return "cuda (emulated on the host)"; }

  void* allocate(size_t nbytes) override { return nbytes ? std::malloc(nbytes) : nullptr; }
  void deallocate(void* data, size_t) override { std::free(data); }
  void copy_from_host(void* dst, const void* src, size_t nbytes) override { if (nbytes) std::memcpy(dst, src, nbytes); }
  void copy_to_host(void* dst, const void* src, size_t nbytes) override { if (nbytes) std::memcpy(dst, src, nbytes); }

  void fill(const Tensor& out, double value) override { run({out}, [&](auto& h) { cpu().fill(h[0], value); }); }
  void copy(const Tensor& src, const Tensor& dst) override { run({dst, src}, [&](auto& h) { cpu().copy(h[1], h[0]); }); }
  void unary(core::UnaryOp op, const Tensor& x, const Tensor& out, double scalar) override {
    run({out, x}, [&](auto& h) { cpu().unary(op, h[1], h[0], scalar); });
  }
  void binary(core::BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) override {
    run({out, a, b}, [&](auto& h) { cpu().binary(op, h[1], h[2], h[0]); });
  }
  void where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) override {
    run({out, cond, a, b}, [&](auto& h) { cpu().where(h[1], h[2], h[3], h[0]); });
  }
  void reduce(core::ReduceOp op, const Tensor& x, const std::vector<int>& axes, const Tensor& out, const Tensor& argmax,
              int64_t correction) override {
    run({out, argmax, x}, [&](auto& h) { cpu().reduce(op, h[2], axes, h[0], h[1], correction); }, 2);
  }
  void softmax(const Tensor& x, int axis, bool log, const Tensor& out) override {
    run({out, x}, [&](auto& h) { cpu().softmax(h[1], axis, log, h[0]); });
  }
  void matmul(const Tensor& a, const Tensor& b, const Tensor& out, bool accumulate) override {
    run({out, a, b}, [&](auto& h) { cpu().matmul(h[1], h[2], h[0], accumulate); });
  }
  void attention(const Tensor& qkv, int axis, int64_t heads, bool causal, const Tensor& out, const Tensor& probs) override {
    run({out, probs, qkv}, [&](auto& h) { cpu().attention(h[2], axis, heads, causal, h[0], h[1]); }, 2);
  }
  void attention_backward(const Tensor& qkv, const Tensor& probs, const Tensor& grad_out, int axis, int64_t heads,
                          const Tensor& grad_qkv) override {
    run({grad_qkv, qkv, probs, grad_out}, [&](auto& h) { cpu().attention_backward(h[1], h[2], h[3], axis, heads, h[0]); });
  }
  void layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, const Tensor& out,
                  const Tensor& mean, const Tensor& rstd) override {
    run({out, mean, rstd, x, weight, bias}, [&](auto& h) { cpu().layer_norm(h[3], h[4], h[5], eps, h[0], h[1], h[2]); }, 3);
  }
  void layer_norm_backward(const Tensor& x, const Tensor& weight, const Tensor& mean, const Tensor& rstd,
                           const Tensor& grad_out, const Tensor& grad_x) override {
    run({grad_x, x, weight, mean, rstd, grad_out}, [&](auto& h) { cpu().layer_norm_backward(h[1], h[2], h[3], h[4], h[5], h[0]); });
  }
  void index_select(const Tensor& x, int axis, const Tensor& index, const Tensor& out) override {
    run({out, x, index}, [&](auto& h) { cpu().index_select(h[1], axis, h[2], h[0]); });
  }
  void index_add(const Tensor& out, int axis, const Tensor& index, const Tensor& src) override {
    run({out, index, src}, [&](auto& h) { cpu().index_add(h[0], axis, h[1], h[2]); });
  }
  void gather(const Tensor& x, int axis, const Tensor& index, const Tensor& out) override {
    run({out, x, index}, [&](auto& h) { cpu().gather(h[1], axis, h[2], h[0]); });
  }
  void scatter_add(const Tensor& out, int axis, const Tensor& index, const Tensor& src) override {
    run({out, index, src}, [&](auto& h) { cpu().scatter_add(h[0], axis, h[1], h[2]); });
  }

  int kernels_run = 0;  // how many kernels ran here (a test can see that an op ran on the device)

 private:
  static core::Backend& cpu() { return core::backend(core::Device::cpu()); }

  // A CPU tensor with t's layout, over a copy of t's whole storage (undefined stays undefined).
  static Tensor host_copy(const Tensor& t) {
    if (!t.defined()) return t;
    auto storage = std::make_shared<core::Storage>(t.storage()->nbytes(), core::Device::cpu());
    if (storage->nbytes()) std::memcpy(storage->data(), t.storage()->data(), storage->nbytes());
    return Tensor(storage, t.shape(), t.strides(), t.offset(), t.dtype());
  }

  // Runs kernel(host copies of `tensors`), then copies the first `outputs` of them back.
  template <typename Kernel>
  void run(const std::vector<Tensor>& tensors, Kernel kernel, size_t outputs = 1) {
    ++kernels_run;
    std::vector<Tensor> host;
    for (const Tensor& t : tensors) host.push_back(host_copy(t));
    kernel(host);
    for (size_t i = 0; i < outputs; ++i) {
      if (tensors[i].defined() && host[i].storage()->nbytes()) {
        std::memcpy(tensors[i].storage()->data(), host[i].storage()->data(), host[i].storage()->nbytes());
      }
    }
  }
};

// Installs EmulatedCuda for DeviceType::cuda for the life of the scope.
class ScopedEmulatedCuda {
 public:
  ScopedEmulatedCuda() : previous_(core::register_backend(core::DeviceType::cuda, std::make_unique<EmulatedCuda>())) {}
  ~ScopedEmulatedCuda() { core::register_backend(core::DeviceType::cuda, std::move(previous_)); }
  ScopedEmulatedCuda(const ScopedEmulatedCuda&) = delete;
  ScopedEmulatedCuda& operator=(const ScopedEmulatedCuda&) = delete;

 private:
  std::unique_ptr<core::Backend> previous_;
};

// Whether the real CUDA backend can run here; when not, the tests that need it print one line
// saying so and skip.
inline bool real_cuda_available() { return core::backend(core::Device::cuda()).available(); }

}  // namespace axiom::testing

#include <doctest/doctest.h>

namespace axiom::testing {

// Runs check(label) on every device that can stand in for `cuda` here: EmulatedCuda always,
// and the real CUDA backend when a GPU is present (otherwise one line, once per test program,
// says it was skipped).
template <typename Check>
void on_every_device(Check check) {
  {
    ScopedEmulatedCuda emulated;
    INFO("on ", std::string(core::backend(core::Device::cuda()).name()));
    check();
  }
  if (real_cuda_available()) {
    INFO("on the real CUDA backend");
    check();
  } else {
    static bool said = false;
    if (!said) MESSAGE("the real CUDA backend is skipped: no CUDA device here (EmulatedCuda ran instead)");
    said = true;
  }
}

}  // namespace axiom::testing
