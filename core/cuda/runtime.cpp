#include "core/cuda/runtime.h"

#include <cstdlib>

#include "core/error.h"

namespace AXIOM_CUDA_NAMESPACE {

void check(cudaError_t status, std::string_view op) {
  if (status != cudaSuccess) {
    throw Error(op, "CUDA error ", cudaGetErrorName(status), ": ", cudaGetErrorString(status));
  }
}

void check(cublasStatus_t status, std::string_view op) {
  if (status != CUBLAS_STATUS_SUCCESS) throw Error(op, "cuBLAS error ", cublasGetStatusString(status));
}

bool sync_every_launch() {
  const char* value = std::getenv("AXIOM_CUDA_SYNC");
  return value != nullptr && std::string_view(value) == "1";
}

void check_launch(std::string_view op) { check(cudaGetLastError(), op); }

void finish_launch(std::string_view op, std::string_view where) {
  const cudaError_t status = cudaDeviceSynchronize();
  if (status != cudaSuccess) {
    throw Error(op, "CUDA error ", cudaGetErrorName(status), " in the kernel launched at ", where,
                " (AXIOM_CUDA_SYNC=1): ", cudaGetErrorString(status));
  }
}

namespace {

// The first call asks the runtime how many devices there are; the answer is kept.
struct DeviceQuery {
  bool present = false;
  std::string why_not;
  DeviceQuery() {
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess) {
      why_not = cudaGetErrorString(status);
      (void)cudaGetLastError();  // clear the error, so that later launches do not report it
    } else if (count == 0) {
      why_not = "no CUDA-capable device is detected";
    } else {
      present = true;
    }
  }
};

const DeviceQuery& device_query() {
  static const DeviceQuery query;
  return query;
}

}  // namespace

bool device_present() { return device_query().present; }
const std::string& why_no_device() { return device_query().why_not; }

void require_device(std::string_view op) {
  if (!device_present()) throw Error(op, "no CUDA device: ", why_no_device());
}

cublasHandle_t cublas() {
  static cublasHandle_t handle = [] {
    require_device("cublas");
    cublasHandle_t h = nullptr;
    check(cublasCreate(&h), "cublas");
    return h;  // kept for the life of the process: destroying it at exit could outlive the driver
  }();
  return handle;
}

}  // namespace AXIOM_CUDA_NAMESPACE
