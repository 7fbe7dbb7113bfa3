// What the shape-only device (core/meta/README.md) tells besides allocation sizes: the arithmetic
// that the work run on it would have done, and which device's fused kernels it stands for.
//
//   core::reset_meta_flops();
//   { core::MetaStandsFor gpu(Device::cuda()); run_step_on_meta(); }  // attention composed where CUDA composes it
//   const double flops = core::meta_flops();
#pragma once

#include <vector>

#include "../device.h"
#include "../gemm_shape.h"

namespace axiom::core {

// Floating-point operations (a multiply-add counts two) of the matrix products and the fused
// attention kernels run on the meta device since the last reset:
//   matmul                 2 M N K for each product [M, K] @ [K, N]
//   attention forward      4 Dh for each (query, key) pair a kernel scores ([L, L] for all and
//                          causal, as the kernels compute them; [P, M] for each block of a block pattern)
//   attention backward     8 Dh for each such pair
//   attention step         4 Dh for each key of the cache
// The elementwise ops, reductions and normalisations are not counted: next to these they are a few
// percent of a transformer's arithmetic.
double meta_flops();
void reset_meta_flops();  // and meta_products()

// The GEMMs behind those FLOPs, as the CPU runs them: each product's plan (core/matrix_layout.h:
// plan_product), and each fused attention kernel's per-line, per-head GEMMs ([L, Dh] @ [Dh, L]
// scores and [L, L] @ [L, Dh] mixing forward; four such backward; a block pattern's in chunks of
// its queries), marked in_attention. `times`: how often it ran.
struct MetaProduct {
  ProductPlan plan;
  int64_t times = 0;
};
std::vector<MetaProduct> meta_products();  // since the last reset_meta_flops, in a fixed order

// While one lives, the meta device fuses attention where `device`'s backend does (by default where
// the CPU's does), on this thread, so a measurement on meta allocates what the same work allocates
// on `device`.
class MetaStandsFor {
 public:
  explicit MetaStandsFor(Device device);
  ~MetaStandsFor();
  MetaStandsFor(const MetaStandsFor&) = delete;
  MetaStandsFor& operator=(const MetaStandsFor&) = delete;

 private:
  Device previous_;
};

}  // namespace axiom::core
