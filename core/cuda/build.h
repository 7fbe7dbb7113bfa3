// The sources of this folder are compiled twice: by nvcc into the real CUDA backend, and by the
// host C++ compiler against core/cuda/emulator (a CPU stand-in for the GPU, the CUDA runtime and
// cuBLAS) into the emulated backend that the tests run. A test program links both, so each build
// keeps its names in an inline namespace of its own: axiom::core::cuda::gpu (nvcc) or
// axiom::core::cuda::emulated. Code inside either build still writes axiom::core::cuda::X.
#pragma once

#if defined(AXIOM_CUDA_EMULATED)
#define AXIOM_CUDA_NAMESPACE axiom::core::cuda::inline emulated
#else
#define AXIOM_CUDA_NAMESPACE axiom::core::cuda::inline gpu
#endif
