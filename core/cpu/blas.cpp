// Choosing OpenBLAS's kernels.
//
// Debian builds OpenBLAS with DYNAMIC_ARCH: the library carries kernels for many processors and
// picks one table of them when it loads, from the CPU's identity. Version 0.3.21 (Debian 12) does
// not know recent processors — newer Xeons fall back to the generic "Prescott" (SSE3) kernels and
// AMD Zen 4/5 to "Haswell" (AVX2) — although the AVX-512 ("SkylakeX") kernels run there and are two
// to three times faster. The usual fix is the environment variable OPENBLAS_CORETYPE, but it is read
// only while the library loads, before any code of ours runs.
//
// So axiom asks the CPU itself what it supports, and if the table in use is weaker — whether
// OpenBLAS picked it or an OPENBLAS_CORETYPE set for some other program did — it re-runs OpenBLAS's
// own selection (gotoblas_dynamic_quit / gotoblas_dynamic_init, the code that reads
// OPENBLAS_CORETYPE at load) with the better name. This happens once, when the CPU backend is created, before the first
// BLAS call. To force a table (to compare, or to avoid one), set AXIOM_BLAS_CORETYPE=NAME (an OpenBLAS core name such
// as Haswell or SkylakeX). blas_kernels_report() says what happened; `axiom bench ops` prints it.
#include "core/cpu/blas.h"

#include <cblas.h>

#include <algorithm>
#include <cstdlib>
#include <string_view>

// OpenBLAS's dynamic-architecture entry points. Weak: absent from single-CPU builds, where they
// stay null and the library's own choice is kept.
extern "C" void gotoblas_dynamic_init(void) __attribute__((weak));
extern "C" void gotoblas_dynamic_quit(void) __attribute__((weak));

namespace axiom::core::cpu {

namespace {

std::string lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

// The best kernel table for this CPU, by the instructions it supports.
std::string_view best_core_for_this_cpu() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl")) {
    return "SkylakeX";
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
  return "";
}

// How good a kernel table is: 2 for AVX-512 ones, 1 for AVX2 ones, 0 for the rest.
int tier(std::string_view core) {
  const std::string name = lowercase(std::string(core));
  for (std::string_view avx512 : {"skylakex", "cooperlake", "sapphirerapids"}) {
    if (name == avx512) return 2;
  }
  for (std::string_view avx2 : {"haswell", "zen", "excavator"}) {
    if (name == avx2) return 1;
  }
  return 0;
}

// Re-runs OpenBLAS's kernel selection as if OPENBLAS_CORETYPE had been `name` at load time.
void switch_kernels(const std::string& name) {
  const char* before = std::getenv("OPENBLAS_CORETYPE");
  const std::string saved = before ? before : "";
  setenv("OPENBLAS_CORETYPE", name.c_str(), 1);
  gotoblas_dynamic_quit();
  gotoblas_dynamic_init();
  if (before) {
    setenv("OPENBLAS_CORETYPE", saved.c_str(), 1);  // leave the environment as we found it
  } else {
    unsetenv("OPENBLAS_CORETYPE");
  }
}

std::string choose_kernels() {
  const std::string loaded = openblas_get_corename();
  const char* env = std::getenv("OPENBLAS_CORETYPE");
  const std::string origin =
      env ? std::string("OPENBLAS_CORETYPE=") + env + " chose " + loaded : "OpenBLAS chose " + loaded + " for this CPU";
  const bool can_switch = gotoblas_dynamic_init && gotoblas_dynamic_quit;
  if (const char* wanted = std::getenv("AXIOM_BLAS_CORETYPE"); wanted && *wanted) {
    if (!can_switch) return loaded + " (" + origin + "; this OpenBLAS cannot switch to AXIOM_BLAS_CORETYPE)";
    switch_kernels(wanted);
    return std::string(openblas_get_corename()) + " (AXIOM_BLAS_CORETYPE=" + wanted + ")";
  }
  const std::string best(best_core_for_this_cpu());
  if (best.empty() || tier(best) <= tier(loaded)) return loaded + " (" + origin + ")";
  if (!can_switch) return loaded + " (" + origin + "; this OpenBLAS cannot switch to the faster " + best + ")";
  switch_kernels(best);
  return std::string(openblas_get_corename()) + " (" + origin + "; axiom switched to the faster kernels)";
}

}  // namespace

const std::string& blas_kernels_report() {
  static const std::string report = choose_kernels();  // thread-safe, runs once
  return report;
}

void set_blas_threads(int count) {
  (void)blas_kernels_report();  // switching kernels resets OpenBLAS: choose them first
  openblas_set_num_threads(count);
}

}  // namespace axiom::core::cpu
