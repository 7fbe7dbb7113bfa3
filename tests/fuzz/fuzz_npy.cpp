// NPY files: data::read_npy.
#include "data/npy.h"
#include "tests/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = axiom::fuzz::file_with(data, size, "input.npy");
  axiom::fuzz::refusals_allowed([&] { (void)axiom::data::read_npy(path); });
  return 0;
}
