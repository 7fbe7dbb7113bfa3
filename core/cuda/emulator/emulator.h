// The CUDA emulator's face to the tests: the backend of core/cuda compiled against a CPU stand-in
// for the GPU (grid.h), the CUDA runtime (memory.h, include/cuda_runtime.h) and cuBLAS
// (include/cublas_v2.h). See README.md for what running the kernels here proves, and what not.
//
//   core::register_backend(DeviceType::cuda, cuda_emulator::make_backend());
//   // from here on, every op on a cuda tensor runs core/cuda's own kernels, on the CPU
#pragma once

#include <memory>

#include "core/backend.h"
#include "core/cuda/emulator/grid.h"
#include "core/cuda/emulator/memory.h"

namespace axiom::cuda_emulator {

// A CudaBackend (core/cuda/cuda_backend.h) of the emulated build.
std::unique_ptr<core::Backend> make_backend();

}  // namespace axiom::cuda_emulator
