// OpenBLAS, set up once: the fastest kernels this CPU can run, and the thread count.
#pragma once

#include <string>

namespace axiom::core::cpu {

// Makes OpenBLAS use the best kernels this CPU supports (see blas.cpp); runs once, on first use.
void ensure_fast_blas_kernels();

// Which kernels OpenBLAS uses, and why: "SkylakeX (OpenBLAS chose Haswell; axiom switched ...)".
const std::string& blas_kernels_report();

void set_blas_threads(int count);

}  // namespace axiom::core::cpu
