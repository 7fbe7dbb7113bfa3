// The CUDA runtime stand-in (include/cuda_runtime.h) and the emulated device's memory (memory.h).
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/cuda/emulator/include/cuda_runtime.h"
#include "core/cuda/emulator/memory.h"
#include "core/error.h"

namespace axiom::cuda_emulator {

namespace {

constexpr size_t kAlignment = 256;  // as cudaMalloc's

// One cudaMalloc block: `size` bytes, of which the first `used` are in use (all of them, unless
// the caching allocator lent it for less, or holds it freed: then 0).
struct Allocation {
  size_t size, used;
};

// Every live allocation, by its first byte.
struct DeviceMemory {
  std::mutex mutex;
  std::map<uintptr_t, Allocation> allocations;
  size_t live_bytes = 0;
  std::vector<std::string> faults;
  std::map<uintptr_t, size_t> mapped_host;  // cudaHostAlloc's blocks: first byte -> size

  // The allocation whose used bytes hold `address`, or allocations.end().
  std::map<uintptr_t, Allocation>::const_iterator holding(uintptr_t address) const {
    auto after = allocations.upper_bound(address);
    if (after == allocations.begin()) return allocations.end();
    auto candidate = std::prev(after);
    return address < candidate->first + candidate->second.used ? candidate : allocations.end();
  }
};

DeviceMemory& device_memory() {
  static auto* memory = new DeviceMemory;  // never destroyed: tensors may be freed after main
  return *memory;
}

// The canary in the unused tail of a lent block: a pattern that depends on the address, so that a
// kernel copying one block's tail into another's (reading and writing past two tensors) changes it.
unsigned char canary_byte(uintptr_t address) {
  return static_cast<unsigned char>((address * 0x9E3779B97F4A7C15ull) >> 56);
}

void write_canary(char* first, const char* end) {
  for (char* byte = first; byte < end; ++byte)
    *byte = static_cast<char>(canary_byte(reinterpret_cast<uintptr_t>(byte)));
}

thread_local cudaError_t last_error =
    cudaSuccess;  // per host thread, as in CUDA: what cudaGetLastError returns, then clears
thread_local std::string last_failure_detail;

cudaError_t& planted_fault() {  // what the next cudaDeviceSynchronize reports (plant_kernel_fault)
  static cudaError_t fault = cudaSuccess;
  return fault;
}

cudaError_t fail(cudaError_t error, const std::string& detail) {
  set_failure_detail(detail);
  return error;
}

std::string hex(const void* pointer) {
  std::ostringstream out;
  out << pointer;
  return out.str();
}

// Checks one side of a copy: device memory where `on_device`, host memory otherwise.
bool copy_side_ok(const char* call, const char* side, const void* pointer, size_t nbytes, bool on_device,
                  std::string& why) {
  if (on_device ? is_device_range(pointer, nbytes) : !touches_device(pointer, nbytes)) return true;
  why = std::string(call) + ": the " + side + " " +
        (on_device ? describe_range(pointer, nbytes)
                   : hex(pointer) + " (" + std::to_string(nbytes) +
                         " bytes) lies in device memory, where host memory was named");
  return false;
}

cudaError_t checked_copy(const char* call, void* dst, const void* src, size_t nbytes, cudaMemcpyKind kind) {
  if (nbytes == 0) return cudaSuccess;
  if (kind == cudaMemcpyDefault)
    kind = is_device_range(src, nbytes)
               ? (is_device_range(dst, nbytes) ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost)
               : (is_device_range(dst, nbytes) ? cudaMemcpyHostToDevice : cudaMemcpyHostToHost);
  if (kind < cudaMemcpyHostToHost || kind > cudaMemcpyDeviceToDevice) {
    return fail(cudaErrorInvalidMemcpyDirection, std::string(call) + ": direction " + std::to_string(int(kind)));
  }
  const bool src_on_device = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  const bool dst_on_device = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  std::string why;
  if (!copy_side_ok(call, "source", src, nbytes, src_on_device, why) ||
      !copy_side_ok(call, "destination", dst, nbytes, dst_on_device, why)) {
    return fail(cudaErrorInvalidValue, why);
  }
  std::memmove(dst, src, nbytes);
  count_copy(src_on_device, dst_on_device);
  return cudaSuccess;
}

}  // namespace

// --- memory.h --------------------------------------------------------------------------------------

namespace {
std::mutex traffic_mutex;  // a copy may come from another host thread (a loader's prefetch)
TrafficStats traffic;
}  // namespace

TrafficStats traffic_stats() {
  std::lock_guard lock(traffic_mutex);
  return traffic;
}

void count_copy(bool from_device, bool to_device) {
  std::lock_guard lock(traffic_mutex);
  if (from_device && to_device)
    ++traffic.device_to_device;
  else if (from_device)
    ++traffic.device_to_host;
  else if (to_device)
    ++traffic.host_to_device;
}

void count_synchronization() {
  std::lock_guard lock(traffic_mutex);
  ++traffic.synchronizations;
}

void plant_kernel_fault() { planted_fault() = cudaErrorIllegalAddress; }

void count_cublas_call(const char* entry) {
  std::lock_guard lock(traffic_mutex);
  ++traffic.cublas_calls[entry];
}

bool is_device_range(const void* pointer, size_t nbytes) {
  DeviceMemory& memory = device_memory();
  std::lock_guard lock(memory.mutex);
  const auto address = reinterpret_cast<uintptr_t>(pointer);
  const auto found = memory.holding(address);
  return found != memory.allocations.end() && address + nbytes <= found->first + found->second.used;
}

bool is_mapped_host_range(const void* pointer, size_t nbytes) {
  DeviceMemory& memory = device_memory();
  std::lock_guard lock(memory.mutex);
  const auto address = reinterpret_cast<uintptr_t>(pointer);
  auto after = memory.mapped_host.upper_bound(address);
  if (after == memory.mapped_host.begin()) return false;
  const auto block = std::prev(after);
  return address + std::max<size_t>(nbytes, 1) <= block->first + block->second;
}

bool touches_device(const void* pointer, size_t nbytes) {
  DeviceMemory& memory = device_memory();
  std::lock_guard lock(memory.mutex);
  const auto first = reinterpret_cast<uintptr_t>(pointer), end = first + std::max<size_t>(nbytes, 1);
  const auto after = memory.allocations.lower_bound(end);  // the first allocation starting at or past the end
  if (after == memory.allocations.begin()) return false;
  const auto last = std::prev(after);
  return last->first + last->second.size > first;
}

std::string describe_range(const void* pointer, size_t nbytes) {
  const auto address = reinterpret_cast<uintptr_t>(pointer);
  std::string where = hex(pointer) + " (" + std::to_string(nbytes) + " bytes)";
  DeviceMemory& memory = device_memory();
  std::lock_guard lock(memory.mutex);
  const auto found = memory.holding(address);
  if (found == memory.allocations.end())
    return where + " is not inside a device allocation (or a tensor's part of one)";
  const uintptr_t end = found->first + found->second.used;
  if (address + nbytes <= end) return where + " lies inside a device allocation";
  return where + " runs " + std::to_string(address + nbytes - end) +
         " bytes past the end of the device allocation of " + std::to_string(found->second.used) + " bytes at " +
         hex(reinterpret_cast<const void*>(found->first));
}

void lend(void* block, size_t nbytes) {
  DeviceMemory& memory = device_memory();
  std::lock_guard lock(memory.mutex);
  Allocation& allocation = memory.allocations.at(reinterpret_cast<uintptr_t>(block));
  allocation.used = std::min(nbytes, allocation.size);
  write_canary(static_cast<char*>(block) + allocation.used, static_cast<char*>(block) + allocation.size);
}

void take_back(void* block) {
  DeviceMemory& memory = device_memory();
  std::lock_guard lock(memory.mutex);
  Allocation& allocation = memory.allocations.at(reinterpret_cast<uintptr_t>(block));
  const auto* bytes = static_cast<const unsigned char*>(block);
  for (size_t i = allocation.used; i < allocation.size; ++i) {
    if (bytes[i] != canary_byte(reinterpret_cast<uintptr_t>(bytes + i))) {
      memory.faults.push_back("a kernel wrote past the end of the " + std::to_string(allocation.used) + " bytes at " +
                              hex(block) + " (byte " + std::to_string(i) + " of its block)");
      break;
    }
  }
  allocation.used = 0;  // freed: any use until it is lent again is an error
  std::memset(block, 0xFF, allocation.size);
}

std::vector<std::string> take_memory_faults() {
  DeviceMemory& memory = device_memory();
  std::lock_guard lock(memory.mutex);
  return std::exchange(memory.faults, {});
}

MemoryStats memory_stats() {
  DeviceMemory& memory = device_memory();
  std::lock_guard lock(memory.mutex);
  return {static_cast<int64_t>(memory.allocations.size()), memory.live_bytes};
}

void set_failure_detail(std::string detail) { last_failure_detail = std::move(detail); }
const std::string& failure_detail() { return last_failure_detail; }

// --- the runtime API -------------------------------------------------------------------------------

void set_last_error(cudaError_t error) { last_error = error; }

cudaError_t cudaGetDeviceCount(int* count) {
  *count = 1;
  return cudaSuccess;
}

// Every kernel has finished when its launch returns; a fault planted by a test is reported here,
// as CUDA reports a fault of a kernel that already ran.
cudaError_t cudaDeviceSynchronize() {
  count_synchronization();
  return std::exchange(planted_fault(), cudaSuccess);
}

cudaError_t cudaGetLastError() { return std::exchange(last_error, cudaSuccess); }

const char* cudaGetErrorName(cudaError_t error) {
  switch (error) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevicePointer: return "cudaErrorInvalidDevicePointer";
    case cudaErrorInvalidMemcpyDirection: return "cudaErrorInvalidMemcpyDirection";
    case cudaErrorIllegalAddress: return "cudaErrorIllegalAddress";
  }
  return "cudaErrorUnknown";
}

// The runtime's own words, then (in the emulator) which call and which pointer were wrong.
const char* cudaGetErrorString(cudaError_t error) {
  static thread_local std::string text;
  switch (error) {
    case cudaSuccess: text = "no error"; break;
    case cudaErrorInvalidValue: text = "invalid argument"; break;
    case cudaErrorMemoryAllocation: text = "out of memory"; break;
    case cudaErrorInvalidConfiguration: text = "invalid configuration argument"; break;
    case cudaErrorInvalidDevicePointer: text = "invalid device pointer"; break;
    case cudaErrorInvalidMemcpyDirection: text = "invalid copy direction for memcpy"; break;
    case cudaErrorIllegalAddress: text = "an illegal memory access was encountered"; break;
    default: text = "unknown error"; break;
  }
  if (error != cudaSuccess && !failure_detail().empty()) text += " (" + failure_detail() + ")";
  return text.c_str();
}

cudaError_t cudaMalloc(void** pointer, size_t nbytes) {
  DeviceMemory& memory = device_memory();
  const size_t size = (std::max<size_t>(nbytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
  std::lock_guard lock(memory.mutex);
  if (memory.live_bytes + size > kDeviceBytes) {
    return fail(cudaErrorMemoryAllocation, "cudaMalloc: " + std::to_string(nbytes) + " bytes with " +
                                               std::to_string(kDeviceBytes - memory.live_bytes) +
                                               " of the emulated device's " + std::to_string(kDeviceBytes) + " free");
  }
  void* block = std::aligned_alloc(kAlignment, size);
  if (!block)
    return fail(cudaErrorMemoryAllocation, "cudaMalloc: the host has no " + std::to_string(size) + " bytes to give");
  std::memset(block, 0xFF, size);  // poison: a read before any write shows as NaN
  // the bytes asked for, not the rounded size: a kernel reading past them is caught
  memory.allocations[reinterpret_cast<uintptr_t>(block)] = {std::max<size_t>(nbytes, 1), std::max<size_t>(nbytes, 1)};
  memory.live_bytes += size;
  *pointer = block;
  return cudaSuccess;
}

cudaError_t cudaFree(void* pointer) {
  if (!pointer) return cudaSuccess;
  DeviceMemory& memory = device_memory();
  std::lock_guard lock(memory.mutex);
  const auto found = memory.allocations.find(reinterpret_cast<uintptr_t>(pointer));
  if (found == memory.allocations.end()) {
    return fail(cudaErrorInvalidDevicePointer,
                "cudaFree: " + hex(pointer) + " is not the start of a live device allocation");
  }
  memory.live_bytes -= (found->second.size + kAlignment - 1) / kAlignment * kAlignment;
  memory.allocations.erase(found);
  std::free(pointer);
  return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  DeviceMemory& memory = device_memory();
  std::lock_guard lock(memory.mutex);
  *free_bytes = kDeviceBytes - memory.live_bytes;
  *total_bytes = kDeviceBytes;
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t nbytes, cudaMemcpyKind kind) {
  return checked_copy("cudaMemcpy", dst, src, nbytes, kind);
}

// Asynchronous on a GPU; here it is done when it returns (the default stream keeps the order).
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t nbytes, cudaMemcpyKind kind, cudaStream_t) {
  return checked_copy("cudaMemcpyAsync", dst, src, nbytes, kind);
}

cudaError_t cudaMemset(void* pointer, int value, size_t nbytes) {
  if (nbytes && !is_device_range(pointer, nbytes))
    return fail(cudaErrorInvalidValue, "cudaMemset: " + describe_range(pointer, nbytes));
  if (nbytes) std::memset(pointer, value, nbytes);
  return cudaSuccess;
}

cudaError_t cudaHostAlloc(void** pointer, size_t nbytes, unsigned flags) {
  if (flags != cudaHostAllocMapped)
    return fail(cudaErrorInvalidValue, "cudaHostAlloc: only cudaHostAllocMapped is emulated");
  const size_t size = (std::max<size_t>(nbytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
  void* block = std::aligned_alloc(kAlignment, size);
  if (!block)
    return fail(cudaErrorMemoryAllocation, "cudaHostAlloc: the host has no " + std::to_string(size) + " bytes to give");
  std::memset(block, 0xFF, size);
  DeviceMemory& memory = device_memory();
  std::lock_guard lock(memory.mutex);
  memory.mapped_host[reinterpret_cast<uintptr_t>(block)] = std::max<size_t>(nbytes, 1);
  *pointer = block;
  return cudaSuccess;
}

cudaError_t cudaFreeHost(void* pointer) {
  if (!pointer) return cudaSuccess;
  DeviceMemory& memory = device_memory();
  std::lock_guard lock(memory.mutex);
  if (memory.mapped_host.erase(reinterpret_cast<uintptr_t>(pointer)) == 0) {
    return fail(cudaErrorInvalidValue,
                "cudaFreeHost: " + hex(pointer) + " is not the start of a live cudaHostAlloc block");
  }
  std::free(pointer);
  return cudaSuccess;
}

cudaError_t cudaHostGetDevicePointer(void** device_pointer, void* host_pointer, unsigned flags) {
  if (flags != 0 || !is_mapped_host_range(host_pointer, 0)) {
    return fail(cudaErrorInvalidValue, "cudaHostGetDevicePointer: " + hex(host_pointer) +
                                           " is not inside a cudaHostAlloc block (or flags are not 0)");
  }
  *device_pointer = host_pointer;  // one address space: the device sees the block where the host does
  return cudaSuccess;
}

void check_atomic_address(const void* address, size_t nbytes) {
  if (!is_device_range(address, nbytes) && !is_mapped_host_range(address, nbytes)) {
    throw Error("atomic", "the address ", describe_range(address, nbytes));
  }
}

}  // namespace axiom::cuda_emulator
