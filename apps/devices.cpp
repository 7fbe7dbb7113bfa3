#include "apps/commands.h"
#include "core/backend.h"

namespace axiom::apps {

core::Device device_of(const char* command, const std::string& flag) {
  const core::Device device = core::Device::parse(flag);
  core::Backend& backend = core::backend(device);
  if (!backend.available()) {
    throw Error(command, "--device ", flag, " cannot run here: ",
                backend.name() == "cuda" ? "no CUDA device was found" : "axiom was built without CUDA (configure with the CUDA toolkit installed)");
  }
  return device;
}

}  // namespace axiom::apps
