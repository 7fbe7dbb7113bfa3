// safetensors files (weights, and the optimizer's state): core::load_safetensors.
#include "core/formats/safetensors.h"
#include "tests/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = axiom::fuzz::file_with(data, size, "input.safetensors");
  axiom::fuzz::refusals_allowed([&] { (void)axiom::core::load_safetensors(path); });
  return 0;
}
