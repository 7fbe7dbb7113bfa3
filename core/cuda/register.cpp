// The real CUDA backend serves DeviceType::cuda (core/backend.cpp asks for it at start-up). The
// emulated build of this folder is not registered by default: tests install it themselves
// (core/cuda/emulator/README.md).
#include <memory>

#include "core/cuda/cuda_backend.h"

namespace axiom::core {

std::unique_ptr<Backend> make_cuda_backend() { return std::make_unique<cuda::CudaBackend>(); }

}  // namespace axiom::core
