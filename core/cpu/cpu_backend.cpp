#include "core/cpu/cpu_backend.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "core/cpu/allocator.h"
#include "core/cpu/blas.h"
#include "core/cpu/onednn_gemm.h"
#include "core/cpu/vector_math.h"
#include "core/launch.h"
#include "core/parallel.h"

namespace axiom::core {

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<cpu::CpuBackend>(); }

namespace cpu {

// Once, before any kernel runs, so that kernels only compute: OpenBLAS switches to the fastest
// kernels this CPU can run (blas.cpp) and computes on the calling thread alone (matmul.cpp splits a
// product over axiom's threads), and
// AXIOM_SIMD_TARGET, when set, picks the SIMD target of the float32 kernels (vector_math.h).
CpuBackend::CpuBackend() {
  vec::use_target_from_environment();
  (void)blas_kernels_report();
  set_blas_threads(1);
  (void)num_threads();
}

MachineMemory CpuBackend::memory() {
  MachineMemory m = machine_memory();
  m.available = std::min(m.available + host_allocator().cached_bytes(), m.total);
  return m;
}

std::string CpuBackend::matmul_precision_unavailable(MatmulPrecision precision) const {
  return precision == MatmulPrecision::bfloat16 ? bfloat16_gemm_unavailable_reason() : "";
}

size_t CpuBackend::release_cached_memory() {
  const size_t bytes = host_allocator().cached_bytes();
  host_allocator().release_cached();
  return bytes;
}

void* CpuBackend::allocate(size_t nbytes) { return host_allocator().allocate(nbytes); }
void CpuBackend::deallocate(void* data, size_t nbytes) noexcept { host_allocator().deallocate(data, nbytes); }

void CpuBackend::copy_from_host(void* dst, const void* host_src, size_t nbytes) {
  if (nbytes) std::memcpy(dst, host_src, nbytes);
}
void CpuBackend::copy_to_host(void* host_dst, const void* src, size_t nbytes) {
  if (nbytes) std::memcpy(host_dst, src, nbytes);
}

}  // namespace cpu
}  // namespace axiom::core
