// The subcommands of `axiom` that work with models: train, classify, eval and sample. axiom.cpp parses the
// command line into these structs and calls the functions; each returns the process's exit code
// and throws axiom::Error for bad input (axiom.cpp prints it on one line).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include "core/distributed/communicator.h"
#include "core/device.h"
#include "models/classifiers.h"

namespace axiom::apps {

// axiom train --config small --data fashion-mnist --out runs/NAME [--steps N] [--minutes M] ...
// The flags of a training run, which `axiom classify` shares (with defaults of its own).
struct TrainCommand {
  std::string out;                     // the run's directory: checkpoints, metrics, loss curve
  std::string config = "small";        // a preset or a JSON file
  std::string data = "fashion-mnist";  // a name from data/datasets.h
  std::string data_dir;                // "" = the dataset's default place
  int64_t steps = 500;                 // train until the run has made this many steps in all
  double minutes = 0;                  // and for at most this long in this invocation; 0 = no limit
  int64_t batch_size = 32;
  double lr = 1e-3;
  double beta1 = 0.9, beta2 = 0.98;
  int64_t warmup_steps = 200;
  std::string schedule = "constant";  // after the warmup: constant, linear or cosine (decays to 0 at --steps)
  double clip = 0;                    // gradient norm clipping; 0 = off
  double weight_decay = 0;            // AdamW's decoupled weight decay; 0 = Adam
  uint64_t seed = 0;
  int64_t eval_every = 100;   // held-out bits/dim and the loss curve every this many steps
  int64_t eval_images = 500;  // how many test images the held-out figure uses
  int64_t checkpoint_every = 100;
  bool resume = false;             // continue the run in `out` (a new one if there is none)
  bool force = false;              // start a run in a non-empty directory that is not a run
  std::string device = "cpu";      // where the model trains: cpu or cuda
  int64_t checkpoint_blocks = 0;   // blocks recomputed in backward instead of kept (less memory, slower)
  std::string matmul = "float32";  // how float32 products multiply: float32, or bfloat16 (faster, less exact)
  int64_t profile = 0;             // profile this many steps (after this invocation's first); 0 = none
  int64_t patience = 0;            // stop after this many held-out evaluations without improvement; 0 = never
  double min_delta = 0;            // an improvement is a held-out loss lower than the best by more than this
  // The flags the user typed, by name ("--lr"): on --resume those that decide the run must agree
  // with the run's own values.
  std::set<std::string> given;
  bool was_given(const std::string& flag) const { return given.count(flag) > 0; }
};
int train(const TrainCommand& command);

// axiom eval --checkpoint runs/NAME [--data NAME] [--split test] [--batch N] [--limit N]
struct EvalCommand {
  std::string checkpoint;
  std::string data;  // "" = the run's training data (fashion-mnist for a bare weights file)
  std::string data_dir;
  std::string split = "test";
  int64_t batch_size = 100;
  int64_t limit = 0;  // evaluate the first `limit` images only; 0 = all
  bool json = false;  // print one JSON object instead of a sentence
  std::string device = "cpu";
};
int evaluate(const EvalCommand& command);

// axiom sample --checkpoint runs/NAME --n 16 --out grid.png [--values grid.npy] [--method naive|fast] [--temperature T]
struct SampleCommand {
  std::string checkpoint;
  std::string out = "samples.png";  // the grid
  std::string values;               // the images' values as .npy, only when named ("" = none)
  int64_t count = 16;
  std::string method = "fast";
  double temperature = 1.0;
  uint64_t seed = 0;
  int64_t columns = 0;  // images per row of the grid; 0 = about a square
  int64_t zoom = 3;     // each pixel drawn as a zoom x zoom square in the PNG
  std::string device = "cpu";
};
int sample(const SampleCommand& command);

// axiom classify --model vit|gru|lstm --out runs/NAME [--steps N] [--batch B] [--lr R] [--resume] ...:
// a classifier of the dataset's labels, trained as `axiom train` trains (checkpoints, --resume,
// --minutes, signals), then its accuracy on the test images (classify.cpp).
struct ClassifyCommand {
  TrainCommand run;  // --out, --steps, --batch, --lr, --resume, ...: axiom.cpp sets classify's defaults
  models::ClassifierKind model = models::ClassifierKind::vit;
  int64_t width = 64;  // the ViT's features D, or the RNN's hidden size
  int64_t layers = 4;  // the ViT's transformer blocks
  int64_t heads = 4;   // the ViT's attention heads
  int64_t patch = 4;   // the ViT's patch side P
  int64_t limit = 0;   // test images to score at the end; 0 = all
};
int classify(const ClassifyCommand& command);
// The classifier the flags describe, for the 28 x 28 images of the datasets with labels.
models::ClassifierConfig classifier_config_of(const ClassifyCommand& command);

// axiom lr-find --out DIR [--config P | --model vit|gru|lstm]: the learning-rate range test
// (lr_find.cpp; models/training/lr_find.h) from a fresh model, its curve into DIR, a rate suggested.
struct LrFindCommand {
  std::string out;                              // a new or empty directory: lr_find.csv, lr_find.png
  std::string config = "tiny";                  // an image model's preset or JSON file
  std::optional<models::ClassifierKind> model;  // or a classifier with classify's default sizes
  std::string data;                             // "" = fashion-mnist
  std::string data_dir;
  int64_t batch_size = 0;  // 0: train's default (32), or classify's (64)
  int64_t steps = 200;
  double start = 1e-6, end = 1;
  uint64_t seed = 0;
};
int lr_find(const LrFindCommand& command);

// axiom graph --config tiny [--batch N] [--gradient] [--out FILE]: the graph of one training step
// (graph.cpp), as DOT text on standard output or in FILE (.dot, .gv; .svg, .png, .pdf drawn by
// Graphviz's dot). A FILE that exists is an Error: axiom writes a new one only.
struct GraphCommand {
  std::string config = "tiny";
  int64_t batch = 2;
  bool gradient = false;  // also the graph of the loss's gradient (create_graph)
  int collapse = 0;       // draw each name scope this deep as one box (a Transformer block: 1)
  std::string out;        // "" = standard output
  uint64_t seed = 0;
};
int graph(const GraphCommand& command);

// The device a --device flag names, checked to be usable here (an Error naming `command` if not:
// axiom built without CUDA, or no GPU).
Device device_of(const char* command, const std::string& flag);

// Makes the process's float32 products multiply as a --precision flag says (float32 or bfloat16;
// MatmulPrecision in core/launch.h), or an Error naming `command` where that cannot run (bfloat16 off the
// CPU, in a build without oneDNN, or on a CPU without AVX-512 BF16).
void use_matmul_precision(const char* command, const std::string& flag, const std::string& device_flag);

// The data-parallel job this process is one rank of (world(); this process alone unless a
// launcher such as mpirun started it). With more than one rank it checks that every rank was given
// the same command line (an Error on every rank if not), and gives each rank its share of this
// machine's cores: min(cores this process may run on, cores / ranks on this machine), unless
// --threads (`threads_given`) or AXIOM_NUM_THREADS decides.
Communicator& join_job(int argc, char** argv, bool threads_given);
// Rank r of N when N > 1, for the start of error messages: "rank 1 of 2: "; else "".
std::string rank_prefix();

}  // namespace axiom::apps
