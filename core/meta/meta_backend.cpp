// The shape-only backend (core/meta/README.md): every kernel does nothing, memory is not allocated,
// and a copy to the host reads zeros. A tensor on it still has a shape, a dtype and a Storage of
// its size, so core's allocation counters see what a piece of work would allocate on the CPU,
// without the memory or the time; and it counts the products' arithmetic (core/meta/meta.h).
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>

#include "core/backend.h"
#include "core/matrix_layout.h"
#include "core/meta/meta.h"
#include "core/tensor.h"

namespace axiom::core {

namespace {

std::atomic<double> flops{0};
std::mutex products_mutex;
std::map<std::pair<GemmShape, int64_t>, MetaProduct> products;  // by (shape, count)

void record(const ProductPlan& plan) {
  std::lock_guard lock(products_mutex);
  MetaProduct& entry = products[{plan.gemm, plan.count}];
  entry.plan = plan;
  ++entry.times;
}

// The GEMMs of `count` (line, head) pairs or blocks of fused attention, each scoring `rows`
// queries against m keys of head width dh.
void record_attention_rows(int64_t rows, int64_t m, int64_t dh, int64_t count, bool backward) {
  auto gemm = [&](GemmShape shape) { record({.gemm = shape, .count = count, .in_attention = true}); };
  if (!backward) {
    gemm({rows, m, dh, false, true});   // S = Q K^T
    gemm({rows, dh, m, false, false});  // O = P V
    return;
  }
  gemm({m, dh, rows, true, false});   // dV = P^T dO
  gemm({rows, m, dh, false, true});   // dP = dO V^T
  gemm({rows, dh, m, false, false});  // dQ = dS K
  gemm({m, dh, rows, true, false});   // dK = dS^T Q
}

// The GEMMs of fused attention with probs [lines, heads, P, M] (P queries scored against M keys
// each) or, for a block pattern, [lines, heads, blocks, P, M], and head width dh: per (line, head)
// the whole [P, M], per block chunks of rows of at most 64^3 / (M dh) (core/cpu/attention.cpp).
void record_attention(const Tensor& probs, int64_t dh, bool backward) {
  const int64_t p = probs.size(-2), m = probs.size(-1), count = probs.numel() / std::max<int64_t>(1, p * m);
  const int64_t chunk = probs.dim() == 5 ? std::max<int64_t>(1, kSmallGemm / std::max<int64_t>(1, m * dh)) : p;
  if (p / chunk > 0) record_attention_rows(chunk, m, dh, count * (p / chunk), backward);
  if (p % chunk > 0) record_attention_rows(p % chunk, m, dh, count, backward);
}
thread_local Device stands_for = Device::cpu();  // (a struct: no std::atomic of it without libatomic)

// The feature width Dh of one head of qkv [..., 3D] split into `heads`.
double head_features(const Tensor& qkv, int64_t heads) { return static_cast<double>(qkv.size(-1) / 3 / heads); }

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
  void uniform(const Tensor&, uint64_t, uint64_t, double, double) override {}
  void copy(const Tensor&, const Tensor&) override {}
  void unary(UnaryOp, const Tensor&, const Tensor&, double) override {}
  void activation_backward(UnaryOp, const Tensor&, const Tensor&, const Tensor&) override {}  // fused, as on the CPU
  void activation_backward_to_bfloat16(UnaryOp, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                       const Tensor&) override {}  // fused, as on the CPU
  void binary(BinaryOp, const Tensor&, const Tensor&, const Tensor&) override {}
  void where(const Tensor&, const Tensor&, const Tensor&, const Tensor&) override {}
  void count_non_finite(const std::vector<Tensor>&, const Tensor&) override {}
  void reduce(ReduceOp, const Tensor&, const std::vector<int>&, const Tensor&, const Tensor&, int64_t) override {}
  void softmax(const Tensor&, int, bool, const Tensor&) override {}
  void categorical(const Tensor&, const Tensor&, double, const Tensor&) override {}
  // probs [lines, heads, L, L] or [lines, heads, blocks, P, M]: one element per scored (query, key) pair
  void attention(const Tensor& qkv, int, int64_t heads, const AttentionMask&, const Tensor&,
                 const Tensor& probs) override {
    flops += 4 * head_features(qkv, heads) * static_cast<double>(probs.numel());
    record_attention(probs, static_cast<int64_t>(head_features(qkv, heads)), /*backward=*/false);
  }
  void attention_backward(const Tensor& qkv, const Tensor& probs, const Tensor&, int, int64_t heads,
                          const AttentionMask&, const Tensor&) override {
    flops += 8 * head_features(qkv, heads) * static_cast<double>(probs.numel());
    record_attention(probs, static_cast<int64_t>(head_features(qkv, heads)), /*backward=*/true);
  }
  // The CPU's rounds and sums as it writes each copied line: no float32 gradient to count (lines too
  // long to copy, which go through one, are not told apart here)
  void attention_backward_rounded(const Tensor& qkv, const Tensor& probs, const Tensor& grad_out, int axis,
                                  int64_t heads, const AttentionMask& mask, const Tensor& rounded,
                                  const Tensor&) override {
    attention_backward(qkv, probs, grad_out, axis, heads, mask, rounded);
  }
  bool attention_fuses(const AttentionMask& mask) const override { return backend(stands_for).attention_fuses(mask); }
  // out [..., 1, Dh] from keys_t [..., Dh, S]: S scores and S rows mixed for every output
  void attention_step(const Tensor&, const Tensor& keys_t, const Tensor&, double, const std::vector<uint8_t>&,
                      const Tensor& out) override {
    flops += 4 * static_cast<double>(out.numel()) * static_cast<double>(keys_t.size(-1));
  }
  // out [..., M, N] = a [..., M, K] @ b [..., K, N]
  void matmul(const Tensor& a, const Tensor& b, const Tensor& out, bool) override {
    flops += 2 * static_cast<double>(out.numel()) * static_cast<double>(a.size(-1));
    if (out.numel() > 0 && a.size(-1) > 0) record(plan_product(a, b));
  }
  void layer_norm(const Tensor&, const Tensor&, const Tensor&, double, const Tensor&, const Tensor&,
                  const Tensor&) override {}
  // The CPU's kernel allocates nothing but the outputs; another device's composes ops, whose
  // temporaries a measurement standing for it must count.
  void layer_norm_param_grads(const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& grad_out,
                              const Tensor& dweight, const Tensor& dbias) override {
    if (stands_for.type != DeviceType::cpu) Backend::layer_norm_param_grads(x, mean, rstd, grad_out, dweight, dbias);
  }
  void layer_norm_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                           const Tensor&) override {}
  void index_select(const Tensor&, int, const Tensor&, const Tensor&) override {}
  void index_add(const Tensor&, int, const Tensor&, const Tensor&) override {}
  void gather(const Tensor&, int, const Tensor&, const Tensor&) override {}
  void scatter_add(const Tensor&, int, const Tensor&, const Tensor&) override {}
  void cross_entropy(const Tensor&, const Tensor&, double, const Tensor&, const Tensor&) override {}
  void cross_entropy_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, double,
                              const Tensor&) override {}
  void adam_update(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const AdamStep&) override {}
  void check_indices(const IndexBounds&, const Tensor&) override {}  // an index of zeros would pass anyway

 private:
  alignas(64) char nowhere_ = 0;
};

}  // namespace

double meta_flops() { return flops.load(); }
void reset_meta_flops() {
  flops = 0;
  std::lock_guard lock(products_mutex);
  products.clear();
}

std::vector<MetaProduct> meta_products() {
  std::lock_guard lock(products_mutex);
  std::vector<MetaProduct> all;
  for (const auto& [key, product] : products) all.push_back(product);
  return all;
}

MetaStandsFor::MetaStandsFor(Device device) : previous_(stands_for) { stands_for = device; }
MetaStandsFor::~MetaStandsFor() { stands_for = previous_; }

std::unique_ptr<Backend> make_meta_backend() { return std::make_unique<MetaBackend>(); }

}  // namespace axiom::core
