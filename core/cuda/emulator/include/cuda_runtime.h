// A stand-in for CUDA's <cuda_runtime.h>, for compiling core/cuda with the host C++ compiler.
//
// It gives the kernels the device-side language (__global__, __shared__, threadIdx, ...,
// __syncthreads, atomicAdd, the float overloads of the math functions) on top of the grid runner
// (core/cuda/emulator/grid.h), and the host side the runtime calls that core/cuda makes, and only
// those: device count, memory, copies, synchronisation and errors. Every call checks its
// pointers against the live device allocations (memory.h) and fails as CUDA would, with
// cudaGetErrorString telling which call and which pointer.
//
// Names live in axiom::cuda_emulator and are brought into the global namespace here, so that a
// program holding the real CUDA runtime too (a test of a CUDA build) sees no clash.
#pragma once

#include <atomic>
#include <cmath>
#include <cstddef>
#include <source_location>
#include <type_traits>

#include "core/cuda/emulator/grid.h"

// --- the device-side language ---------------------------------------------------------------------
#define __global__
#define __device__
#define __host__
// One copy per program, shared by the threads of the running block (blocks run one at a time),
// in a section of its own: the runner fills the section with 0xFF bytes as each block starts.
#define __shared__ static __attribute__((section("axiom_cuda_shared")))
#define __syncthreads() ::axiom::cuda_emulator::sync_threads(std::source_location::current())
#define warpSize 32
#define threadIdx (::axiom::cuda_emulator::thread_index())
#define blockIdx (::axiom::cuda_emulator::block_index())
#define blockDim (::axiom::cuda_emulator::block_dim())
#define gridDim (::axiom::cuda_emulator::grid_dim())

namespace axiom::cuda_emulator {

// An atomic's address must be device memory, or mapped host memory (an exception here ends the
// launch with an Error).
void check_atomic_address(const void* address, size_t nbytes);

// atomicAdd: *address += value, returning the old value.
template <typename T>
T atomic_add(T* address, T value) {
  check_atomic_address(address, sizeof(T));
  return std::atomic_ref<T>(*address).fetch_add(value);
}

// atomicMin: *address = min(*address, value), returning the old value.
template <typename T>
T atomic_min(T* address, T value) {
  check_atomic_address(address, sizeof(T));
  std::atomic_ref<T> target(*address);
  T old = target.load();
  while (value < old && !target.compare_exchange_weak(old, value)) {
  }
  return old;
}

// --- the runtime API ------------------------------------------------------------------------------
enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidDevicePointer = 17,
  cudaErrorInvalidMemcpyDirection = 21,
  cudaErrorIllegalAddress = 700,
};
enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4,
};
using cudaStream_t = struct EmulatedStream*;  // only the default stream (null) exists

cudaError_t cudaGetDeviceCount(int* count);
cudaError_t cudaDeviceSynchronize();
cudaError_t cudaGetLastError();
const char* cudaGetErrorName(cudaError_t error);
const char* cudaGetErrorString(cudaError_t error);
cudaError_t cudaMalloc(void** pointer, size_t nbytes);
cudaError_t cudaFree(void* pointer);
cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes);
cudaError_t cudaMemcpy(void* dst, const void* src, size_t nbytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t nbytes, cudaMemcpyKind kind,
                            cudaStream_t stream = nullptr);
cudaError_t cudaMemset(void* pointer, int value, size_t nbytes);

// Pinned host memory that kernels may read and write too (mapped into the device's address space,
// "zero-copy"): the host reads what a kernel wrote once it has waited for the kernel. Only the
// flag cudaHostAllocMapped is taken; the device's pointer to it is the host's (cudaHostGetDevicePointer).
constexpr unsigned cudaHostAllocMapped = 2;
cudaError_t cudaHostAlloc(void** pointer, size_t nbytes, unsigned flags);
cudaError_t cudaFreeHost(void* pointer);
cudaError_t cudaHostGetDevicePointer(void** device_pointer, void* host_pointer, unsigned flags);

// What the grid runner reports through cudaGetLastError (a refused launch configuration).
void set_last_error(cudaError_t error);

}  // namespace axiom::cuda_emulator

using axiom::cuda_emulator::dim3;
using enum axiom::cuda_emulator::cudaError_t;
using enum axiom::cuda_emulator::cudaMemcpyKind;
using axiom::cuda_emulator::cudaDeviceSynchronize;
using axiom::cuda_emulator::cudaError_t;
using axiom::cuda_emulator::cudaFree;
using axiom::cuda_emulator::cudaFreeHost;
using axiom::cuda_emulator::cudaGetDeviceCount;
using axiom::cuda_emulator::cudaGetErrorName;
using axiom::cuda_emulator::cudaGetErrorString;
using axiom::cuda_emulator::cudaGetLastError;
using axiom::cuda_emulator::cudaHostAlloc;
using axiom::cuda_emulator::cudaHostAllocMapped;
using axiom::cuda_emulator::cudaHostGetDevicePointer;
using axiom::cuda_emulator::cudaMalloc;
using axiom::cuda_emulator::cudaMemcpy;
using axiom::cuda_emulator::cudaMemcpyAsync;
using axiom::cuda_emulator::cudaMemcpyKind;
using axiom::cuda_emulator::cudaMemGetInfo;
using axiom::cuda_emulator::cudaMemset;
using axiom::cuda_emulator::cudaStream_t;

// CUDA's atomicAdd for the types core/cuda adds atomically.
inline float atomicAdd(float* address, float value) { return axiom::cuda_emulator::atomic_add(address, value); }
inline double atomicAdd(double* address, double value) { return axiom::cuda_emulator::atomic_add(address, value); }
inline unsigned long long atomicAdd(unsigned long long* address, unsigned long long value) {
  return axiom::cuda_emulator::atomic_add(address, value);
}
inline unsigned long long atomicMin(unsigned long long* address, unsigned long long value) {
  return axiom::cuda_emulator::atomic_min(address, value);
}

// __shfl_xor_sync and __shfl_down_sync: lane i of a warp gets the value of lane i ^ lane_mask, or
// of lane i + delta (its own where that is past the warp). Only the full mask and width 32 are
// emulated: every lane of the warp takes part, as in every kernel of core/cuda.
template <typename T>
T shuffle_from(unsigned mask, T value, unsigned source_lane, int width, std::source_location where) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 8, "a shuffle moves up to 8 bytes");
  T result;
  axiom::cuda_emulator::shuffle_lanes(mask, width, &value, &result, sizeof(T), source_lane, where);
  return result;
}
template <typename T>
T __shfl_xor_sync(unsigned mask, T value, int lane_mask, int width = 32,
                  std::source_location where = std::source_location::current()) {
  return shuffle_from(mask, value, (axiom::cuda_emulator::lane_index() ^ static_cast<unsigned>(lane_mask)) % 32, width,
                      where);
}
template <typename T>
T __shfl_down_sync(unsigned mask, T value, unsigned delta, int width = 32,
                   std::source_location where = std::source_location::current()) {
  const unsigned lane = axiom::cuda_emulator::lane_index();
  return shuffle_from(mask, value, lane + delta < 32 ? lane + delta : lane, width, where);
}

// __syncwarp(): the lanes of a warp wait for each other, and see each other's writes after it.
inline void __syncwarp(unsigned mask = 0xffffffffu, std::source_location where = std::source_location::current()) {
  axiom::cuda_emulator::sync_warp(mask, where);
}

// __threadfence(): on the GPU, the calling thread's writes to device memory are seen by every
// other thread before any write it makes after the fence. Here blocks run one after another on
// one CPU thread, so every write is seen at once: there is nothing to wait for.
inline void __threadfence() {}

// CUDA's device code has float overloads of the math functions in the global namespace.
using std::erf;
using std::exp;
using std::log;
using std::pow;
using std::sqrt;
using std::tanh;
