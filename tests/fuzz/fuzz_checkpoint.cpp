// checkpoint.json: models::read_checkpoint (its config, training options and RNG state), in a
// directory that holds the files a valid one names, so that inputs can get past those checks.
#include <filesystem>

#include "models/training/training.h"
#include "tests/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string dir = axiom::fuzz::scratch_dir() + "/run";
  std::filesystem::create_directories(dir);
  for (const char* name : {"run/model-000001.safetensors", "run/optimizer-000001.safetensors"}) {
    axiom::fuzz::file_with(nullptr, 0, name);
  }
  axiom::fuzz::file_with(data, size, "run/checkpoint.json");
  axiom::fuzz::refusals_allowed([&] { (void)axiom::models::read_checkpoint(dir); });
  return 0;
}
