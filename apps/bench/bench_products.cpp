// `axiom bench products [--config tiny,small,medium] [--write-table FILE]`: every GEMM shape of
// `axiom bench ops` and of each config's training step, timed in OpenBLAS and in oneDNN (both on
// axiom's threads, as core/cpu/matmul.cpp runs them), next to the library this CPU's table chooses
// (core/cpu/gemm_choice.h). Each figure is the chosen library's GFLOP/s against the better one's.
//
// --write-table FILE: writes the faster library of every shape into FILE
// (core/cpu/gemm_choice_table.inc), as the rows of this CPU's key (its SIMD target and vendor:
// core::cpu::gemm_table_key), keeping the rows of the other keys; a FILE that is not such a table
// is refused, not overwritten.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "apps/bench/bench.h"
#include "apps/bench/products.h"
#include "core/backend.h"
#include "core/core.h"
#include "core/formats/atomic_file.h"
#include "core/cpu/onednn_gemm.h"
#include "core/cpu/vector_math.h"
#include "models/models.h"

namespace axiom::bench {

namespace {

using core::cpu::GemmLibrary;

// The first line of every table file (core/cpu/gemm_choice_table.inc).
constexpr std::string_view kTableFirstLine =
    "// Which library runs each float32 GEMM fastest, per SIMD target and CPU vendor";

// The plans of `axiom bench ops`' products (products.h).
std::vector<core::MetaProduct> ops_products() {
  std::vector<core::MetaProduct> products;
  for (int64_t n : kOpsSquareSides) products.push_back({.plan = {.gemm = {n, n, n}}, .times = 1});
  const int64_t n = kOpsBatchSide;
  products.push_back({.plan = {.gemm = {n, n, n}, .count = kOpsBatch}, .times = 1});
  return products;
}

double gflops(double flops, double seconds) { return seconds > 0 ? flops / seconds / 1e9 : 0; }

void report(const Reporter& reporter, const std::string& group, const PlanTiming& t) {
  reporter.note("  " + group + " " + t.name() + " (" + std::to_string(t.times) + " a step): OpenBLAS " +
                std::to_string(gflops(t.flops(), t.openblas_seconds)) + ", oneDNN " +
                std::to_string(gflops(t.flops(), t.onednn_seconds)) + " GFLOP/s; the table chooses " +
                std::string(core::cpu::to_string(t.chosen)));
  reporter.report({.bench = "products",
                   .name = group + "_" + t.name(),
                   .unit = "GFLOP/s",
                   .value = gflops(t.flops(), t.chosen_seconds()),
                   .baseline = gflops(t.flops(), t.best_seconds()),
                   .baseline_name = "the better library"});
}

// One row of the table file.
std::string table_row(const std::string& key, const PlanTiming& t) {
  const core::GemmShape& g = t.plan.gemm;
  char row[256];
  std::snprintf(row, sizeof row, "{\"%s\", {%lld, %lld, %lld, %s, %s}, %lld, GemmLibrary::%s},  // %.1f, %.1f GFLOP/s",
                key.c_str(), static_cast<long long>(g.m), static_cast<long long>(g.n), static_cast<long long>(g.k),
                g.a_transposed ? "true" : "false", g.b_transposed ? "true" : "false",
                static_cast<long long>(t.plan.count), t.faster() == GemmLibrary::onednn ? "onednn" : "openblas",
                gflops(t.flops(), t.openblas_seconds), gflops(t.flops(), t.onednn_seconds));
  return row;
}

// The rows of `path` for keys other than `key`, and its comment lines; an Error where the file is
// not a table this command wrote.
std::vector<std::string> kept_lines(const std::filesystem::path& path, const std::string& key) {
  std::vector<std::string> kept;
  if (!std::filesystem::exists(path)) return kept;  // a new table
  std::ifstream in(path);
  std::string line;
  if (!std::getline(in, line) || line != kTableFirstLine) {
    throw Error("bench products", "'", path.string(), "' is not a table of GEMM choices (its first line is not \"",
                kTableFirstLine, "\"): not overwriting it");
  }
  kept.push_back(line);
  while (std::getline(in, line)) {
    if (!line.starts_with("{\"" + key + "\",")) kept.push_back(line);
  }
  return kept;
}

// An Error, before any timing, where --write-table could not write `path`: no oneDNN to compare
// with, or a file there that is not a table this command wrote (kept_lines).
void check_table_writable(const std::filesystem::path& path) {
  if (!core::cpu::onednn_built()) {
    throw Error("bench products", "--write-table needs both libraries, and this build of axiom has no oneDNN");
  }
  (void)kept_lines(path, core::cpu::gemm_table_key());
}

// Writes the faster library of each shape into the table at `path` (see the file comment).
void write_table(const std::filesystem::path& path, const std::vector<PlanTiming>& timings) {
  const std::string key = core::cpu::gemm_table_key();
  std::vector<std::string> lines = kept_lines(path, key);
  if (lines.empty()) {
    lines = {std::string(kTableFirstLine),
             "// (core/cpu/gemm_choice.h). Made by `axiom bench products --write-table FILE`, which replaces the rows",
             "// of the CPU it runs on and keeps the others' (apps/bench/README.md says on which CPUs).",
             "// {key, {m, n, k, a transposed, b transposed}, count, library},  // OpenBLAS, oneDNN GFLOP/s"};
  }
  // one row per shape and count of matmul's (attention's own GEMMs are OpenBLAS's whatever the table says)
  std::map<std::pair<core::GemmShape, int64_t>, const PlanTiming*> unique;
  for (const PlanTiming& t : timings) {
    if (!t.plan.in_attention) unique.emplace(std::pair{t.plan.gemm, t.plan.count}, &t);
  }
  for (const auto& [shape, t] : unique) lines.push_back(table_row(key, *t));
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  core::write_file_atomically(path.string(), text, "bench products");  // a fresh temporary name, renamed over
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> words;
  std::stringstream in(text);
  for (std::string word; std::getline(in, word, ',');) {
    if (!word.empty()) words.push_back(word);
  }
  return words;
}

}  // namespace

void bench_products(const Reporter& reporter, const ProductsBenchOptions& options) {
  (void)core::backend(Device::cpu());  // the CPU backend reads AXIOM_SIMD_TARGET when it is made
  reporter.note("axiom bench products: " + std::to_string(core::num_threads()) + " threads, table rows \"" +
                core::cpu::gemm_table_key() +
                "\"; each shape's chosen library against the better of OpenBLAS and oneDNN");
  if (!options.write_table.empty()) check_table_writable(options.write_table);  // before minutes of timing
  std::vector<PlanTiming> all;
  auto measure = [&](const std::string& group, const std::vector<core::MetaProduct>& products) {
    for (const core::MetaProduct& product : products) {
      all.push_back(time_plan(product.plan, product.times));
      report(reporter, group, all.back());
    }
  };
  measure("ops", ops_products());
  for (const std::string& name : split_commas(options.configs)) {
    const models::ImageModelConfig config = models::load_config(name);
    const int64_t batch = preset_batch(name);
    measure(name, models::measured_training_cost(config, batch).products);
  }
  if (!options.write_table.empty()) {
    write_table(options.write_table, all);
    reporter.note("wrote the rows of \"" + core::cpu::gemm_table_key() + "\" into " + options.write_table);
  }
}

}  // namespace axiom::bench
