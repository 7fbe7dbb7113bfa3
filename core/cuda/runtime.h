// The CUDA runtime and cuBLAS, set up once, with every failure turned into an axiom::Error.
//
// Everything runs on the legacy default stream: kernels, cuBLAS calls and copies run in the order
// they were issued, and a copy to the host waits for the kernels before it. So a buffer freed by
// one op and handed to the next (core/cuda/allocator.h) is never written while still being read.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <string>
#include <string_view>

#include "core/cuda/build.h"

namespace AXIOM_CUDA_NAMESPACE {

// Throws Error(op, "CUDA error ...: <what the runtime says>") unless status is cudaSuccess.
void check(cudaError_t status, std::string_view op);
void check(cublasStatus_t status, std::string_view op);

// Checks that the last kernel launch was accepted (bad launch configurations show up here).
void check_launch(std::string_view op);

// With AXIOM_CUDA_SYNC=1 in the environment, every launch is followed by a wait for the kernel
// to finish, so that a fault inside it (an illegal address) is an Error naming the op and the
// launch's file and line, rather than surfacing at a later copy under another op's name. Slow:
// for finding faults. Read at each launch, so a program may set it as it goes.
bool sync_every_launch();
void finish_launch(std::string_view op, std::string_view where);

// Whether a usable GPU is present; when not, why ("no CUDA-capable device is detected", ...).
bool device_present();
const std::string& why_no_device();

// Throws Error(op, "no CUDA device: ...") when no GPU is present. Called before the first use.
void require_device(std::string_view op);

// The cuBLAS handle of this process, made on first use.
cublasHandle_t cublas();

}  // namespace AXIOM_CUDA_NAMESPACE
