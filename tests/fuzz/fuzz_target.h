// What the fuzzers share. Each fuzz_NAME.cpp defines LLVMFuzzerTestOneInput(data, size), which
// hands the bytes to one of axiom's readers. A reader may refuse them with axiom::Error: that is
// its job. Anything else is a finding: another exception (it escapes, and the process aborts), a
// crash, a sanitizer report, a hang or a runaway allocation (libFuzzer's -timeout, -rss_limit_mb).
//
// Built with clang and -DAXIOM_FUZZ=ON, each is a libFuzzer binary; otherwise replay_main.cpp
// makes it a program that runs every input of its corpus once (ctest: fuzz:replay:NAME).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"

namespace axiom::fuzz {

// The bytes as text (JSON readers take text).
inline std::string text_of(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// A directory of this process's own (on /dev/shm when there is one), removed when it exits.
const std::string& scratch_dir();
// Writes the bytes to scratch_dir()/name and returns the path.
std::string file_with(const uint8_t* data, size_t size, const std::string& name);

// Runs `read`; an axiom::Error is a refusal, the expected outcome for most inputs.
template <typename Read>
void refusals_allowed(Read&& read) {
  try {
    read();
  } catch (const axiom::Error&) {
  }
}

}  // namespace axiom::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
