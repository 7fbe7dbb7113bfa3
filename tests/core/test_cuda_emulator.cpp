// The CUDA emulator itself (core/cuda/emulator): barriers, shared memory, thread orders, launch
// limits, and the runtime's and cuBLAS's checks. This file is compiled as the emulated core/cuda
// is, against the stand-in <cuda_runtime.h>, so its small kernels are launched exactly as the
// backend's are.
#include <cmath>
#include <vector>

#include "core/cuda/allocator.h"
#include "core/cuda/kernels.cuh"
#include "cublas_v2.h"
#include "tests/support/reference.h"
#include "tests/support/emulated_cuda.h"

using namespace axiom;
using namespace axiom::test;
using axiom::core::Tensor;
namespace emulator = axiom::cuda_emulator;
using core::cuda::launch;

namespace {

// --- small kernels ------------------------------------------------------------------------------

// out[block] = the sum of in[block * blockDim + t] over the block's threads, by block_reduce.
__global__ void block_sums(const double* in, double* out) {
  const double total = core::cuda::block_reduce(in[blockIdx.x * blockDim.x + threadIdx.x], core::cuda::Sum{});
  if (threadIdx.x == 0) out[blockIdx.x] = total;
}

// out[t] = what thread t got from a shuffle of the thread indices: lane ^ 5 (xor) or lane + 3 (down).
__global__ void shuffled_indices(double* out, bool down) {
  const double mine = threadIdx.x;
  out[threadIdx.x] = down ? __shfl_down_sync(0xffffffffu, mine, 3) : __shfl_xor_sync(0xffffffffu, mine, 5);
}

// Lanes of the first warp past `reaching` return before the shuffle.
__global__ void partial_shuffle(double* out, unsigned reaching) {
  if (threadIdx.x >= reaching) return;
  out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1.0, 1);
}

// out[w] = the sum of in over warp w, by warp_reduce (every lane checks it got the same).
__global__ void warp_sums(const double* in, double* out) {
  const double total = core::cuda::warp_reduce(in[threadIdx.x], core::cuda::Sum{});
  if (threadIdx.x % 32 == 0) out[threadIdx.x / 32] = total;
  if (total != __shfl_xor_sync(0xffffffffu, total, 31)) out[threadIdx.x / 32] = -1;
}

// Each thread writes its slot of shared memory and reads its right neighbour's, with or without a
// barrier between.
__global__ void neighbours(double* out, bool barrier) {
  __shared__ double slots[64];
  slots[threadIdx.x] = threadIdx.x;
  if (barrier) __syncthreads();
  out[threadIdx.x] = slots[(threadIdx.x + 1) % blockDim.x];
}

// Only the first `waiting` threads reach the barrier; the rest return.
__global__ void partial_barrier(unsigned waiting) {
  if (threadIdx.x >= waiting) return;
  __syncthreads();
}

// Even and odd threads wait at two different barriers.
__global__ void split_barrier() {
  if (threadIdx.x % 2 == 0) {
    __syncthreads();
  } else {
    __syncthreads();
  }
}

__global__ void count_into(double* total) { atomicAdd(total, 1.0); }

__global__ void does_nothing(double*) {}

// Writes n values 0, 1, ... (one thread each).
__global__ void write_first(double* out, unsigned n) {
  if (threadIdx.x < n) out[threadIdx.x] = threadIdx.x;
}

// A device buffer of `values`, and reading one back.
struct DeviceBuffer {
  size_t n;
  double* data = nullptr;
  explicit DeviceBuffer(const std::vector<double>& values) : n(values.size()) {
    core::cuda::check(cudaMalloc(reinterpret_cast<void**>(&data), n * sizeof(double)), "test");
    core::cuda::check(cudaMemcpy(data, values.data(), n * sizeof(double), cudaMemcpyHostToDevice), "test");
  }
  ~DeviceBuffer() { cudaFree(data); }
  std::vector<double> read() const {
    std::vector<double> values(n);
    core::cuda::check(cudaMemcpy(values.data(), data, n * sizeof(double), cudaMemcpyDeviceToHost), "test");
    return values;
  }
};

const emulator::ThreadOrder kOrders[] = {emulator::ThreadOrder::forward, emulator::ThreadOrder::reverse,
                                         emulator::ThreadOrder::shuffled};

}  // namespace

TEST_SUITE("cuda-emulated") {
  TEST_CASE("block_reduce sums a block in every thread order") {
    std::vector<double> values(4 * 256);
    for (size_t i = 0; i < values.size(); ++i) values[i] = double(i % 97) - 40;
    for (const auto order : kOrders) {
      CAPTURE(emulator::order_name(order));
      axiom::test::ScopedEmulatedCuda emulated(order);
      DeviceBuffer in(values), out(std::vector<double>(4));
      const auto before = emulator::grid_stats();
      launch("test", block_sums, 4, 256, in.data, out.data);
      for (int b = 0; b < 4; ++b) {
        double expected = 0;
        for (int t = 0; t < 256; ++t) expected += values[b * 256 + t];
        CHECK(out.read()[b] == expected);
      }
      const auto after = emulator::grid_stats();
      CHECK(after.launches == before.launches + 1);
      CHECK(after.blocks == before.blocks + 4);
      CHECK(after.threads == before.threads + 4 * 256);
      CHECK(after.barriers == before.barriers + 4 * 2);  // per block: the warps' results written, then read
    }
  }

  TEST_CASE(
      "warp shuffles swap the values of a warp's lanes in every thread order and a lane that never comes is an Error") {
    for (const auto order : kOrders) {
      CAPTURE(emulator::order_name(order));
      axiom::test::ScopedEmulatedCuda emulated(order);
      DeviceBuffer out(std::vector<double>(64));
      for (const bool down : {false, true}) {
        launch("test", shuffled_indices, 1, 64, out.data, down);
        const std::vector<double> got = out.read();
        for (unsigned t = 0; t < 64; ++t) {
          const unsigned lane = t % 32, source = down ? (lane + 3 < 32 ? lane + 3 : lane) : lane ^ 5;
          CHECK(got[t] == double(t - lane + source));
        }
      }
      std::vector<double> values(96);
      for (size_t i = 0; i < values.size(); ++i) values[i] = double(i % 13) - 6.5;
      DeviceBuffer in(values), sums(std::vector<double>(3));
      launch("test", warp_sums, 1, 96, in.data, sums.data);
      for (int w = 0; w < 3; ++w) {
        double expected = 0;
        for (int t = 0; t < 32; ++t) expected += values[w * 32 + t];
        CHECK(sums.read()[w] == expected);
      }
      test::check_error([&] { launch("test", partial_shuffle, 1, 32, out.data, 20u); },
                        {"lanes of the warp of thread", "wait at the warp shuffle at", "ended without reaching it"});
      test::check_error([&] { launch("test", shuffled_indices, 1, 48, out.data, false); },
                        {"only whole warps of 32 are emulated"});
    }
  }

  TEST_CASE("a missing barrier reads poisoned shared memory in one thread order but not in all") {
    std::vector<double> with_barrier, forward, reverse;
    for (const auto order : {emulator::ThreadOrder::forward, emulator::ThreadOrder::reverse}) {
      axiom::test::ScopedEmulatedCuda emulated(order);
      DeviceBuffer out(std::vector<double>(64));
      launch("test", neighbours, 1, 64, out.data, true);
      for (unsigned t = 0; t < 64; ++t) CHECK(out.read()[t] == (t + 1) % 64);
      launch("test", neighbours, 1, 64, out.data, false);
      (order == emulator::ThreadOrder::forward ? forward : reverse) = out.read();
    }
    // In order, thread t reads slot t + 1 before thread t + 1 wrote it: 0xFF bytes, a NaN.
    for (unsigned t = 0; t < 63; ++t) CHECK(std::isnan(forward[t]));
    CHECK(forward[63] == 0);
    // In reverse, every slot but the last was written in time.
    for (unsigned t = 1; t < 63; ++t) CHECK(reverse[t] == t + 1);
    CHECK(std::isnan(reverse[63]));
  }

  TEST_CASE("a barrier that some threads never reach is an Error naming the kernel and so are two barriers") {
    axiom::test::ScopedEmulatedCuda emulated;
    test::check_error(
        [] { launch("reduce", partial_barrier, 2, 64, 16u); },
        {"[reduce] kernel launched at ", "test_cuda_emulator.cpp:", "block (0, 0, 0)",
         "16 of 64 threads wait at the __syncthreads() at ", "partial_barrier", "the other 48 ended without reaching"});
    test::check_error([] { launch("softmax", split_barrier, 1, 32); },
                      {"[softmax] kernel launched at ",
                       "threads wait at two different __syncthreads(): thread (0, 0, 0) at ", "thread (1, 0, 0) at "});
    // The runner is usable again afterwards.
    DeviceBuffer total(std::vector<double>{0});
    launch("test", count_into, 3, 100, total.data);
    CHECK(total.read()[0] == 300);
    CHECK_THROWS_WITH_AS((void)threadIdx, doctest::Contains("outside a kernel"), Error);
  }

  TEST_CASE("launches CUDA would refuse are cudaErrorInvalidConfiguration found by check_launch") {
    axiom::test::ScopedEmulatedCuda emulated;
    DeviceBuffer out(std::vector<double>(1));
    const auto before = emulator::grid_stats().launches;
    test::check_error([&] { launch("matmul", does_nothing, 1, dim3(32, 33), out.data); },
                      {"[matmul] CUDA error cudaErrorInvalidConfiguration: invalid configuration argument",
                       "more than 1024 threads"});
    test::check_error([&] { launch("copy", does_nothing, 0, 32, out.data); }, {"[copy] ", "an empty grid (0, 1, 1)"});
    test::check_error([&] { launch("copy", does_nothing, dim3(1, 70000), 32, out.data); },
                      {"beyond (2^31 - 1, 65535, 65535)"});
    test::check_error([&] { launch("copy", does_nothing, 1, dim3(1, 1, 65), out.data); }, {"beyond (1024, 1024, 64)"});
    test::check_error([&] { launch("copy", does_nothing, 1, 1025, out.data); },
                      {"block (1025, 1, 1) is beyond (1024, 1024, 64)"});
    CHECK(emulator::grid_stats().launches == before);  // none of them ran
    CHECK(cudaGetLastError() == cudaSuccess);          // and the error was cleared when reported
  }

  TEST_CASE("pointers of kernels and copies must lie inside live device allocations") {
    axiom::test::ScopedEmulatedCuda emulated;
    double host = 0;
    DeviceBuffer device(std::vector<double>(4));
    test::check_error(
        [&] { launch("gather", does_nothing, 1, 32, &host); },
        {"[gather] kernel launched at ", "argument 0, the pointer ", "is not inside a device allocation"});
    test::check_error([&] { launch("gather", count_into, 1, 1, device.data + 4); },
                      {"argument 0", "is not inside a device allocation"});
    test::check_error([&] { core::cuda::check(cudaMemcpy(&host, &host, 8, cudaMemcpyHostToDevice), "to"); },
                      {"[to] CUDA error cudaErrorInvalidValue: invalid argument (cudaMemcpy: the destination ",
                       "(8 bytes) is not inside a device allocation"});
    test::check_error([&] { core::cuda::check(cudaMemcpy(device.data + 3, &host, 16, cudaMemcpyHostToDevice), "to"); },
                      {"runs 8 bytes past the end of the device allocation"});
    test::check_error([&] { core::cuda::check(cudaMemcpy(device.data, device.data, 8, cudaMemcpyHostToDevice), "to"); },
                      {"the source ", "lies in device memory, where host memory was named"});
    test::check_error([&] { core::cuda::check(cudaFree(device.data + 1), "free"); },
                      {"cudaErrorInvalidDevicePointer", "is not the start of a live device allocation"});
    DeviceBuffer total(std::vector<double>{0});
    CHECK(emulator::is_device_range(total.data, 8));
    CHECK_FALSE(emulator::is_device_range(&host, 8));
  }

  TEST_CASE("mapped host memory is a kernel's to write and the host's to read and nothing past it is") {
    axiom::test::ScopedEmulatedCuda emulated;
    void* host = nullptr;
    core::cuda::check(cudaHostAlloc(&host, 2 * sizeof(double), cudaHostAllocMapped), "test");
    void* device = nullptr;
    core::cuda::check(cudaHostGetDevicePointer(&device, host, 0), "test");
    auto* total = static_cast<double*>(device);
    total[0] = 0;
    launch("count", count_into, 4, 32, total);  // an atomicAdd from every thread
    CHECK(static_cast<double*>(host)[0] == 128);
    test::check_error([&] { launch("count", count_into, 1, 1, total + 2); },
                      {"argument 0", "is not inside a device allocation"});
    test::check_error([&] { core::cuda::check(cudaHostGetDevicePointer(&device, total + 2, 0), "test"); },
                      {"not inside a cudaHostAlloc block"});
    test::check_error([&] { core::cuda::check(cudaFreeHost(total + 1), "test"); },
                      {"is not the start of a live cudaHostAlloc block"});
    core::cuda::check(cudaFreeHost(host), "test");
    CHECK_FALSE(emulator::is_mapped_host_range(host, 8));
  }

  TEST_CASE("a kernel writing past its tensor is a memory fault and a freed tensor's memory is no kernel's") {
    axiom::test::ScopedEmulatedCuda emulated;
    (void)emulator::take_memory_faults();
    double* freed = nullptr;
    {
      const Tensor t = core::zeros({3}, Dtype::float64, Device::cuda());
      launch("test", write_first, 1, 32, core::cuda::device_data<double>(t), 3u);
      CHECK(t.to(Device::cpu()).to_vector<double>() == std::vector<double>{0, 1, 2});
      CHECK(emulator::take_memory_faults().empty());
      launch("test", write_first, 1, 32, core::cuda::device_data<double>(t), 4u);  // one too many
      freed = core::cuda::device_data<double>(t);
    }
    const std::vector<std::string> faults = emulator::take_memory_faults();
    REQUIRE(faults.size() == 1);
    CHECK(faults[0].find("a kernel wrote past the end of the 24 bytes at ") == 0);
    check_error([&] { launch("test", write_first, 1, 32, freed, 1u); },
                {"argument 0, the pointer ", "is not inside a device allocation"});
  }

  TEST_CASE("asking for more than the emulated GPU holds is the allocator's out-of-memory Error") {
    axiom::test::ScopedEmulatedCuda emulated;
    test::check_error([] { (void)core::empty({int64_t(3) << 30}, Dtype::float32, Device::cuda()); },
                      {"[allocate] out of GPU memory: asked for 12884901888 bytes with ", " of 4294967296 bytes free"});
  }

  TEST_CASE("the cuBLAS stand-in computes column-major products and validates as cuBLAS does") {
    axiom::test::ScopedEmulatedCuda emulated;
    // column-major A [2 x 3] = [1 3 5; 2 4 6], B [3 x 1] = [1; 1; 1] -> C = [9; 12]
    DeviceBuffer a({1, 2, 3, 4, 5, 6}), b({1, 1, 1}), c({0, 0});
    const std::vector<const double*> host_pointers{a.data, b.data, c.data};
    DeviceBuffer pointer_block(std::vector<double>(3));
    core::cuda::check(cudaMemcpy(pointer_block.data, host_pointers.data(), 3 * sizeof(void*), cudaMemcpyHostToDevice),
                      "test");
    auto* arrays = reinterpret_cast<const double* const*>(pointer_block.data);
    auto* c_array = reinterpret_cast<double* const*>(pointer_block.data + 2);
    cublasHandle_t handle = nullptr;
    REQUIRE(cublasCreate(&handle) == CUBLAS_STATUS_SUCCESS);
    const double one = 1, zero = 0;
    auto gemm = [&](cublasOperation_t ta, int lda, const double* const* a_array) {
      return cublasDgemmBatched(handle, ta, CUBLAS_OP_N, 2, 1, 3, &one, a_array, lda, arrays + 1, 3, &zero, c_array, 2,
                                1);
    };
    REQUIRE(gemm(CUBLAS_OP_N, 2, arrays) == CUBLAS_STATUS_SUCCESS);
    CHECK(c.read() == std::vector<double>{9, 12});
    CHECK(gemm(CUBLAS_OP_N, 1, arrays) == CUBLAS_STATUS_INVALID_VALUE);  // lda < rows of A
    CHECK(std::string(cublasGetStatusString(CUBLAS_STATUS_INVALID_VALUE))
              .find("lda = 1 < max(1, 2), the rows of a as stored") != std::string::npos);
    CHECK(gemm(CUBLAS_OP_T, 2, arrays) == CUBLAS_STATUS_INVALID_VALUE);     // transposed, A is stored 3 x 2
    CHECK(gemm(CUBLAS_OP_N, 4, arrays) == CUBLAS_STATUS_EXECUTION_FAILED);  // 2 x 3 with ld 4 reaches element 10 of 6
    CHECK(std::string(cublasGetStatusString(CUBLAS_STATUS_EXECUTION_FAILED)).find("a[0] ") != std::string::npos);
    CHECK(gemm(CUBLAS_OP_N, 2, host_pointers.data()) ==
          CUBLAS_STATUS_EXECUTION_FAILED);  // the array itself on the host
    CHECK(std::string(cublasGetStatusString(CUBLAS_STATUS_EXECUTION_FAILED)).find("the array of a pointers") !=
          std::string::npos);
  }

  TEST_CASE("the grid cap makes grid-stride loops wrap around") {
    Generator gen(3);
    const Tensor x = core::randn({4002}, gen, Dtype::float64);
    for (const int64_t most_blocks : {65536, 3, 1}) {
      CAPTURE(most_blocks);
      axiom::test::ScopedEmulatedCuda emulated(emulator::ThreadOrder::forward, most_blocks);
      const Tensor on_device = x.to(Device::cuda());
      // contiguous: four elements a thread, 1000 fours and a tail of 2 in 4 blocks of 256 threads
      auto before = emulator::grid_stats();
      const Tensor y = core::neg(on_device);
      CHECK(emulator::grid_stats().blocks - before.blocks == std::min<int64_t>(most_blocks, 4));
      test::check_equal(y.to(Device::cpu()), test::values_of(core::neg(x)));
      // every fourth element: one a thread, 1001 of them in 4 blocks
      before = emulator::grid_stats();
      const Tensor z = core::neg(on_device.slice(0, 0, 4002, 4));
      CHECK(emulator::grid_stats().blocks - before.blocks == std::min<int64_t>(most_blocks, 4));
      test::check_equal(z.to(Device::cpu()), test::values_of(core::neg(x.slice(0, 0, 4002, 4))));
    }
  }

}  // TEST_SUITE
