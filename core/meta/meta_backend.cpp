// The shape-only backend (core/meta/README.md): every kernel does nothing, memory is not allocated,
// and a copy to the host reads zeros. A tensor on it still has a shape, a dtype and a Storage of
// its size, so core's allocation counters see what a piece of work would allocate on the CPU,
// without the memory or the time.
#include <cstring>

#include "core/backend.h"
#include "core/tensor.h"

namespace axiom::core {

namespace {

class MetaBackend : public Backend {
 public:
  std::string_view name() const override { return "meta"; }
  // Nothing is allocated: every buffer gets this one address, which no kernel reads.
  void* allocate(size_t) override { return &nowhere_; }
  void deallocate(void*, size_t) noexcept override {}
  void copy_from_host(void*, const void*, size_t) override {}
  void copy_to_host(void* host_dst, const void*, size_t nbytes) override { std::memset(host_dst, 0, nbytes); }

  // The kernels: nothing to compute. Their outputs were sized by the op functions, as on any device.
  void fill(const Tensor&, double) override {}
  void copy(const Tensor&, const Tensor&) override {}
  void unary(UnaryOp, const Tensor&, const Tensor&, double) override {}
  void activation_backward(UnaryOp, const Tensor&, const Tensor&, const Tensor&) override {}  // fused, as on the CPU
  void binary(BinaryOp, const Tensor&, const Tensor&, const Tensor&) override {}
  void where(const Tensor&, const Tensor&, const Tensor&, const Tensor&) override {}
  void count_non_finite(const std::vector<Tensor>&, const Tensor&) override {}
  void reduce(ReduceOp, const Tensor&, const std::vector<int>&, const Tensor&, const Tensor&, int64_t) override {}
  void softmax(const Tensor&, int, bool, const Tensor&) override {}
  void attention(const Tensor&, int, int64_t, const AttentionMask&, const Tensor&, const Tensor&) override {}
  void attention_backward(const Tensor&, const Tensor&, const Tensor&, int, int64_t, const AttentionMask&, const Tensor&) override {}
  bool attention_fuses(const AttentionMask&) const override { return true; }  // as the CPU backend does
  void attention_step(const Tensor&, const Tensor&, const Tensor&, double, const std::vector<uint8_t>&, const Tensor&) override {}
  void matmul(const Tensor&, const Tensor&, const Tensor&, bool) override {}
  void layer_norm(const Tensor&, const Tensor&, const Tensor&, double, const Tensor&, const Tensor&, const Tensor&) override {}
  void layer_norm_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&) override {}
  void index_select(const Tensor&, int, const Tensor&, const Tensor&) override {}
  void index_add(const Tensor&, int, const Tensor&, const Tensor&) override {}
  void gather(const Tensor&, int, const Tensor&, const Tensor&) override {}
  void scatter_add(const Tensor&, int, const Tensor&, const Tensor&) override {}
  void cross_entropy(const Tensor&, const Tensor&, double, const Tensor&, const Tensor&) override {}
  void cross_entropy_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, double, const Tensor&) override {}
  void adam_update(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const AdamStep&) override {}
  void check_indices(const IndexBounds&, const Tensor&) override {}  // an index of zeros would pass anyway

 private:
  alignas(64) char nowhere_ = 0;
};

}  // namespace

std::unique_ptr<Backend> make_meta_backend() { return std::make_unique<MetaBackend>(); }

}  // namespace axiom::core
