// Error messages: the op in brackets first, then the values that were wrong. Devices: the CUDA
// stub's message, and tensors on two devices (with a stand-in backend for DeviceType::cuda).
#include <cstring>
#include <memory>
#include <vector>

#include "tests/support/reference.h"
#include "tests/support/emulated_cuda.h"

namespace core = axiom::core;
using namespace axiom::test;
using axiom::Device;
using axiom::DeviceType;
using axiom::core::Tensor;

TEST_CASE("shape errors show both shapes") {
  CHECK(error_message([] {
          (void)core::matmul(core::zeros({2, 3}), core::zeros({4, 5}));
        }) == "[matmul] shapes [2, 3] and [4, 5] cannot be multiplied (3 != 4)");
  CHECK(error_message([] {
          (void)core::add(core::zeros({2, 3}), core::zeros({4}));
        }) == "[add] shapes [2, 3] and [4] cannot be broadcast (3 vs 4 at axis -1)");
  CHECK(error_message([] {
          (void)core::where(core::zeros({5, 1}, Dtype::uint8), core::zeros({2, 3}), core::zeros({3}));
        }) == "[where] shapes [5, 1] and [2, 3] cannot be broadcast (5 vs 2 at axis -2)");
  CHECK(error_message([] {
          (void)core::masked_fill(core::zeros({3, 4}), core::zeros({2, 3, 4}, Dtype::uint8), 0);
        }) == "[masked_fill] mask of shape [2, 3, 4] does not broadcast to the input's shape [3, 4]");
  CHECK(error_message([] { (void)core::lt(core::zeros({0}), core::zeros({2})); }) ==
        "[lt] shapes [0] and [2] cannot be broadcast (0 vs 2 at axis -1)");
}

TEST_CASE("dtype errors name both dtypes, or the one that is not supported") {
  CHECK(error_message([] { (void)core::mul(core::zeros({2}), core::zeros({2}, Dtype::int64)); }) ==
        "[mul] dtypes float32 and int64 differ; convert one with .to(dtype)");
  CHECK(error_message([] { (void)core::maximum(core::zeros({2}, Dtype::float64), core::zeros({2})); }) ==
        "[maximum] dtypes float64 and float32 differ; convert one with .to(dtype)");
  CHECK(error_message([] { (void)core::exp(core::zeros({2}, Dtype::int64)); }) ==
        "[exp] dtype int64 is not supported (float32 or float64 only)");
  CHECK(error_message([] { (void)core::div(core::zeros({2}, Dtype::int64), core::zeros({2}, Dtype::int64)); }) ==
        "[div] dtype int64 is not supported (float32 or float64 only)");
  CHECK(error_message([] { (void)core::pow(core::zeros({2}, Dtype::uint8), 2.0); }) ==
        "[pow] dtype uint8 is not supported (float32 or float64 only)");
  CHECK(error_message([] { (void)core::where(core::zeros({2}), core::zeros({2}), core::zeros({2})); }) ==
        "[where] the condition must be uint8, got float32");
  CHECK(error_message([] { (void)core::masked_fill(core::zeros({2}), core::zeros({2}, Dtype::int64), 1); }) ==
        "[masked_fill] the mask must be uint8, got int64");
  CHECK(error_message([] {
          (void)core::where(core::zeros({2}, Dtype::uint8), core::zeros({2}), core::zeros({2}, Dtype::int64));
        }) == "[where] dtypes float32 and int64 differ; convert one with .to(dtype)");
}

TEST_CASE("axis errors name the axis and the rank") {
  CHECK(error_message([] {
          (void)core::softmax(core::zeros({2, 3}), 3);
        }) == "[softmax] axis 3 is out of range for a tensor of rank 2 (valid: -2 to 1)");
  CHECK(error_message([] {
          (void)core::sum(core::zeros({2, 3}), {-3});
        }) == "[sum] axis -3 is out of range for a tensor of rank 2 (valid: -2 to 1)");
  CHECK(error_message([] { (void)core::shift(core::zeros({2}), 1, 1); }) ==
        "[shift] axis 1 is out of range for a tensor of rank 1 (valid: -1 to 0)");
  CHECK(error_message([] { (void)core::gather(core::zeros({2}), 1, core::zeros({2}, Dtype::int64)); }) ==
        "[gather] axis 1 is out of range for a tensor of rank 1 (valid: -1 to 0)");
}

TEST_CASE("undefined tensors are reported, not dereferenced") {
  CHECK(error_message([] { (void)core::add(Tensor(), core::zeros({2})); }) == "[add] the first tensor is undefined");
  CHECK(error_message([] { (void)core::add(core::zeros({2}), Tensor()); }) == "[add] the second tensor is undefined");
  CHECK(error_message([] { (void)core::exp(Tensor()); }) == "[exp] the input tensor is undefined");
  CHECK(error_message([] { (void)core::embedding(Tensor(), core::zeros({1}, Dtype::int64)); }) ==
        "[embedding] the weight tensor is undefined");
  CHECK(error_message([] { (void)Tensor().raw_data(); }) == "[data] the tensor is undefined");
}

TEST_CASE("every error is an axiom::Error, a std::runtime_error") {
  CHECK_THROWS_AS((void)core::matmul(core::zeros({2, 3}), core::zeros({4, 5})), axiom::Error);
  CHECK_THROWS_AS((void)core::matmul(core::zeros({2, 3}), core::zeros({4, 5})), std::runtime_error);
  CHECK_THROWS_AS(core::set_num_threads(0), axiom::Error);
  CHECK(error_message([] { core::set_num_threads(0); }) ==
        "[set_num_threads] the thread count must be at least 1, got 0");
}

// --- devices -------------------------------------------------------------------------------------------

TEST_CASE("without CUDA, a CUDA tensor is a clear error") {
  if (axiom::test::real_cuda_available()) {
    MESSAGE("skipped: a CUDA device is present");
    return;
  }
  // Built without CUDA, the stub answers; built with it on a machine without a GPU, the runtime
  // says why there is no device.
  const bool built_with_cuda = core::backend(Device::cuda()).name() == "cuda";
  const std::string expected = built_with_cuda ? "no CUDA device: " : "has no CUDA implementation (built without CUDA)";
  const std::string message = error_message([] { (void)core::zeros({2}, Dtype::float32, Device::cuda()); });
  CHECK(message.find(expected) != std::string::npos);
  CHECK(message.rfind('[', 0) == 0);  // starts with the op in brackets
  check_error([] { (void)core::zeros({2}).to(Device::cuda()); }, {expected});
  check_error([] { (void)core::from_vector<float>({1}, {}, Device::cuda(1)); },
              {"[backend] device cuda:1: one device of each type"});
  CHECK(Device::cuda(1).str() == "cuda:1");
  CHECK(Device::cpu().str() == "cpu");
  CHECK(Device::parse("cuda:0") == Device::cuda());
  CHECK(Device::parse("cpu") == Device::cpu());
  check_error([] { (void)Device::parse("gpu"); }, {"[device] unknown device 'gpu' (cpu, cuda, cuda:N or meta)"});
  check_error([] { (void)Device::parse("cuda:x"); }, {"unknown device 'cuda:x'"});
}

TEST_CASE("tensors on two devices" * doctest::test_suite("cuda-emulated")) {
  const int64_t buffers_before = core::allocation_stats().live_buffers;
  const std::string cuda_backend(core::backend(Device::cuda()).name());
  {
    axiom::test::ScopedEmulatedCuda scope;
    CHECK(core::backend(Device::cuda()).name() == "cuda");
    // Every CUDA tensor lives in this block, so that each is freed before the stub comes back.
    const Tensor host = core::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
    const Tensor a = host.to(Device::cuda(0));
    const Tensor b = core::from_vector<float>({10, 20, 30}, {}, Device::cuda(0));
    CHECK(a.device() == Device::cuda(0));
    CHECK(a.storage() != host.storage());

    SUBCASE("mixing devices names both") {
      CHECK(error_message([&] { (void)core::add(host, a); }) ==
            "[add] tensors are on different devices: cpu and cuda:0");
      CHECK(error_message([&] { (void)core::mul(b, host); }) ==
            "[mul] tensors are on different devices: cuda:0 and cpu");
      check_error([&] { (void)core::matmul(host, a.transpose(0, 1)); }, {"[matmul] ", "cpu", "cuda:0"});
      check_error([&] { core::copy_into(host, a); }, {"[copy_into] ", "cpu", "cuda:0"});
      check_error([&] { (void)core::where(core::ones({3}, Dtype::uint8), b, b); }, {"[where] ", "cpu", "cuda:0"});
      check_error([&] { (void)b.data<float>(); }, {"[data] the tensor is on cuda:0"});
    }
    SUBCASE("ops on two tensors of the device run there") {
      const int64_t before = axiom::cuda_emulator::grid_stats().launches;
      const Tensor c = core::add(a, b);  // [2, 3] + [3]
      CHECK(axiom::cuda_emulator::grid_stats().launches == before + 1);
      CHECK(c.device() == Device::cuda(0));
      CHECK(c.to(Device::cpu()).to_vector<float>() == std::vector<float>{11, 22, 33, 14, 25, 36});
      CHECK(c.at({1, 2}) == 36);  // element access copies to the host
      const Tensor d = core::mul(core::exp(core::zeros({2, 3}, Dtype::float32, Device::cuda())), 2.0);
      CHECK(d.to_vector<float>() == std::vector<float>(6, 2.0f));
      CHECK(c.to_string().find("device=cuda:0") != std::string::npos);
    }
    SUBCASE("to() round-trips values, also for non-contiguous views") {
      Generator gen(61);
      const Tensor x = random_tensor({3, 4}, Dtype::float64, gen);
      const Tensor back = x.to(Device::cuda()).to(Device::cpu());
      CHECK(back.device() == Device::cpu());
      CHECK(back.to_vector<double>() == x.to_vector<double>());
      const Tensor t = a.transpose(0, 1);  // a view on the device
      CHECK(t.to(Device::cpu()).to_vector<float>() == std::vector<float>{1, 4, 2, 5, 3, 6});
      CHECK(a.to(Dtype::float64).to(Device::cpu()).to_vector<double>() == std::vector<double>{1, 2, 3, 4, 5, 6});
    }
  }
  CHECK(core::allocation_stats().live_buffers == buffers_before);
  // The CUDA backend of the build is back.
  CHECK(core::backend(Device::cuda()).name() == cuda_backend);
}
