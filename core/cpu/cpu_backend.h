// The CPU backend: OpenBLAS for matrix products, oneTBB-parallel loops for everything else.
// Each family of kernels lives in its own file, named as its op functions (core/ops_*.cpp) are:
// elementwise.cpp (with fill and copy, which the shape ops use), reduce.cpp, matmul.cpp,
// attention.cpp, normalize.cpp (softmax, layer norm, cross-entropy), optimizer.cpp, index.cpp.
#pragma once

#include "core/backend.h"

namespace axiom::core::cpu {

class CpuBackend : public Backend {
 public:
  CpuBackend();  // sets OpenBLAS up: its fastest kernels for this CPU, and the thread count

  std::string_view name() const override { return "cpu"; }

  MachineMemory memory() override;  // the machine's, its allocator's cache counted as available
  size_t release_cached_memory() override;
  std::string matmul_precision_unavailable(MatmulPrecision precision) const override;
  void* allocate(size_t nbytes) override;
  void deallocate(void* data, size_t nbytes) noexcept override;
  void copy_from_host(void* dst, const void* host_src, size_t nbytes) override;
  void copy_to_host(void* host_dst, const void* src, size_t nbytes) override;

  void fill(const Tensor& out, double value) override;
  void uniform(const Tensor& out, uint64_t seed, uint64_t first, double low, double high) override;
  void activation_backward(UnaryOp activation, const Tensor& h, const Tensor& grad, const Tensor& activated) override;
  void copy(const Tensor& src, const Tensor& dst) override;
  void unary(UnaryOp op, const Tensor& x, const Tensor& out, double scalar) override;
  void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) override;
  void where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) override;
  void count_non_finite(const std::vector<Tensor>& tensors, const Tensor& out) override;
  void reduce(ReduceOp op, const Tensor& x, const std::vector<int>& axes, const Tensor& out, const Tensor& argmax,
              int64_t correction) override;
  void to_bfloat16_with_sums(const Tensor& g, const Tensor& rounded, const Tensor& sums) override;
  void activation_backward_to_bfloat16(UnaryOp activation, const Tensor& h, const Tensor& grad, const Tensor& rounded,
                                       const Tensor& sums, const Tensor& activated) override;
  void softmax(const Tensor& x, int axis, bool log, const Tensor& out) override;
  void categorical(const Tensor& logits, const Tensor& uniforms, double temperature, const Tensor& out) override;
  void matmul(const Tensor& a, const Tensor& b, const Tensor& out, bool accumulate) override;
  void linear(const Tensor& a, const Tensor& b, const Tensor& bias, const Tensor& out) override;
  void attention(const Tensor& qkv, int axis, int64_t heads, const AttentionMask& mask, const Tensor& out,
                 const Tensor& probs) override;
  bool attention_fuses(const AttentionMask&) const override { return true; }  // block patterns too
  void attention_step(const Tensor& q, const Tensor& keys_t, const Tensor& values, double scale,
                      const std::vector<uint8_t>& hidden, const Tensor& out) override;
  void attention_backward(const Tensor& qkv, const Tensor& probs, const Tensor& grad_out, int axis, int64_t heads,
                          const AttentionMask& mask, const Tensor& grad_qkv) override;
  void attention_backward_rounded(const Tensor& qkv, const Tensor& probs, const Tensor& grad_out, int axis,
                                  int64_t heads, const AttentionMask& mask, const Tensor& rounded,
                                  const Tensor& sums) override;
  void layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, const Tensor& out,
                  const Tensor& mean, const Tensor& rstd) override;
  void layer_norm_param_grads(const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& grad_out,
                              const Tensor& dweight, const Tensor& dbias) override;
  void layer_norm_backward(const Tensor& x, const Tensor& weight, const Tensor& mean, const Tensor& rstd,
                           const Tensor& grad_out, const Tensor& grad_x) override;
  void index_select(const Tensor& x, int axis, const Tensor& index, const Tensor& out) override;
  void index_add(const Tensor& out, int axis, const Tensor& index, const Tensor& src) override;
  void gather(const Tensor& x, int axis, const Tensor& index, const Tensor& out) override;
  void scatter_add(const Tensor& out, int axis, const Tensor& index, const Tensor& src) override;
  void cross_entropy(const Tensor& logits, const Tensor& targets, double smoothing, const Tensor& losses,
                     const Tensor& lse) override;
  void cross_entropy_backward(const Tensor& logits, const Tensor& targets, const Tensor& lse, const Tensor& grad_losses,
                              double smoothing, const Tensor& grad_logits) override;
  void adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                   const AdamStep& step) override;
};

}  // namespace axiom::core::cpu
