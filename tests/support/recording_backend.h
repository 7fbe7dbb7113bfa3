// RecordingBackend: a Backend that passes every call on to another one and writes down what was
// called ("fill", "unary exp", "binary ne", "reduce var", ...), so that a test can tell which
// backend methods and which op enum values a harness exercised. Adding a method to Backend breaks
// this class's build until the method is recorded here too, and kBackendMethods lists it.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <utility>

#include "core/backend.h"

namespace axiom::test {

using core::Tensor;

// Every method of core::Backend that does work (name() is left out).
inline const std::set<std::string> kBackendMethods = {"available",
                                                      "synchronize",
                                                      "memory",
                                                      "release_cached_memory",
                                                      "allocate",
                                                      "deallocate",
                                                      "copy_from_host",
                                                      "copy_to_host",
                                                      "fill",
                                                      "copy",
                                                      "unary",
                                                      "binary",
                                                      "where",
                                                      "reduce",
                                                      "softmax",
                                                      "attention",
                                                      "attention_backward",
                                                      "matmul",
                                                      "layer_norm",
                                                      "layer_norm_backward",
                                                      "check_indices",
                                                      "index_select",
                                                      "index_add",
                                                      "gather",
                                                      "scatter_add",
                                                      "cross_entropy",
                                                      "cross_entropy_backward",
                                                      "adam_update",
                                                      "adam_update_many",
                                                      "count_non_finite",
                                                      "matmul_precision_unavailable"};

class RecordingBackend : public core::Backend {
 public:
  RecordingBackend(std::unique_ptr<core::Backend> inner, std::set<std::string>* calls)
      : inner_(std::move(inner)), calls_(calls) {}

  std::string_view name() const override { return inner_->name(); }
  bool available() const override { return note("available"), inner_->available(); }
  void synchronize() override { note("synchronize"), inner_->synchronize(); }
  core::MachineMemory memory() override { return note("memory"), inner_->memory(); }
  std::string matmul_precision_unavailable(core::MatmulPrecision precision) const override {
    return note("matmul_precision_unavailable"), inner_->matmul_precision_unavailable(precision);
  }
  size_t release_cached_memory() override { return note("release_cached_memory"), inner_->release_cached_memory(); }
  void* allocate(size_t nbytes) override { return note("allocate"), inner_->allocate(nbytes); }
  void deallocate(void* data, size_t nbytes) noexcept override {
    try {
      note("deallocate");
    } catch (...) {  // freeing never throws; a test that ran out of memory misses one record
    }
    inner_->deallocate(data, nbytes);
  }
  void copy_from_host(void* dst, const void* src, size_t nbytes) override {
    note("copy_from_host"), inner_->copy_from_host(dst, src, nbytes);
  }
  void copy_to_host(void* dst, const void* src, size_t nbytes) override {
    note("copy_to_host"), inner_->copy_to_host(dst, src, nbytes);
  }
  void fill(const Tensor& out, double value) override { note("fill"), inner_->fill(out, value); }
  void uniform(const Tensor& out, uint64_t seed, uint64_t first, double low, double high) override {
    note("uniform"), inner_->uniform(out, seed, first, low, high);
  }
  void copy(const Tensor& src, const Tensor& dst) override { note("copy"), inner_->copy(src, dst); }
  void unary(core::UnaryOp op, const Tensor& x, const Tensor& out, double scalar) override {
    note("unary", core::op_name(op)), inner_->unary(op, x, out, scalar);
  }
  void binary(core::BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) override {
    note("binary", core::op_name(op)), inner_->binary(op, a, b, out);
  }
  void where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) override {
    note("where"), inner_->where(cond, a, b, out);
  }
  void count_non_finite(const std::vector<Tensor>& tensors, const Tensor& out) override {
    note("count_non_finite"), inner_->count_non_finite(tensors, out);
  }
  void reduce(core::ReduceOp op, const Tensor& x, const std::vector<int>& axes, const Tensor& out, const Tensor& argmax,
              int64_t correction) override {
    note("reduce", core::op_name(op)), inner_->reduce(op, x, axes, out, argmax, correction);
  }
  void softmax(const Tensor& x, int axis, bool log, const Tensor& out) override {
    note("softmax"), inner_->softmax(x, axis, log, out);
  }
  void attention(const Tensor& qkv, int axis, int64_t heads, const core::AttentionMask& mask, const Tensor& out,
                 const Tensor& probs) override {
    note("attention"), inner_->attention(qkv, axis, heads, mask, out, probs);
  }
  void attention_backward(const Tensor& qkv, const Tensor& probs, const Tensor& grad_out, int axis, int64_t heads,
                          const core::AttentionMask& mask, const Tensor& grad_qkv) override {
    note("attention_backward"), inner_->attention_backward(qkv, probs, grad_out, axis, heads, mask, grad_qkv);
  }
  bool attention_fuses(const core::AttentionMask& mask) const override { return inner_->attention_fuses(mask); }
  void matmul(const Tensor& a, const Tensor& b, const Tensor& out, bool accumulate) override {
    note("matmul"), inner_->matmul(a, b, out, accumulate);
  }
  void layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, const Tensor& out,
                  const Tensor& mean, const Tensor& rstd) override {
    note("layer_norm"), inner_->layer_norm(x, weight, bias, eps, out, mean, rstd);
  }
  void layer_norm_backward(const Tensor& x, const Tensor& weight, const Tensor& mean, const Tensor& rstd,
                           const Tensor& grad_out, const Tensor& grad_x) override {
    note("layer_norm_backward"), inner_->layer_norm_backward(x, weight, mean, rstd, grad_out, grad_x);
  }
  void check_indices(const core::IndexBounds& bounds, const Tensor& index) override {
    note("check_indices"), inner_->check_indices(bounds, index);
  }
  void index_select(const Tensor& x, int axis, const Tensor& index, const Tensor& out) override {
    note("index_select"), inner_->index_select(x, axis, index, out);
  }
  void index_add(const Tensor& out, int axis, const Tensor& index, const Tensor& src) override {
    note("index_add"), inner_->index_add(out, axis, index, src);
  }
  void gather(const Tensor& x, int axis, const Tensor& index, const Tensor& out) override {
    note("gather"), inner_->gather(x, axis, index, out);
  }
  void scatter_add(const Tensor& out, int axis, const Tensor& index, const Tensor& src) override {
    note("scatter_add"), inner_->scatter_add(out, axis, index, src);
  }
  void cross_entropy(const Tensor& logits, const Tensor& targets, double smoothing, const Tensor& losses,
                     const Tensor& lse) override {
    note("cross_entropy"), inner_->cross_entropy(logits, targets, smoothing, losses, lse);
  }
  void cross_entropy_backward(const Tensor& logits, const Tensor& targets, const Tensor& lse, const Tensor& grad_losses,
                              double smoothing, const Tensor& grad_logits) override {
    note("cross_entropy_backward"),
        inner_->cross_entropy_backward(logits, targets, lse, grad_losses, smoothing, grad_logits);
  }
  void adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                   const core::AdamStep& step) override {
    note("adam_update"), inner_->adam_update(param, grad, exp_avg, exp_avg_sq, step);
  }
  void adam_update_many(const std::vector<core::AdamUpdate>& updates) override {
    note("adam_update_many"), inner_->adam_update_many(updates);
  }

 private:
  void note(std::string_view method, std::string_view op = {}) const {
    calls_->insert(op.empty() ? std::string(method) : std::string(method) + " " + std::string(op));
  }
  std::unique_ptr<core::Backend> inner_;
  std::set<std::string>* calls_;
};

}  // namespace axiom::test
