// The `axiom` command. Each subcommand lives in its own file; this one only parses the command line.
//   axiom train  --config small --data fashion-mnist --out runs/NAME [--steps N] [--minutes M] [--resume] ...
//   axiom eval   --checkpoint runs/NAME [--data NAME] [--split test] [--limit N]
//   axiom sample --checkpoint runs/NAME --n 16 --out grid.png [--values grid.npy] [--method naive|fast] [--temperature
//   T]
// train, eval and sample take --device cpu|cuda (cuda: when axiom was built with CUDA and a GPU is present).
//   axiom classify --model vit|gru|lstm --out runs/NAME [--steps N] [--batch B] [--lr R] [--resume] ...
//   axiom bench  ops|autograd|layers|train|sample|allreduce|products [--json]
// Every subcommand takes --threads N. Bad flags and bad input end in one line on standard error
// ("axiom: ...") and a non-zero exit code.
// Under mpirun, `train`, `classify`, `eval`, `bench train` and `bench allreduce` run as one data-parallel job
// (rank 0 prints and writes); an error on any rank is printed by that rank, which then ends the
// whole job (MPI_Abort), so that no rank waits forever for it.
#include <CLI/CLI.hpp>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <type_traits>
#include <new>

#include <nlohmann/json.hpp>

#include "apps/bench/bench.h"
#include "apps/commands.h"
#include "core/error.h"
#include "core/parallel.h"
#include "data/datasets.h"
#include "models/config.h"
#include "models/training/training.h"

// For the sanitizer build (no effect otherwise): fontconfig, under cairo under giza's plots, keeps
// its configuration and font caches until the process ends, which LeakSanitizer would report.
extern "C" const char* __lsan_default_suppressions() { return "leak:libfontconfig.so\n"; }

namespace {

// --config's help: the preset names come from models/config.cpp's one table.
std::string config_help() { return "A preset (" + axiom::models::preset_names() + ") or a JSON file"; }

using axiom::apps::ClassifyCommand;
using axiom::apps::EvalCommand;
using axiom::apps::GraphCommand;
using axiom::apps::LrFindCommand;
using axiom::apps::SampleCommand;
using axiom::apps::TrainCommand;

// --- strict numbers ------------------------------------------------------------------------------
// A numeric flag's text must be a whole number (or, for a real one, a finite number) within the
// flag's range: "99999999999999999999" is not clamped to the largest int64, "-1" does not wrap to
// a huge unsigned seed, "nan" is not a learning rate. CLI11 prints "--flag: " before the message.

template <typename T>
std::string range_text(T low, T high) {
  std::ostringstream text;
  text << "[" << low << ", " << high << "]";
  return text.str();
}

template <typename T>
CLI::Validator whole_number(T low, T high) {
  const std::string range = range_text(low, high);
  return CLI::Validator(
      [low, high, range](std::string& text) -> std::string {
        T value{};
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        const bool whole = error == std::errc() && end == text.data() + text.size();
        const bool negative_unsigned =
            std::is_unsigned_v<T> && text.size() > 1 && text[0] == '-' && text[1] >= '0' && text[1] <= '9';
        if (error == std::errc::result_out_of_range || negative_unsigned || (whole && (value < low || value > high))) {
          return "'" + text + "' is outside the accepted range " + range;
        }
        if (error != std::errc() || end != text.data() + text.size())
          return "'" + text + "' is not a whole number in " + range;
        return "";
      },
      "INT in " + range);
}

CLI::Validator real_number(double low, double high) {
  const std::string range = range_text(low, high);
  return CLI::Validator(
      [low, high, range](std::string& text) -> std::string {
        double value = 0;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (error != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) {
          return "'" + text + "' is not a number in " + range;
        }
        if (value < low || value > high) return "'" + text + "' is outside the accepted range " + range;
        return "";
      },
      "NUMBER in " + range);
}

// A path: any bytes but valid UTF-8, as axiom writes the paths it is given into JSON files
// (checkpoint.json, eval --json), which hold only UTF-8. (nlohmann's own check, the one that would
// otherwise fail later, after work was done.)
CLI::Validator utf8_path() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        try {
          (void)nlohmann::json(text).dump();
          return "";
        } catch (const nlohmann::json::type_error&) {
          return "'" + text + "' is not valid UTF-8 (axiom records the paths it is given in JSON files)";
        }
      },
      "PATH");
}

constexpr int64_t kMaxSteps = 1'000'000'000'000, kMaxBatch = 1 << 20, kMaxBlocks = 1 << 20;
constexpr const char* kCheckpointBlocksHelp =
    "Recompute the first N transformer blocks in the backward pass instead of keeping their activations: "
    "less memory, the same gradients, a slower step (0: none; the model's block count or more: all)";
constexpr const char* kPrecisionHelp =
    "The precision of the float32 model's matrix products: float32, or bfloat16 (operands rounded to bfloat16 and "
    "kept so for the backward pass, sums, weights, optimizer state and loss in float32; about twice as fast on a CPU "
    "with AVX-512 BF16, CPU only), or tf32 (operands rounded to TF32 on the GPU's tensor cores, sums in float32; "
    "--device cuda only). --matmul is its earlier name";
// The precision flag's names: --matmul, its first name, still works.
constexpr const char* kPrecisionNames = "--precision,--matmul";
constexpr uint64_t kMaxSeed = std::numeric_limits<uint64_t>::max();

void add_threads(CLI::App* command, int& threads) {
  command
      ->add_option("--threads", threads,
                   "Threads for the kernels and matrix products (default: AXIOM_NUM_THREADS or all cores)")
      ->check(whole_number(1, 4096));
}

// The flags of a training run, which `axiom train` and `axiom classify` share; their defaults are
// the command's (c's values when this is called). On --resume, those that decide the run must
// agree with the run's (train.cpp).
void add_run_flags(CLI::App* command, TrainCommand& c, const std::string& data_help, const CLI::Validator& data_check) {
  command->add_option("--out", c.out, "The run's directory: checkpoints, metrics.jsonl, loss.png")
      ->required()
      ->check(utf8_path());
  command->add_option("--data", c.data, data_help)->capture_default_str()->check(data_check);
  command->add_option("--data-dir", c.data_dir, "Where the dataset's files are (default: its usual place)")
      ->check(utf8_path());
  command
      ->add_option("--steps", c.steps, "Train until the run has made this many steps (a decaying schedule ends there)")
      ->capture_default_str()
      ->check(whole_number<int64_t>(1, kMaxSteps));
  command->add_option("--minutes", c.minutes, "Stop after this many minutes in this invocation (0: no limit)")
      ->capture_default_str()
      ->check(real_number(0, 1e7));
  command->add_option("--batch", c.batch_size, "Images per step")
      ->capture_default_str()
      ->check(whole_number<int64_t>(1, kMaxBatch));
  command->add_option("--lr", c.lr, "Adam's peak learning rate, reached at the end of the warmup")
      ->capture_default_str()
      ->check(real_number(1e-12, 10));
  command->add_option("--beta1", c.beta1, "Adam's decay of the gradients' running mean")
      ->capture_default_str()
      ->check(real_number(0, 0.999999));
  command->add_option("--beta2", c.beta2, "Adam's decay of the squared gradients' running mean")
      ->capture_default_str()
      ->check(real_number(0, 0.999999));
  command->add_option("--weight-decay", c.weight_decay, "AdamW's decoupled weight decay (0: Adam)")
      ->capture_default_str()
      ->check(real_number(0, 10));
  command
      ->add_option(
          "--warmup", c.warmup_steps,
          "Steps of linear warmup from 0 to --lr (default for a linear or cosine schedule: this value or a fifth of "
          "--steps, the smaller)")
      ->capture_default_str()
      ->check(whole_number<int64_t>(0, kMaxSteps));
  command->add_option("--schedule", c.schedule, "After the warmup: constant, or linear or cosine decay to 0 at --steps")
      ->capture_default_str()
      ->check(CLI::IsMember(axiom::models::lr_schedule_names()));
  command->add_option("--clip", c.clip, "Clip the gradients' global norm (0: off)")
      ->capture_default_str()
      ->check(real_number(0, 1e6));
  command->add_option("--seed", c.seed, "Seed of the weights, the batch order and the random draws")
      ->capture_default_str()
      ->check(whole_number<uint64_t>(0, kMaxSeed));
  command->add_option("--eval-every", c.eval_every, "Held-out evaluation and loss curve every N steps")
      ->capture_default_str()
      ->check(whole_number<int64_t>(1, kMaxSteps));
  command->add_option("--eval-images", c.eval_images, "Test images in the held-out evaluation")
      ->capture_default_str()
      ->check(whole_number<int64_t>(1, kMaxBatch));
  command->add_option("--checkpoint-every", c.checkpoint_every, "Write a checkpoint every N steps")
      ->capture_default_str()
      ->check(whole_number<int64_t>(1, kMaxSteps));
  command->add_option("--device", c.device, "Where to train: cpu, cuda or cuda:N")->capture_default_str();
  command->add_option(kPrecisionNames, c.matmul, kPrecisionHelp)
      ->capture_default_str()
      ->check(CLI::IsMember({"float32", "bfloat16", "tf32"}));
  command
      ->add_option("--patience", c.patience,
                   "Stop when N held-out evaluations in a row have not improved (by more than --min-delta); the best "
                   "one's checkpoint is kept in --out/best")
      ->check(whole_number<int64_t>(1, kMaxSteps));
  command
      ->add_option("--min-delta", c.min_delta,
                   "With --patience: an improvement is a held-out loss lower than the best by more than this")
      ->capture_default_str()
      ->check(real_number(0, 1e6));
  command
      ->add_option("--profile", c.profile,
                   "Profile N steps (after this invocation's first): a table per op, forward and backward, and "
                   "profile.csv, profile.trace.json (chrome://tracing) in --out")
      ->check(whole_number<int64_t>(1, kMaxSteps));
  command->add_flag("--resume", c.resume, "Continue the run in --out where it stopped (start one if there is none)");
  command->add_flag("--force", c.force,
                    "Start a run in an --out that holds other files (never ones a run writes: metrics.jsonl, loss.png, "
                    "model-*/optimizer-*.safetensors); nothing there is deleted");
}

void add_train(CLI::App* train, TrainCommand& c) {
  static const std::string data_help = std::string("Dataset: ") + axiom::data::dataset_names();
  add_run_flags(train, c, data_help, utf8_path());
  train->add_option("--config", c.config, config_help())->capture_default_str()->check(utf8_path());
  train->add_option("--checkpoint-blocks", c.checkpoint_blocks, kCheckpointBlocksHelp)
      ->capture_default_str()
      ->check(whole_number<int64_t>(0, kMaxBlocks));
}

// The flags of `command` that the user typed, by their long names ("--lr").
std::set<std::string> given_flags(const CLI::App* command) {
  std::set<std::string> given;
  for (const CLI::Option* option : command->get_options()) {
    if (option->count() > 0) given.insert(option->get_name());
  }
  return given;
}

void add_eval(CLI::App* eval, EvalCommand& c) {
  eval->add_option("--checkpoint", c.checkpoint, "A run's directory or a model-*.safetensors file")
      ->required()
      ->check(utf8_path());
  eval->add_option("--data", c.data, "Dataset (default: the run's own)")->check(utf8_path());
  eval->add_option("--data-dir", c.data_dir, "Where the dataset's files are")->check(utf8_path());
  eval->add_option("--split", c.split, "train or test")->capture_default_str()->check(CLI::IsMember({"train", "test"}));
  eval->add_option("--batch", c.batch_size, "Images per forward pass")
      ->capture_default_str()
      ->check(whole_number<int64_t>(1, kMaxBatch));
  eval->add_option("--limit", c.limit, "Evaluate the first N images only (0: all)")
      ->capture_default_str()
      ->check(whole_number<int64_t>(0, kMaxSteps));
  eval->add_option("--device", c.device, "Where to run the model: cpu, cuda or cuda:N")->capture_default_str();
  eval->add_flag("--json", c.json, "Print one JSON object");
}

std::map<std::string, axiom::models::ClassifierKind> classifier_kinds() {
  std::map<std::string, axiom::models::ClassifierKind> kinds;
  using Kind = axiom::models::ClassifierKind;
  for (const Kind kind : {Kind::vit, Kind::gru, Kind::lstm}) kinds[axiom::models::name_of(kind)] = kind;
  return kinds;
}

void add_lr_find(CLI::App* lr_find, LrFindCommand& c) {
  lr_find->add_option("--out", c.out, "A new or empty directory for lr_find.csv and lr_find.png")
      ->required()
      ->check(utf8_path());
  lr_find->add_option("--config", c.config, "An image model: a preset (tiny, small, ...) or a JSON file")
      ->capture_default_str()
      ->check(utf8_path());
  lr_find
      ->add_option_function<std::string>(
          "--model", [&c](const std::string& name) { c.model = classifier_kinds().at(name); },
          "Or a classifier with axiom classify's default sizes: vit, gru or lstm")
      ->check(CLI::IsMember({"vit", "gru", "lstm"}));
  lr_find->add_option("--data", c.data, "Dataset (default fashion-mnist)")->check(utf8_path());
  lr_find->add_option("--data-dir", c.data_dir, "Where the dataset's files are")->check(utf8_path());
  lr_find->add_option("--batch", c.batch_size, "Images per step (default: train's 32, classify's 64)")
      ->check(whole_number<int64_t>(1, kMaxBatch));
  lr_find->add_option("--steps", c.steps, "Steps of the test, one rate each")
      ->capture_default_str()
      ->check(whole_number<int64_t>(10, 100000));
  lr_find->add_option("--start", c.start, "The first rate")->capture_default_str()->check(real_number(1e-12, 10));
  lr_find->add_option("--end", c.end, "The last rate (above --start)")
      ->capture_default_str()
      ->check(real_number(1e-12, 100));
  lr_find->add_option("--seed", c.seed, "Seed of the weights and the batch order")
      ->capture_default_str()
      ->check(whole_number<uint64_t>(0, kMaxSeed));
}

void add_graph(CLI::App* graph, GraphCommand& c) {
  graph->add_option("--config", c.config, "A preset (tiny, small, ...) or a JSON file")
      ->capture_default_str()
      ->check(utf8_path());
  graph->add_option("--batch", c.batch, "Images in the step")
      ->capture_default_str()
      ->check(whole_number<int64_t>(1, 64));
  graph->add_flag("--gradient", c.gradient,
                  "Draw the graph of the loss's gradient too (recorded with create_graph; its ops filled orange)");
  graph
      ->add_option("--collapse", c.collapse,
                   "Draw each Transformer block as one box (1; each scope 2 deep: 2, ...); 0: every op")
      ->capture_default_str()
      ->check(whole_number<int>(0, 8));
  graph->add_option("--out", c.out, "A new .dot or .gv file, or a picture drawn by Graphviz: .svg, .png or .pdf")
      ->check(utf8_path());
  graph->add_option("--seed", c.seed, "Seed of the weights and the random images")
      ->capture_default_str()
      ->check(whole_number<uint64_t>(0, kMaxSeed));
}

void add_sample(CLI::App* sample, SampleCommand& c) {
  sample->add_option("--checkpoint", c.checkpoint, "A run's directory or a model-*.safetensors file")
      ->required()
      ->check(utf8_path());
  sample->add_option("--out", c.out, "The PNG grid")->capture_default_str()->check(utf8_path());
  sample
      ->add_option("--values", c.values,
                   "Also write the images' values to this .npy file: uint8 [N, H, W] or [N, C, H, W]")
      ->check(utf8_path());
  sample->add_option("--n", c.count, "How many images")
      ->capture_default_str()
      ->check(whole_number<int64_t>(1, kMaxBatch));
  sample->add_option("--method", c.method, "fast (semi-parallel) or naive (the whole model per pixel)")
      ->capture_default_str()
      ->check(CLI::IsMember({"fast", "naive"}));
  sample->add_option("--temperature", c.temperature, "Divides the logits: < 1 sharper, > 1 more varied")
      ->capture_default_str()
      ->check(real_number(1e-3, 1e3));
  sample->add_option("--seed", c.seed, "Seed of the uniforms each pixel is drawn with")
      ->capture_default_str()
      ->check(whole_number<uint64_t>(0, kMaxSeed));
  sample->add_option("--columns", c.columns, "Images per row of the grid (0: about square)")
      ->capture_default_str()
      ->check(whole_number<int64_t>(0, kMaxBatch));
  sample->add_option("--zoom", c.zoom, "Draw each pixel as a zoom x zoom square")
      ->capture_default_str()
      ->check(whole_number<int64_t>(1, 16));
  sample->add_option("--device", c.device, "Where to run the model: cpu, cuda or cuda:N")->capture_default_str();
}

// --model's names, and the classifiers they name.

void add_classify(CLI::App* classify, ClassifyCommand& c) {
  TrainCommand& run = c.run;  // classify's defaults: AdamW, a linear decay to 0 at the last step
  run.steps = 3000, run.batch_size = 64, run.lr = 2e-3, run.weight_decay = 0.05, run.warmup_steps = 100,
  run.schedule = "linear";
  run.eval_every = 500, run.checkpoint_every = 500;
  add_run_flags(classify, run, "fashion-mnist or mnist", CLI::IsMember({"fashion-mnist", "mnist"}));
  // Parsed by name, so that --help lists names (vit, gru, lstm), never the enum's numbers.
  classify
      ->add_option_function<std::string>(
          "--model", [&c](const std::string& name) { c.model = classifier_kinds().at(name); },
          "vit (a Vision Transformer), gru or lstm (reading the image row by row)")
      ->default_str(axiom::models::name_of(c.model))
      ->check(CLI::IsMember({"vit", "gru", "lstm"}));
  classify->add_option("--width", c.width, "The ViT's features, or the RNN's hidden size")
      ->capture_default_str()
      ->check(whole_number<int64_t>(1, 4096));
  classify->add_option("--layers", c.layers, "The ViT's transformer blocks")
      ->capture_default_str()
      ->check(whole_number<int64_t>(0, 1000));
  classify->add_option("--heads", c.heads, "The ViT's attention heads (they divide --width)")
      ->capture_default_str()
      ->check(whole_number<int64_t>(1, 4096));
  classify->add_option("--patch", c.patch, "The ViT's patch side (it divides the image's sides)")
      ->capture_default_str()
      ->check(whole_number<int64_t>(1, 4096));
  classify->add_option("--limit", c.limit, "Score the first N test images at the end (0: all)")
      ->capture_default_str()
      ->check(whole_number<int64_t>(0, kMaxSteps));
}

// `axiom bench ...`: the subcommands, and the options they fill in.
struct BenchCommands {
  CLI::App *bench = nullptr, *ops = nullptr, *autograd = nullptr, *layers = nullptr, *train = nullptr,
           *sample = nullptr, *allreduce = nullptr, *products = nullptr;
  bool json = false;
  axiom::bench::TrainBenchOptions train_options;
  axiom::bench::SampleBenchOptions sample_options;
  axiom::bench::ProductsBenchOptions products_options;
};

void add_bench(CLI::App& app, BenchCommands& b) {
  b.bench = app.add_subcommand("bench", "Print performance figures (a report, not a test)");
  b.bench->require_subcommand(1);
  b.bench->fallthrough();  // `axiom bench ops --json` as well as `axiom bench --json ops`
  b.bench->add_flag("--json", b.json, "One JSON object per line and figure");
  b.ops = b.bench->add_subcommand("ops", "Core kernels: matmul, elementwise, softmax");
  b.autograd = b.bench->add_subcommand("autograd", "Graph recording and backward overhead; matmul backward/forward");
  b.layers = b.bench->add_subcommand(
      "layers",
      "Axial attention along each axis next to Dense and raw sgemm; relative position logits, direct and skewed");
  b.train = b.bench->add_subcommand("train", "One training step of the Axial Transformer: time, memory, GFLOP/s");
  b.train->add_option("--config", b.train_options.config, config_help())->capture_default_str();
  b.train
      ->add_option("--batch", b.train_options.batch,
                   "Images per step (default: the preset's: tiny 16, small 32, medium 16)")
      ->check(whole_number<int64_t>(1, kMaxBatch));
  b.train->add_option("--steps", b.train_options.steps, "Timed steps")
      ->capture_default_str()
      ->check(whole_number(1, 1000));
  b.train->add_option("--device", b.train_options.device, "cpu or cuda")->capture_default_str();
  b.train->add_option("--checkpoint-blocks", b.train_options.checkpoint_blocks, kCheckpointBlocksHelp)
      ->capture_default_str()
      ->check(whole_number<int64_t>(0, kMaxBlocks));
  b.train->add_option(kPrecisionNames, b.train_options.matmul, kPrecisionHelp)
      ->capture_default_str()
      ->check(CLI::IsMember({"float32", "bfloat16", "tf32"}));
  b.train
      ->add_option("--profile", b.train_options.profile,
                   "Then profile N more steps and print where their time goes, per op, forward and backward")
      ->check(whole_number(1, 1000));
  b.products = b.bench->add_subcommand(
      "products",
      "Each GEMM shape of bench ops and of the training steps in OpenBLAS and oneDNN, and the library chosen");
  b.products->add_option("--config", b.products_options.configs, "Configs whose training steps' products are timed")
      ->capture_default_str();
  b.products->add_option(
      "--write-table", b.products_options.write_table,
      "Write this CPU's faster library of each shape into this table (core/cpu/gemm_choice_table.inc)");
  b.allreduce = b.bench->add_subcommand("allreduce",
                                        "MPI allreduce of 1 to 64 MiB across the ranks of mpirun: time and bandwidth");
  b.sample = b.bench->add_subcommand("sample", "Milliseconds per image of the naive and the semi-parallel sampler");
  b.sample->add_option("--config", b.sample_options.config, config_help())->capture_default_str();
  b.sample->add_option("--device", b.sample_options.device, "cpu or cuda")->capture_default_str();
}

// Runs the bench subcommand that was parsed; rank 0 alone prints under mpirun.
void run_bench(const BenchCommands& b, axiom::core::Communicator& comm) {
  const axiom::bench::Reporter reporter(b.json, /*quiet=*/comm.rank() != 0);
  if (b.ops->parsed()) axiom::bench::bench_ops(reporter);
  if (b.autograd->parsed()) axiom::bench::bench_autograd(reporter);
  if (b.layers->parsed()) axiom::bench::bench_layers(reporter);
  if (b.train->parsed()) axiom::bench::bench_train(reporter, b.train_options, comm);
  if (b.sample->parsed()) axiom::bench::bench_sample(reporter, b.sample_options);
  if (b.allreduce->parsed()) axiom::bench::bench_allreduce(reporter, comm);
  if (b.products->parsed()) axiom::bench::bench_products(reporter, b.products_options);
}

// CLI11's errors are printed as one line naming the subcommand's help; --help prints the help.
int parse_error(const CLI::App& app, const CLI::ParseError& e, int argc, char** argv) {
  if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
  const std::string first = argc > 1 ? argv[1] : "";
  std::string commands;  // the app's own list, so that a new command is never called unknown
  bool a_command = false;
  for (const CLI::App* command : app.get_subcommands([](const CLI::App*) { return true; })) {
    commands += (commands.empty() ? "" : ", ") + command->get_name();
    a_command = a_command || command->get_name() == first;
  }
  if (!first.empty() && first[0] != '-' && !a_command) {  // (CLI11 would say "A subcommand is required")
    std::fprintf(stderr, "axiom: '%s' is not a command: %s (see axiom --help)\n", argv[1], commands.c_str());
    return static_cast<int>(CLI::ExitCodes::ExtrasError);
  }
  std::fprintf(stderr, "axiom: %s (see axiom --help)\n", e.what());
  return e.get_exit_code();
}

// Prints the error on one line and ends the command; the other ranks of an MPI job may be waiting
// for this one in a collective, so the whole job ends (MPI_Abort).
int fail(const char* message) {
  std::fprintf(stderr, "axiom: %s%s\n", axiom::apps::rank_prefix().c_str(), message);
  std::fflush(stderr);
  if (axiom::core::world_started() && axiom::core::world().size() > 1) axiom::core::world().abort(1);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"axiom: a readable deep-learning framework — train, evaluate, sample and benchmark"};
  app.require_subcommand(1);
  int threads = 0;

  TrainCommand train_command;
  auto* train = app.add_subcommand(
      "train", "Train an Axial Transformer (or a raster Transformer), with checkpoints and a loss curve");
  add_train(train, train_command);
  EvalCommand eval_command;
  auto* eval = app.add_subcommand("eval", "Exact bits/dim of a trained model on a test set");
  add_eval(eval, eval_command);
  SampleCommand sample_command;
  auto* sample = app.add_subcommand(
      "sample", "Draw images from a trained model: a PNG grid (and their values as NPY with --values)");
  add_sample(sample, sample_command);

  ClassifyCommand classify_command;
  auto* classify = app.add_subcommand(
      "classify",
      "Train a classifier of Fashion-MNIST's labels (vit, gru, lstm), with checkpoints, and print its test accuracy");
  add_classify(classify, classify_command);

  GraphCommand graph_command;
  auto* graph = app.add_subcommand(
      "graph", "Print the graph of one training step of a model as Graphviz's DOT text (or draw it into --out)");
  add_graph(graph, graph_command);

  LrFindCommand lr_find_command;
  auto* lr_find = app.add_subcommand(
      "lr-find", "Find a learning rate: train a fresh model at rates growing from --start to --end, suggest one");
  add_lr_find(lr_find, lr_find_command);

  BenchCommands bench;
  add_bench(app, bench);
  for (CLI::App* command : {train, eval, sample, classify, lr_find, bench.bench}) add_threads(command, threads);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return parse_error(app, e, argc, argv);
  }

  try {
    axiom::core::Communicator& comm = axiom::apps::join_job(argc, argv, threads > 0);
    if (threads > 0) axiom::core::set_num_threads(threads);
    axiom::core::num_threads();  // (reads AXIOM_NUM_THREADS now: a bad value is refused before any work)
    const bool one_process_only = sample->parsed() || graph->parsed() || lr_find->parsed() || bench.ops->parsed() ||
                                  bench.autograd->parsed() || bench.layers->parsed() || bench.sample->parsed();
    if (one_process_only && comm.size() > 1) {
      throw axiom::Error("axiom", "this command runs in one process; mpirun started ", comm.size(),
                         " (train, classify, eval, bench train and bench allreduce run across processes)");
    }
    if (train->parsed()) {
      train_command.given = given_flags(train);
      return axiom::apps::train(train_command);
    }
    if (eval->parsed()) return axiom::apps::evaluate(eval_command);
    if (sample->parsed()) return axiom::apps::sample(sample_command);
    if (graph->parsed()) return axiom::apps::graph(graph_command);
    if (lr_find->parsed()) return axiom::apps::lr_find(lr_find_command);
    if (classify->parsed()) {
      classify_command.run.given = given_flags(classify);
      return axiom::apps::classify(classify_command);
    }
    run_bench(bench, comm);
  } catch (const std::bad_alloc&) {  // memory outside tensors (which raise an Error of their own)
    return fail("out of memory (std::bad_alloc); a smaller --batch, config or --n needs less");
  } catch (
      const std::filesystem::filesystem_error& e) {  // (an unexpected one; the usual cases are Errors of their own)
    return fail(("'" + e.path1().string() + "': " + e.code().message()).c_str());
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  return 0;
}
