// The choice between OpenBLAS and oneDNN for a float32 GEMM (see gemm_choice.h).
#include "core/cpu/gemm_choice.h"

#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "core/cpu/onednn_gemm.h"
#include "core/cpu/vector_math.h"
#include "core/error.h"
#include "core/matmul_precision.h"

namespace axiom::core::cpu {

namespace {

const std::vector<GemmChoice>& table() {
  static const std::vector<GemmChoice> rows = {
#include "core/cpu/gemm_choice_table.inc"
  };
  return rows;
}

// How far a row's measurement is trusted: 4 in log2 units, as when m, n, k and the count are all
// within 2 times of the row's (a step at another batch size), or one of them within 16 times.
constexpr double kNearEnough = 4.0;

// How far apart two shapes are: the sum of |log2| of the ratios of m, n, k and the counts.
double distance(const GemmShape& a, int64_t a_count, const GemmShape& b, int64_t b_count) {
  auto apart = [](int64_t x, int64_t y) {
    return std::abs(
        std::log2(static_cast<double>(std::max<int64_t>(x, 1)) / static_cast<double>(std::max<int64_t>(y, 1))));
  };
  return apart(a.m, b.m) + apart(a.n, b.n) + apart(a.k, b.k) + apart(a_count, b_count);
}

GemmLibrary size_rule(const GemmShape& gemm) {
  return is_large(gemm) && onednn_built() ? GemmLibrary::onednn : GemmLibrary::openblas;
}

// The table's choice for this CPU's key, remembered per shape: a search of the table takes
// microseconds, as long as a small product itself.
GemmLibrary remembered_choice(const GemmShape& gemm, int64_t count) {
  static std::mutex mutex;
  static std::map<std::tuple<GemmShape, int64_t, std::string>, GemmLibrary> choices;
  const std::string table_key = gemm_table_key();  // (the SIMD target may be changed for a test)
  std::lock_guard lock(mutex);
  auto key = std::tuple{gemm, count, table_key};
  if (const auto found = choices.find(key); found != choices.end()) return found->second;
  if (choices.size() >= 4096) choices.clear();  // shapes that keep changing: start over
  const GemmLibrary library = choose_gemm_library(table(), table_key, gemm, count);
  choices.emplace(std::move(key), library);
  return library;
}

// The forced library (ForcedGemmLibrary): -1 for none, else a GemmLibrary.
std::atomic<int> forced{-1};
std::atomic<int64_t> openblas_calls{0}, onednn_calls{0};

}  // namespace

std::string_view to_string(GemmLibrary library) { return library == GemmLibrary::onednn ? "oneDNN" : "OpenBLAS"; }

std::span<const GemmChoice> gemm_choice_table() { return table(); }

std::string gemm_table_key() {
  static const std::string vendor = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_is("amd")) return "AMD";
    if (__builtin_cpu_is("intel")) return "Intel";
    return "other CPU";
  }();
  return vec::target() + " " + vendor;
}

GemmLibrary choose_gemm_library(std::span<const GemmChoice> table, std::string_view key, const GemmShape& gemm,
                                int64_t count) {
  const GemmChoice* nearest = nullptr;
  double nearest_distance = std::numeric_limits<double>::infinity();
  for (const GemmChoice& row : table) {
    if (row.key != key || row.gemm.a_transposed != gemm.a_transposed || row.gemm.b_transposed != gemm.b_transposed ||
        is_large(row.gemm) != is_large(gemm)) {
      continue;
    }
    const double d = distance(row.gemm, row.count, gemm, count);
    if (d <= kNearEnough && d < nearest_distance) nearest = &row, nearest_distance = d;
  }
  if (!nearest) return size_rule(gemm);
  return nearest->library == GemmLibrary::onednn && !onednn_built() ? GemmLibrary::openblas : nearest->library;
}

GemmLibrary gemm_library_choice(const GemmShape& gemm, int64_t count) {
  const int forced_now = forced.load();
  const bool bfloat16 = matmul_precision() == MatmulPrecision::bfloat16 && is_large(gemm);
  const GemmLibrary library = forced_now >= 0 ? static_cast<GemmLibrary>(forced_now)
                              : bfloat16      ? GemmLibrary::onednn  // (set_matmul_precision checked it is built)
                                              : remembered_choice(gemm, count);
  return library;
}

GemmLibrary gemm_library_for(const GemmShape& gemm, int64_t count) {
  const GemmLibrary library = gemm_library_choice(gemm, count);
  (library == GemmLibrary::onednn ? onednn_calls : openblas_calls).fetch_add(1);
  return library;
}

GemmLibraryCalls gemm_library_calls() { return {openblas_calls.load(), onednn_calls.load()}; }

ForcedGemmLibrary::ForcedGemmLibrary(GemmLibrary library) {
  if (library == GemmLibrary::onednn && !onednn_built()) {
    throw Error("matmul", "cannot force oneDNN products: this build of axiom has no oneDNN");
  }
  const int before = forced.exchange(static_cast<int>(library));
  if (before >= 0) previous_ = static_cast<GemmLibrary>(before);
}

ForcedGemmLibrary::~ForcedGemmLibrary() { forced = previous_ ? static_cast<int>(*previous_) : -1; }

}  // namespace axiom::core::cpu
