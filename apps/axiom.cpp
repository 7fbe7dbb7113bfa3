// The `axiom` command. Each subcommand lives in its own file; this one only parses the command line.
//   axiom bench ops|autograd|layers [--json] [--threads N]
#include <CLI/CLI.hpp>

#include <cstdio>

#include "apps/bench/bench.h"
#include "core/error.h"
#include "core/parallel.h"

int main(int argc, char** argv) {
  CLI::App app{"axiom: a readable deep-learning framework — train, evaluate, sample and benchmark"};
  app.require_subcommand(1);

  auto* bench = app.add_subcommand("bench", "Print performance figures (a report, not a test)");
  bench->require_subcommand(1);
  bench->fallthrough();  // `axiom bench ops --json` as well as `axiom bench --json ops`
  bool json = false;
  int threads = 0;
  bench->add_flag("--json", json, "One JSON object per line and figure");
  bench->add_option("--threads", threads, "Threads for oneTBB and OpenBLAS (default: AXIOM_NUM_THREADS or all cores)")
      ->check(CLI::Range(1, 4096));
  auto* ops = bench->add_subcommand("ops", "Core kernels: matmul, elementwise, softmax");
  auto* autograd = bench->add_subcommand("autograd", "Graph recording and backward overhead; matmul backward/forward");
  auto* layers = bench->add_subcommand("layers", "Axial attention along each axis next to Dense and raw sgemm");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  try {
    if (threads > 0) axiom::core::set_num_threads(threads);
    const axiom::bench::Reporter reporter(json);
    if (ops->parsed()) axiom::bench::bench_ops(reporter);
    if (autograd->parsed()) axiom::bench::bench_autograd(reporter);
    if (layers->parsed()) axiom::bench::bench_layers(reporter);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "axiom: %s\n", e.what());
    return 1;
  }
  return 0;
}
