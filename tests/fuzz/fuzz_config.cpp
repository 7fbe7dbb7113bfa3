// Model configs (JSON): models::config_from_json, what --config FILE reads.
#include "models/config.h"
#include "tests/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  axiom::fuzz::refusals_allowed(
      [&] { (void)axiom::models::config_from_json(axiom::fuzz::text_of(data, size), "fuzz.json"); });
  return 0;
}
