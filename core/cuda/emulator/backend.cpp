#include "core/cuda/cuda_backend.h"
#include "core/cuda/emulator/emulator.h"

namespace axiom::cuda_emulator {

std::unique_ptr<core::Backend> make_backend() { return std::make_unique<core::cuda::CudaBackend>(); }

}  // namespace axiom::cuda_emulator
