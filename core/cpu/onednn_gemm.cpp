// Large float32 products through oneDNN (see onednn_gemm.h). Each call:
// 1. with bfloat16 operands, copies a and b into bfloat16 (compact, in the same orientation), in
//    parallel over their lines, each rounded in SIMD (vec::round_to_bfloat16); float32 operands
//    are read in place;
// 2. splits c into bands (one per thread for a product alone, one for each of a batch of small
//    products spread over the threads: core/cpu/bands.h) and runs oneDNN's matmul of each band's rows of a and
//    columns of b on axiom's threads (oneTBB), with a float32 output, adding onto c when
//    accumulating. oneDNN's own OpenMP threads are not used: they would keep spinning after each
//    product while axiom's threads run the next op (OpenMP reads its wait policy only at start-up).
//    While a band runs, its thread holds back asynchronous signals (SignalsHeldBack).
#include "core/cpu/onednn_gemm.h"

#include "core/error.h"

#if AXIOM_WITH_ONEDNN

#include <omp.h>
#include <pthread.h>

#include <algorithm>
#include <csignal>
#include <map>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "core/cpu/allocator.h"
#include "core/cpu/bands.h"
#include "core/cpu/vector_math.h"
#include "core/parallel.h"

namespace axiom::core::cpu {

namespace {

using dnnl::memory;

// Bytes from the host allocator for the life of a scope (reused by the tensors after it).
class HostBuffer {
 public:
  explicit HostBuffer(size_t nbytes) : nbytes_(nbytes), data_(nbytes ? host_allocator().allocate(nbytes) : nullptr) {}
  ~HostBuffer() {
    if (data_) host_allocator().deallocate(data_, nbytes_);
  }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  void* data() const { return data_; }

 private:
  size_t nbytes_;
  void* data_;
};

// A matrix as oneDNN reads it: its element type, its [0, 0] element and its strides.
struct Operand {
  memory::data_type type;
  void* data;
  int64_t row_stride, col_stride;

  memory::desc desc(int64_t rows, int64_t cols) const {
    return memory::desc({rows, cols}, type, memory::dims{row_stride, col_stride});
  }
  void* at(int64_t row, int64_t col) const {
    const size_t element = type == memory::data_type::bf16 ? sizeof(uint16_t) : sizeof(float);
    return static_cast<char*>(data) + (row * row_stride + col * col_stride) * static_cast<int64_t>(element);
  }
};

// A matrix of float32 or bfloat16 numbers as BLAS reads it (core/matrix_layout.h), read in place.
Operand operand(memory::data_type type, const MatrixLayout& layout, const void* x) {
  return {type, const_cast<void*>(x), layout.transposed ? 1 : layout.ld, layout.transposed ? layout.ld : 1};
}

// A matrix's bfloat16 copy, in memory from the host allocator.
class Bfloat16Copy {
 public:
  // x [rows, cols] as BLAS reads it; the copy keeps its orientation, with no gaps between lines.
  Bfloat16Copy(const MatrixLayout& layout, int64_t rows, int64_t cols, const float* x)
      : lines_(layout.transposed ? cols : rows),
        line_length_(layout.transposed ? rows : cols),
        transposed_(layout.transposed),
        buffer_(static_cast<size_t>(lines_ * line_length_) * sizeof(uint16_t)),
        bits_(static_cast<uint16_t*>(buffer_.data())) {
    parallel_for(lines_, std::max<int64_t>(1, 16384 / line_length_), [&](int64_t begin, int64_t end) {
      for (int64_t line = begin; line < end; ++line) {
        vec::round_to_bfloat16(x + line * layout.ld, bits_ + line * line_length_, line_length_);
      }
    });
  }
  MatrixLayout layout() const { return {.transposed = transposed_, .ld = line_length_}; }
  const uint16_t* bits() const { return bits_; }

 private:
  int64_t lines_, line_length_;
  bool transposed_;
  HostBuffer buffer_;
  uint16_t* bits_;
};

// What a compiled product is for: c's [rows, columns] and k, a's and b's strides, c's row stride,
// whether it adds onto c, whether a and b are bfloat16 (else float32), whether it adds a bias, and
// whether c is bfloat16 (else float32).
using ProductKey =
    std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, bool, bool, bool, bool>;

// A bias of `columns` float32 numbers, added to every row: [1, columns].
memory::desc bias_desc(int64_t columns) {
  return memory::desc({1, columns}, memory::data_type::f32, memory::dims{columns, 1});
}

// A compiled product and the scratch memory each run of it needs.
struct CompiledProduct {
  dnnl::matmul product;
  memory::desc scratchpad;
};

// oneDNN compiles a kernel for each shape the first time it sees it; they are kept here. Each is
// compiled to take its scratch memory from the caller: oneDNN's own (one buffer shared by all
// products) would let two threads' bands overwrite each other's.
class CompiledProducts {
 public:
  CompiledProduct get(const ProductKey& key, const memory::desc& a, const memory::desc& b, const memory::desc& c) {
    std::lock_guard lock(mutex_);
    auto found = products_.find(key);
    if (found == products_.end()) {
      if (products_.size() >= 1024) products_.clear();  // shapes that keep changing: start over
      found = products_.emplace(key, compile(a, b, c, std::get<8>(key), std::get<10>(key))).first;
    }
    return found->second;
  }

  const dnnl::engine& engine() const { return engine_; }

 private:
  CompiledProduct compile(const memory::desc& a, const memory::desc& b, const memory::desc& c, bool accumulate,
                          bool bias) const {
    dnnl::primitive_attr attributes;
    attributes.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (accumulate) {
      dnnl::post_ops add_onto_c;
      add_onto_c.append_sum(1.0f);
      attributes.set_post_ops(add_onto_c);
    }
    const dnnl::matmul::desc product =
        bias ? dnnl::matmul::desc(a, b, bias_desc(c.dims()[1]), c) : dnnl::matmul::desc(a, b, c);
    const dnnl::matmul::primitive_desc compiled(product, attributes, engine_);
    return {dnnl::matmul(compiled), compiled.scratchpad_desc()};
  }

  dnnl::engine engine_{dnnl::engine::kind::cpu, 0};
  std::mutex mutex_;
  std::map<ProductKey, CompiledProduct> products_;
};

CompiledProducts& compiled_products() {
  static CompiledProducts instance;
  return instance;
}

// Asynchronous signals (SIGINT, SIGTERM, SIGUSR1, a profiler's SIGPROF...) held back from this
// thread for as long as this lives. oneDNN's float32 GEMM kernels for AVX2 and AVX-512, up to
// oneDNN 3.11.1, point the stack pointer at a workspace on the heap when a block of k is long
// (past 252 for AVX2, 84 for AVX-512; k = 256 is): a signal handled then on this thread writes its
// frame (a few KiB) below that workspace, over the heap's bookkeeping (SIGTERM during `axiom
// train` on AVX2 ended in "corrupted size vs. prev_size"; oneDNN issue 4845). Held back, a signal
// goes to another thread of the process, or waits until the product is done. Faults stay
// deliverable: held back, they would end the process before a handler (a sanitizer's report)
// could say where.
class SignalsHeldBack {
 public:
  SignalsHeldBack() { pthread_sigmask(SIG_BLOCK, &asynchronous_signals(), &before_); }
  ~SignalsHeldBack() { pthread_sigmask(SIG_SETMASK, &before_, nullptr); }
  SignalsHeldBack(const SignalsHeldBack&) = delete;
  SignalsHeldBack& operator=(const SignalsHeldBack&) = delete;

 private:
  static const sigset_t& asynchronous_signals() {
    static const sigset_t set = [] {
      sigset_t all;
      sigfillset(&all);
      for (const int fault : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS}) sigdelset(&all, fault);
      return all;
    }();
    return set;
  }

  sigset_t before_;
};

// One band of c = a @ b, on this thread alone.
void multiply_part(const Band& part, const Operand& a, const Operand& b, int64_t k, const GemmOutput& out) {
  // oneDNN's own threads (OpenMP) stay unused: the bands are the parallelism. Told before the
  // product is compiled: oneDNN sizes some of its parallel loops (adding onto c) by the OpenMP
  // thread count of the thread compiling it, at that moment (else the core count).
  omp_set_num_threads(1);
  CompiledProducts& products = compiled_products();
  const memory::desc a_part = a.desc(part.rows, k), b_part = b.desc(k, part.columns);
  const bool c_bfloat16 = out.c_bfloat16 != nullptr;
  const memory::desc c_part({part.rows, part.columns}, c_bfloat16 ? memory::data_type::bf16 : memory::data_type::f32,
                            memory::dims{out.ldc, 1});
  const ProductKey key{part.rows,           part.columns, k,       a.row_stride,   a.col_stride,
                       b.row_stride,        b.col_stride, out.ldc, out.accumulate, a.type == memory::data_type::bf16,
                       out.bias != nullptr, c_bfloat16};
  const int64_t c_at = part.row * out.ldc + part.column;
  const CompiledProduct compiled = products.get(key, a_part, b_part, c_part);
  const HostBuffer scratch(compiled.scratchpad.get_size());
  const dnnl::engine& engine = products.engine();
  std::unordered_map<int, memory> arguments = {
      {DNNL_ARG_SRC, memory(a_part, engine, a.at(part.row, 0))},
      {DNNL_ARG_WEIGHTS, memory(b_part, engine, b.at(0, part.column))},
      {DNNL_ARG_DST, c_bfloat16 ? memory(c_part, engine, out.c_bfloat16 + c_at) : memory(c_part, engine, out.c + c_at)},
      {DNNL_ARG_SCRATCHPAD, memory(compiled.scratchpad, engine, scratch.data())}};
  if (out.bias) {
    arguments.emplace(DNNL_ARG_BIAS,
                      memory(bias_desc(part.columns), engine, const_cast<float*>(out.bias + part.column)));
  }
  dnnl::stream stream(engine);
  const SignalsHeldBack held_back;
  compiled.product.execute(stream, arguments);
  stream.wait();
}

// c [m, n] = a @ b (+ c) (+ bias), split into `bands` bands run in parallel.
void multiply(const Operand& a, const Operand& b, int64_t m, int64_t n, int64_t k, const GemmOutput& out,
              int64_t bands) {
  const std::vector<Band> parts = bands_of(m, n, bands);
  try {
    parallel_for(static_cast<int64_t>(parts.size()), 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) multiply_part(parts[i], a, b, k, out);
    });
  } catch (const dnnl::error& e) {
    throw Error("matmul", "oneDNN's product of [", m, ", ", k, "] and [", k, ", ", n, "] failed: ", e.what());
  }
}

}  // namespace

bool onednn_built() { return true; }

std::string bfloat16_gemm_unavailable_reason() {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512bf16")) {
    return "this CPU has no AVX-512 BF16 instructions, so bfloat16 products would be slower than float32 ones";
  }
  return "";
}

void onednn_gemm(const MatrixLayout& a, const MatrixLayout& b, int64_t m, int64_t n, int64_t k, const float* pa,
                 const float* pb, const GemmOutput& out, bool bfloat16, int64_t bands) {
  if (!bfloat16) {
    return multiply(operand(memory::data_type::f32, a, pa), operand(memory::data_type::f32, b, pb), m, n, k, out,
                    bands);
  }
  const Bfloat16Copy a16(a, m, k, pa), b16(b, k, n, pb);
  onednn_gemm_bfloat16(a16.layout(), b16.layout(), m, n, k, a16.bits(), b16.bits(), out, bands);
}

void onednn_gemm_bfloat16(const MatrixLayout& a, const MatrixLayout& b, int64_t m, int64_t n, int64_t k,
                          const uint16_t* pa, const uint16_t* pb, const GemmOutput& out, int64_t bands) {
  multiply(operand(memory::data_type::bf16, a, pa), operand(memory::data_type::bf16, b, pb), m, n, k, out, bands);
}

}  // namespace axiom::core::cpu

#else  // built without oneDNN: every float32 product goes to OpenBLAS

namespace axiom::core::cpu {

bool onednn_built() { return false; }

std::string bfloat16_gemm_unavailable_reason() {
  return "this build of axiom has no oneDNN (install libdnnl-dev and build again)";
}

void onednn_gemm(const MatrixLayout&, const MatrixLayout&, int64_t, int64_t, int64_t, const float*, const float*,
                 const GemmOutput&, bool, int64_t) {
  throw Error("matmul", "this build of axiom has no oneDNN");
}

void onednn_gemm_bfloat16(const MatrixLayout&, const MatrixLayout&, int64_t, int64_t, int64_t, const uint16_t*,
                          const uint16_t*, const GemmOutput&, int64_t) {
  throw Error("matmul", "this build of axiom has no oneDNN");
}

}  // namespace axiom::core::cpu

#endif
