// The shape-only device (core/meta): ops size their outputs and compute nothing, nothing is
// allocated, a copy to the host reads zeros, and core counts its buffers on their own.
#include "core/core.h"
#include "tests/core/reference.h"

using namespace axiom;
using axiom::test::check_error;
using axiom::test::str;

TEST_CASE("on the meta device an op checks and sizes as on the CPU, and its bytes are counted apart") {
  CHECK(core::Device::parse("meta") == core::Device::meta());
  CHECK(core::Device::meta().str() == "meta");
  const core::Device meta = core::Device::meta();
  const core::AllocationStats cpu_before = core::allocation_stats(DeviceType::cpu);
  const core::AllocationStats before = core::allocation_stats(DeviceType::meta);
  const core::Tensor a = core::zeros({64, 32}, Dtype::float32, meta), b = core::zeros({32, 16}, Dtype::float32, meta);
  const core::Tensor c = core::softmax(core::matmul(a, b), -1);
  CHECK(str(c.shape()) == "[64, 16]");
  CHECK(c.device() == meta);
  CHECK(core::allocation_stats(DeviceType::meta).live_bytes - before.live_bytes == (64 * 32 + 32 * 16 + 64 * 16) * 4);
  CHECK(core::allocation_stats(DeviceType::cpu).live_bytes == cpu_before.live_bytes);  // nothing on the CPU
  CHECK(core::sum(c).item() == 0);  // a copy to the host reads zeros
  check_error([&] { core::matmul(a, a); }, {"[matmul]", "[64, 32]"});  // the same checks as on the CPU
  check_error([&] { core::add(a, core::zeros({64, 32})); }, {"meta", "cpu"});
  const core::Tensor from_host = core::from_vector<float>({1, 2, 3}).to(meta);
  CHECK(from_host.to(core::Device::cpu()).to_vector<float>() == std::vector<float>{0, 0, 0});
}
