// NPZ files (zip archives of NPY files): data::read_npz.
#include "data/npy.h"
#include "tests/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = axiom::fuzz::file_with(data, size, "input.npz");
  axiom::fuzz::refusals_allowed([&] { (void)axiom::data::read_npz(path); });
  return 0;
}
