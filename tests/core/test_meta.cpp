// The shape-only device (core/meta): ops size their outputs and compute nothing, nothing is
// allocated, a copy to the host reads zeros, and core counts its buffers on their own.
#include "core/core.h"
#include "core/launch.h"
#include "tests/support/reference.h"
#include "tests/support/emulated_cuda.h"

using namespace axiom;
using axiom::test::check_error;
using axiom::test::str;

TEST_CASE("on the meta device an op checks and sizes as on the CPU, and its bytes are counted apart") {
  CHECK(Device::parse("meta") == Device::meta());
  CHECK(Device::meta().str() == "meta");
  const Device meta = Device::meta();
  const core::AllocationStats cpu_before = core::allocation_stats(DeviceType::cpu);
  const core::AllocationStats before = core::allocation_stats(DeviceType::meta);
  const core::Tensor a = core::zeros({64, 32}, Dtype::float32, meta), b = core::zeros({32, 16}, Dtype::float32, meta);
  const core::Tensor c = core::softmax(core::matmul(a, b), -1);
  CHECK(str(c.shape()) == "[64, 16]");
  CHECK(c.device() == meta);
  CHECK(core::allocation_stats(DeviceType::meta).live_bytes - before.live_bytes == (64 * 32 + 32 * 16 + 64 * 16) * 4);
  CHECK(core::allocation_stats(DeviceType::cpu).live_bytes == cpu_before.live_bytes);  // nothing on the CPU
  CHECK(core::sum(c).item() == 0);                                                     // a copy to the host reads zeros
  check_error([&] { core::matmul(a, a); }, {"[matmul]", "[64, 32]"});                  // the same checks as on the CPU
  check_error([&] { core::add(a, core::zeros({64, 32})); }, {"meta", "cpu"});
  const core::Tensor from_host = core::from_vector<float>({1, 2, 3}).to(meta);
  CHECK(from_host.to(Device::cpu()).to_vector<float>() == std::vector<float>{0, 0, 0});
}

TEST_CASE("on the meta device categorical draws nothing and copies nothing to the CPU") {
  const Device meta = Device::meta();
  const core::Tensor logits = core::zeros({64, 256}, Dtype::float32, meta), u = core::zeros({64}, Dtype::float32, meta);
  core::reset_allocation_peak();
  const core::AllocationStats cpu_before = core::allocation_stats(DeviceType::cpu);
  const core::Tensor drawn = core::categorical(logits, u);
  CHECK(drawn.device() == meta);
  CHECK(str(drawn.shape()) == "[64]");
  CHECK(drawn.dtype() == Dtype::int64);
  CHECK(core::allocation_stats(DeviceType::cpu).peak_bytes == cpu_before.live_bytes);  // not even for a moment
  check_error([&] { core::categorical(logits, core::zeros({3}, Dtype::float32, meta)); }, {"[categorical]", "[3]"});
}

namespace {
// Line length 4 cut into two blocks of 2 queries, each seeing the 2 keys of its block.
core::AttentionMask two_blocks() {
  core::BlockPattern p{.length = 4,
                       .block_queries = 2,
                       .block_keys = 2,
                       .queries = {0, 1, 2, 3},
                       .keys = {0, 1, 2, 3},
                       .visible = std::vector<uint8_t>(8, 1)};
  return core::AttentionMask::blocks(std::move(p), "two blocks");
}
}  // namespace

TEST_CASE("the meta device counts the arithmetic of products and attention") {
  const Device meta = Device::meta();
  core::reset_meta_flops();
  const core::Tensor a = core::zeros({3, 64, 32}, Dtype::float32, meta),
                     b = core::zeros({32, 16}, Dtype::float32, meta);
  (void)core::matmul(a, b);
  CHECK(core::meta_flops() == 2.0 * 3 * 64 * 16 * 32);  // 2 M N K for each of the 3 products
  core::reset_meta_flops();
  // qkv [lines 5, L 4, 3D], D = 8 in 2 heads of Dh 4: every line scores L x L pairs in each head
  const core::Tensor qkv = core::zeros({5, 4, 24}, Dtype::float32, meta);
  const core::AttentionResult all = core::attention(qkv, 1, 2, core::AttentionMask::all());
  const double pairs = 5 * 2 * 4 * 4;
  CHECK(core::meta_flops() == 4 * 4 * pairs);
  (void)core::attention_backward(qkv, all.probs, all.output, 1, 2, core::AttentionMask::all());
  CHECK(core::meta_flops() == 12 * 4 * pairs);  // backward: twice the forward
  core::reset_meta_flops();
  (void)core::attention(qkv, 1, 2, two_blocks());  // 2 blocks of 2 x 2 pairs a line and head: half of L x L
  CHECK(core::meta_flops() == 4 * 4 * pairs / 2);
  core::reset_meta_flops();
  CHECK(core::meta_flops() == 0);
}

TEST_SUITE("cuda-emulated") {
  TEST_CASE("the meta device fuses attention where the device it stands for does") {
    axiom::test::ScopedEmulatedCuda emulated;
    const Device meta = Device::meta(), gpu = Device::cuda();
    CHECK(core::attention_fused(meta, two_blocks()));  // as the CPU
    {
      const core::MetaStandsFor stand_in(gpu);
      CHECK_FALSE(core::attention_fused(meta, two_blocks()));  // as CUDA: composed from plain ops
      CHECK(core::attention_fused(meta, core::AttentionMask::causal()));
      CHECK(core::attention_fused(gpu, two_blocks()) == core::attention_fused(meta, two_blocks()));
    }
    CHECK(core::attention_fused(meta, two_blocks()));
  }

}  // TEST_SUITE
