#include "apps/commands.h"
#include "core/backend.h"
#include "core/launch.h"

namespace axiom::apps {

Device device_of(const char* command, const std::string& flag) {
  const Device device = Device::parse(flag);
  if (device.type == DeviceType::meta) {
    throw Error(command,
                "--device meta computes nothing (it is the shape-only device that measures what a model allocates); "
                "use cpu or cuda");
  }
  core::Backend& backend = core::backend(device);
  if (!backend.available()) {
    throw Error(command, "--device ", flag, " cannot run here: ",
                backend.name() == "cuda" ? "no CUDA device was found"
                                         : "axiom was built without CUDA (configure with the CUDA toolkit installed)");
  }
  return device;
}

void use_matmul_precision(const char* command, const std::string& flag, const std::string& device_flag) {
  const core::MatmulPrecision precision = core::parse_matmul_precision(flag);
  const bool on_cpu = Device::parse(device_flag).type == DeviceType::cpu;
  if (precision == core::MatmulPrecision::bfloat16 && !on_cpu) {
    throw Error(command, "--precision bfloat16 runs on the CPU only, not on --device ", device_flag);
  }
  if (precision == core::MatmulPrecision::tf32 && on_cpu) {
    throw Error(command, "--precision tf32 runs on a CUDA device only, not on --device ", device_flag);
  }
  if (const std::string reason = core::matmul_precision_unavailable_reason(precision); !reason.empty()) {
    throw Error(command, "--precision ", flag, " cannot run here: ", reason);
  }
  core::set_matmul_precision(precision);
}

}  // namespace axiom::apps
