// AXIOM_HOST_DEVICE marks a function both backends compile: nvcc builds it for the host and the
// GPU (__host__ __device__); every other compiler, the CUDA emulator's included, sees a plain
// function. core/adam_step.h and core/formulas.h use it.
#pragma once

#if defined(__CUDACC__)
#define AXIOM_HOST_DEVICE __host__ __device__
#else
#define AXIOM_HOST_DEVICE
#endif
