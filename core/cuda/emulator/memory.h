// The emulated GPU's memory: every live allocation made through cudaMalloc, so that the runtime
// stand-in, the grid runner and the cuBLAS stand-in can tell device memory from host memory and
// refuse a pointer (or a range of bytes) that does not lie inside one allocation.
//
// Allocations are host memory, 256-byte aligned as cudaMalloc's are, and filled with 0xFF bytes
// (NaN as floats) when made: memory a kernel reads before anything wrote it shows up. The device
// has kDeviceBytes of memory; asking for more is cudaErrorMemoryAllocation, as on a full GPU.
//
// The backend's caching allocator (core/cuda/allocator.h) hands out blocks larger than the tensor
// that asked, and keeps freed blocks. It tells the emulator which bytes of a block are in use
// (lend, take_back), so that a pointer past a tensor's end, or into a freed block, is outside
// every allocation here; the unused tail of a lent block holds a canary (a pattern that depends on
// the address), checked when the block comes back: a kernel that wrote past its tensor's end is
// recorded as a memory fault. A freed block is filled with 0xFF bytes again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace axiom::cuda_emulator {

constexpr size_t kDeviceBytes = size_t(4) << 30;  // 4 GiB

// Whether [pointer, pointer + nbytes) lies inside the used bytes of one live device allocation
// (nbytes may be 0: then pointer itself must lie inside).
bool is_device_range(const void* pointer, size_t nbytes);
// Whether [pointer, pointer + nbytes) lies inside one live block of mapped host memory
// (cudaHostAlloc), which kernels may use as they use device memory.
bool is_mapped_host_range(const void* pointer, size_t nbytes);
// Whether any byte of [pointer, pointer + nbytes) lies in device memory.
bool touches_device(const void* pointer, size_t nbytes);

// "0x7f..., 64 bytes: not inside a device allocation" and the like, for error messages.
std::string describe_range(const void* pointer, size_t nbytes);

// The caching allocator lends `block` (from cudaMalloc) for `nbytes`, or takes it back.
void lend(void* block, size_t nbytes);
void take_back(void* block);
// The faults found since the last call ("a kernel wrote past the end of ..."), then forgotten.
std::vector<std::string> take_memory_faults();

struct MemoryStats {
  int64_t live_allocations = 0;
  size_t live_bytes = 0;
};
MemoryStats memory_stats();

// Counts since the program started, so that a test can see what an op asks of the GPU besides
// kernels (grid.h counts those): copies by direction, and the calls of each cuBLAS entry.
struct TrafficStats {
  int64_t host_to_device = 0, device_to_host = 0, device_to_device = 0, synchronizations = 0;
  std::map<std::string, int64_t> cublas_calls;  // "cublasSgemm" -> calls
};
TrafficStats traffic_stats();
// The runtime and cuBLAS stand-ins count what they did.
void count_copy(bool from_device, bool to_device);
void count_cublas_call(const char* entry);
void count_synchronization();

// Makes the next cudaDeviceSynchronize report cudaErrorIllegalAddress, as CUDA reports a kernel
// that read or wrote outside its memory: a planted fault, for testing how faults are reported.
void plant_kernel_fault();

// The failure the last failing runtime or cuBLAS call reported, in words; the stand-ins'
// cudaGetErrorString and cublasGetStatusString add it to the standard text.
void set_failure_detail(std::string detail);
const std::string& failure_detail();

}  // namespace axiom::cuda_emulator
