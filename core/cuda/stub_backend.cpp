// The CUDA backend when axiom is built without CUDA: every call is a clear Error.
// (A real backend in this folder replaces this file when AXIOM_CUDA=ON finds the toolkit.)
#include <memory>

#include "core/backend.h"
#include "core/error.h"

namespace axiom::core {

namespace {

[[noreturn]] void unavailable(std::string_view op) {
  throw Error(op, "has no CUDA implementation (built without CUDA)");
}

class CudaStub : public Backend {
 public:
  std::string_view name() const override { return "cuda (not built)"; }
  bool available() const override { return false; }
  MachineMemory memory() override { unavailable("memory"); }
  void* allocate(size_t) override { unavailable("allocate"); }
  void deallocate(void*, size_t) noexcept override {}  // nothing was ever allocated
  void copy_from_host(void*, const void*, size_t) override { unavailable("to"); }
  void copy_to_host(void*, const void*, size_t) override { unavailable("to"); }
  void fill(const Tensor&, double) override { unavailable("fill"); }
  void copy(const Tensor&, const Tensor&) override { unavailable("copy"); }
  void unary(UnaryOp op, const Tensor&, const Tensor&, double) override { unavailable(op_name(op)); }
  void binary(BinaryOp op, const Tensor&, const Tensor&, const Tensor&) override { unavailable(op_name(op)); }
  void where(const Tensor&, const Tensor&, const Tensor&, const Tensor&) override { unavailable("where"); }
  void count_non_finite(const std::vector<Tensor>&, const Tensor&) override { unavailable("count_non_finite"); }
  void reduce(ReduceOp op, const Tensor&, const std::vector<int>&, const Tensor&, const Tensor&, int64_t) override {
    unavailable(op_name(op));
  }
  void softmax(const Tensor&, int, bool, const Tensor&) override { unavailable("softmax"); }
  void matmul(const Tensor&, const Tensor&, const Tensor&, bool) override { unavailable("matmul"); }
  void attention(const Tensor&, int, int64_t, const AttentionMask&, const Tensor&, const Tensor&) override {
    unavailable("attention");
  }
  void attention_backward(const Tensor&, const Tensor&, const Tensor&, int, int64_t, const AttentionMask&,
                          const Tensor&) override {
    unavailable("attention_backward");
  }
  void layer_norm(const Tensor&, const Tensor&, const Tensor&, double, const Tensor&, const Tensor&,
                  const Tensor&) override {
    unavailable("layer_norm");
  }
  void layer_norm_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                           const Tensor&) override {
    unavailable("layer_norm_backward");
  }
  void index_select(const Tensor&, int, const Tensor&, const Tensor&) override { unavailable("index_select"); }
  void index_add(const Tensor&, int, const Tensor&, const Tensor&) override { unavailable("index_add"); }
  void gather(const Tensor&, int, const Tensor&, const Tensor&) override { unavailable("gather"); }
  void scatter_add(const Tensor&, int, const Tensor&, const Tensor&) override { unavailable("scatter_add"); }
  void cross_entropy(const Tensor&, const Tensor&, double, const Tensor&, const Tensor&) override {
    unavailable("cross_entropy");
  }
  void cross_entropy_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, double,
                              const Tensor&) override {
    unavailable("cross_entropy_backward");
  }
  void adam_update(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const AdamStep&) override {
    unavailable("adam_update");
  }
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend() { return std::make_unique<CudaStub>(); }

}  // namespace axiom::core
