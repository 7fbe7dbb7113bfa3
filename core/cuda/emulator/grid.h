// The grid runner: runs a CUDA kernel's grid on the CPU, so that the kernels of core/cuda execute
// (and are checked) on machines without a GPU.
//
// A launch runs its blocks one after another. The threads of a block are cooperative fibers
// (Boost.Context) that take turns on one CPU thread: each runs until it ends or reaches a
// __syncthreads(); when every thread of the block waits at the same __syncthreads(), they all go
// on. What a kernel reads as threadIdx, blockIdx, blockDim and gridDim is the runner's record of
// the fiber that is running. The order in which the threads (and the blocks) take their turns is
// a setting, so that a test can run the same kernel forward, backward and shuffled: code that
// forgot a barrier gives different results, or reads poison, under one of them.
//
// What the runner checks, each an axiom::Error naming the op and where the kernel was launched:
//   - a __syncthreads() that some threads of a block reach and others never do (they ended), or
//     that threads reach at different call sites; a warp shuffle that some lanes of a warp never
//     reach;
//   - an exception thrown by a thread (the emulator's own checks: an atomic outside device memory);
//   - a pointer argument that is neither null nor inside a live device allocation (runtime.h).
// A launch configuration CUDA would refuse (more than 1024 threads in a block, an empty or too
// large grid) runs nothing and leaves cudaErrorInvalidConfiguration for cudaGetLastError, as
// CUDA does. __shared__ variables are filled with 0xFF bytes (NaN for floats, -1 for integers)
// at the start of every block, so that a read before a write shows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <source_location>
#include <string_view>
#include <type_traits>

namespace axiom::cuda_emulator {

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr dim3(unsigned x = 1, unsigned y = 1, unsigned z = 1) : x(x), y(y), z(z) {}
};

// --- what a running thread sees (the macros threadIdx, ... of cuda_runtime.h read these) ------
const dim3& thread_index();
const dim3& block_index();
const dim3& block_dim();
const dim3& grid_dim();
// __syncthreads(): waits until every thread of the block has reached this same call.
void sync_threads(std::source_location where);
// A warp shuffle: every lane (the threads x + y * blockDim.x + ... = 32 w .. 32 w + 31 make warp w)
// offers `bytes` of `mine` and receives into `theirs` what lane `source_lane` of its warp offered.
// All 32 lanes must reach the same call (mask 0xffffffff, width 32), and the block must hold whole
// warps: anything else is an Error.
void shuffle_lanes(unsigned mask, int width, const void* mine, void* theirs, size_t bytes, unsigned source_lane,
                   std::source_location where);
// The running thread's lane in its warp.
unsigned lane_index();
// __syncwarp(): waits until the 32 lanes of the thread's warp have reached this same call (the
// full mask only, whole warps only, as shuffle_lanes).
void sync_warp(unsigned mask, std::source_location where);

// --- settings ---------------------------------------------------------------------------------
// The order in which the threads of a block (and the blocks of a grid) take their turns.
enum class ThreadOrder { forward, reverse, shuffled };
void set_thread_order(ThreadOrder order, uint64_t seed = 0);
ThreadOrder thread_order();
std::string_view order_name(ThreadOrder order);

// The most blocks core/cuda asks for in one launch (its grid-stride loops cover the rest): 65536
// as on the GPU, unless a test lowers it to make the loops wrap around on small tensors.
int64_t most_blocks();
void set_most_blocks(int64_t blocks);
// The longest row core/cuda's row kernels give a warp rather than a block (kernels.cuh): 1,024 as
// on the GPU, unless a test lowers it to run the block-per-row kernels on short rows.
int64_t longest_warp_row();
void set_longest_warp_row(int64_t length);

// Counts since the program started, so a test can see that kernels ran.
struct GridStats {
  int64_t launches = 0, blocks = 0, threads = 0, barriers = 0;
};
GridStats grid_stats();

// --- launching ---------------------------------------------------------------------------------
struct KernelSite {
  std::string_view op;         // the op that launched it ("softmax")
  std::source_location where;  // the launch's file and line
};

// Checks that a kernel's pointer argument is null or inside a live device allocation (runtime.h).
void check_kernel_pointer(const KernelSite& site, int argument, const void* pointer);

// Runs thread_body once for every thread of the grid (see the top of this file). When CUDA would
// refuse the launch, runs nothing and leaves cudaErrorInvalidConfiguration for cudaGetLastError.
void run_threads(const KernelSite& site, dim3 grid, dim3 block, const std::function<void()>& thread_body);

// kernel<<<grid, block>>>(args...) on the CPU: the arguments are copied once, as CUDA copies
// them to the device, and every thread calls the kernel with them.
template <typename... Params>
void run_grid(const KernelSite& site, dim3 grid, dim3 block, void (*kernel)(Params...), Params... args) {
  static_assert((sizeof(Params) + ... + 0) <= 32764,
                "a kernel's arguments take at most 32,764 bytes (CUDA 12.1 on Volta and later)");
  int argument = 0;
  auto check_pointer = [&](const auto& value) {
    if constexpr (std::is_pointer_v<std::decay_t<decltype(value)>>) check_kernel_pointer(site, argument, value);
    ++argument;
  };
  (check_pointer(args), ...);
  (void)check_pointer;  // (a kernel without arguments)
  run_threads(site, grid, block, [&] { kernel(args...); });
}

}  // namespace axiom::cuda_emulator
