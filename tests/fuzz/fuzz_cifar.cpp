// CIFAR binary batches: data::read_cifar. The first byte picks CIFAR-10 (even) or CIFAR-100 (odd)
// records; the rest is the file.
#include "data/cifar.h"
#include "tests/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int label_bytes = data[0] % 2 == 0 ? 1 : 2;
  const std::string path = axiom::fuzz::file_with(data + 1, size - 1, "data_batch.bin");
  axiom::fuzz::refusals_allowed([&] { (void)axiom::data::read_cifar({path}, label_bytes); });
  return 0;
}
