// IDX files, raw or gzip (recognised by their first bytes): data::read_idx.
#include "data/idx.h"
#include "tests/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = axiom::fuzz::file_with(data, size, "input-idx3-ubyte");
  axiom::fuzz::refusals_allowed([&] { (void)axiom::data::read_idx(path); });
  return 0;
}
