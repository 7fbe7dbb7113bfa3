// The CUDA backend: cuBLAS for matrix products, CUDA kernels for everything else.
// Each group of kernels lives in its own file, as in core/cpu: elementwise.cu (fill, copy,
// unary, binary, where), reduce.cu, normalize.cu (softmax, layer norm, categorical), index.cu,
// matmul.cpp, attention.cu. Memory: allocator.h. The runtime, cuBLAS and error checks: runtime.h.
//
// Built when AXIOM_CUDA=ON finds the CUDA toolkit. On a machine without a GPU it still loads:
// available() is false, and the first allocation throws "[allocate] no CUDA device: ...".
#pragma once

#include <cstdint>

#include "core/backend.h"
#include "core/cuda/build.h"

namespace AXIOM_CUDA_NAMESPACE {

class CudaBackend : public Backend {
 public:
  std::string_view name() const override { return "cuda"; }
  bool available() const override;
  void synchronize() override;

  MachineMemory memory() override;  // the GPU's (cudaMemGetInfo), plus the allocator's cache
  size_t release_cached_memory() override;
  void* allocate(size_t nbytes) override;
  void deallocate(void* data, size_t nbytes) noexcept override;
  void copy_from_host(void* dst, const void* host_src, size_t nbytes) override;
  void copy_to_host(void* host_dst, const void* src, size_t nbytes) override;

  void fill(const Tensor& out, double value) override;
  void copy(const Tensor& src, const Tensor& dst) override;
  void unary(UnaryOp op, const Tensor& x, const Tensor& out, double scalar) override;
  void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) override;
  void where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) override;
  void count_non_finite(const std::vector<Tensor>& tensors, const Tensor& out) override;
  void reduce(ReduceOp op, const Tensor& x, const std::vector<int>& axes, const Tensor& out, const Tensor& argmax,
              int64_t correction) override;
  void softmax(const Tensor& x, int axis, bool log, const Tensor& out) override;
  void categorical(const Tensor& logits, const Tensor& uniforms, double temperature, const Tensor& out) override;
  void matmul(const Tensor& a, const Tensor& b, const Tensor& out, bool accumulate) override;
  // (all and causal masks only: block patterns take autograd's composite path, Backend::attention_fuses)
  void attention(const Tensor& qkv, int axis, int64_t heads, const AttentionMask& mask, const Tensor& out,
                 const Tensor& probs) override;
  void attention_backward(const Tensor& qkv, const Tensor& probs, const Tensor& grad_out, int axis, int64_t heads,
                          const AttentionMask& mask, const Tensor& grad_qkv) override;
  void layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, const Tensor& out,
                  const Tensor& mean, const Tensor& rstd) override;
  void layer_norm_backward(const Tensor& x, const Tensor& weight, const Tensor& mean, const Tensor& rstd,
                           const Tensor& grad_out, const Tensor& grad_x) override;
  void check_indices(const IndexBounds& bounds, const Tensor& index) override;  // on the GPU, reported later
  void index_select(const Tensor& x, int axis, const Tensor& index, const Tensor& out) override;
  void index_add(const Tensor& out, int axis, const Tensor& index, const Tensor& src) override;
  void gather(const Tensor& x, int axis, const Tensor& index, const Tensor& out) override;
  void scatter_add(const Tensor& out, int axis, const Tensor& index, const Tensor& src) override;
  void cross_entropy(const Tensor& logits, const Tensor& targets, double smoothing, const Tensor& losses,
                     const Tensor& lse) override;
  void cross_entropy_backward(const Tensor& logits, const Tensor& targets, const Tensor& lse, const Tensor& grad_losses,
                              double smoothing, const Tensor& grad_logits) override;
  void adam_update_many(const std::vector<AdamUpdate>& updates) override;
  void adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                   const AdamStep& step) override;
};

// How many index checks were issued so far; read before a wait for the GPU (a copy back,
// synchronize), then, the wait done, report_failed_index_checks throws the Error of the first of
// those checks that failed (index_checks.cu).
uint64_t index_checks_issued();
void report_failed_index_checks(uint64_t issued_before_wait);

}  // namespace AXIOM_CUDA_NAMESPACE
