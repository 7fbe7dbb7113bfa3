// metrics.jsonl as a resumed run reads it: apps::RunLog keeps the whole lines up to the step and
// drops the rest. The first byte picks the step the run resumes at.
#include "apps/run_log.h"
#include "tests/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  axiom::fuzz::file_with(data + 1, size - 1, "metrics.jsonl");
  axiom::fuzz::refusals_allowed([&] { const axiom::apps::RunLog log(axiom::fuzz::scratch_dir(), data[0]); });
  return 0;
}
