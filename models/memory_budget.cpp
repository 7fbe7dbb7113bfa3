#include "models/memory_budget.h"

#include <algorithm>

#include "core/backend.h"
#include "core/error.h"
#include "core/memory.h"
#include "models/cost.h"
#include "nn/local.h"

namespace axiom::models {

namespace {
constexpr double kValues = 256;   // logits per pixel
constexpr double kFloat = 4;      // bytes of a float32 activation

// How many transformer blocks attend along rows (lines of W pixels) and along columns (lines of H).
struct BlockCounts {
  double rows = 0, columns = 0;
  double total() const { return rows + columns; }
};
// (A raster model's blocks are neither: `raster` counts them.)
BlockCounts block_counts(const ImageModelConfig& c) {
  BlockCounts n;
  if (c.axial()) n.rows = n.columns = static_cast<double>(c.upper_layers / 2);  // outer: unmasked row + masked column
  if (c.axial() && c.inner == Inner::transformer) n.rows += static_cast<double>(c.row_layers);
  if (c.channels > 1) {  // encoder: row, column, row, ...
    n.rows += static_cast<double>((c.encoder_layers + 1) / 2);
    n.columns += static_cast<double>(c.encoder_layers / 2);
  }
  return n;
}
double raster_blocks(const ImageModelConfig& c) { return c.axial() ? 0 : static_cast<double>(c.upper_layers + c.row_layers); }

double pixels(const ImageModelConfig& c) { return static_cast<double>(c.height) * static_cast<double>(c.width); }

// The scores a raster block's local attention keeps per pixel: its mask's [blocks, P, M], padding included (nn/local.h).
double local_scores_per_pixel(const ImageModelConfig& c) {
  const auto [rows, columns] = c.local_block();
  const auto [grid_rows, grid_columns] = c.raster_grid();
  const core::BlockPattern& b = nn::local_mask({.rows = rows, .columns = columns}, grid_rows, grid_columns).pattern();
  return static_cast<double>(b.blocks() * b.block_queries * b.block_keys) / pixels(c);
}
bool local(const ImageModelConfig& c) { return c.attention == Attention::local1d || c.attention == Attention::local2d; }


}  // namespace

double raster_scores_per_pixel(const ImageModelConfig& c) {
  return c.attention == Attention::full ? pixels(c) : local_scores_per_pixel(c);
}

namespace {
// A TransformerBlock: LayerNorm + qkv (D -> 3D) + output (D -> D), then LayerNorm + D -> mD -> D.
double block_parameters(double d, double m) { return 2 * d + (3 * d * d + 3 * d) + (d * d + d) + 2 * d + (d * m * d + m * d) + (m * d * d + d); }

// Without a graph only a few tensors live at once: the widest of them decide the peak.
// (Attention from plain ops, for relative positions, adds its scores along the longer line: about
// six [heads, L] temporaries per pixel at once.)
double evaluation_floats_per_pixel(const ImageModelConfig& c) {
  const double d = static_cast<double>(c.features), m = static_cast<double>(c.ff_multiple);
  const double relative = c.relative > 0 ? 6 * static_cast<double>(c.heads) * static_cast<double>(std::max(c.height, c.width)) : 0;
  // (Local attention's scores, kept by the fused kernel for every block of the image at once.)
  const double scores = local(c) ? static_cast<double>(c.heads) * raster_scores_per_pixel(c) : 0;
  return kValues + 8 * d + 2 * d * m + (c.channels > 1 ? static_cast<double>(c.channels) * d : 0) + relative + scores;
}
}  // namespace

double parameter_count(const ImageModelConfig& c) {
  const double d = static_cast<double>(c.features), m = static_cast<double>(c.ff_multiple);
  const double positions = static_cast<double>(c.height + c.width) * d;  // a FactorizedPositionEmbedding
  // one set (shared, or a raster model's), or the outer's and the inner's
  const double decoder_positions = c.positions == Positions::shared || !c.axial() ? positions : 2 * positions;
  double count = kValues * d + decoder_positions + 2 * d + (d * kValues + kValues);  // embedding, positions, final norm, logits
  count += (block_counts(c).total() + raster_blocks(c)) * block_parameters(d, m);
  if (c.relative > 0) count += block_counts(c).total() * static_cast<double>(2 * c.relative + 1) * (d / static_cast<double>(c.heads));
  if (c.inner == Inner::lstm) count += (d * 4 * d + 4 * d) + d * 4 * d;  // input (with bias) and hidden (without)
  if (c.channels > 1) {
    const double channels = static_cast<double>(c.channels);
    count += channels * kValues * d + channels * d + positions;  // channel values, channel marker, positions
  }
  return count;
}

// Measured, not fitted: the step run on the shape-only device (models/cost.h) at the batch itself,
// or for a batch over 64 at 32 and 64 images, every tensor's size linear in the batch from there
// (where the peak falls can move at small batches, not at large ones); or making the model, if that
// takes more. A model whose weights alone exceed the
// machine is not built to be measured: its weights already refuse it.
MemoryEstimate training_memory(const ImageModelConfig& c, int64_t batch, core::Dtype dtype, int64_t checkpoint_blocks) {
  const double element = static_cast<double>(core::dtype_size(dtype));
  const double weights = 4 * parameter_count(c) * element;  // parameters, gradients, Adam's m and v
  if (weights > static_cast<double>(core::machine_memory().total)) return {.weights = weights, .activations = 0};
  constexpr int64_t kMeasured = 64;  // batches up to this are measured as they are; larger ones from 32 and 64
  const TrainingCost at = measured_training_cost(c, std::min(batch, kMeasured), checkpoint_blocks, dtype);
  double step = at.step_bytes;
  if (batch > kMeasured) {
    const double half = measured_training_cost(c, kMeasured / 2, checkpoint_blocks, dtype).step_bytes;
    step += static_cast<double>(batch - kMeasured) * (at.step_bytes - half) / (kMeasured / 2);
  }
  return {.weights = weights, .activations = std::max(at.making_bytes, step) - weights};
}

MemoryEstimate evaluation_memory(const ImageModelConfig& c, int64_t batch) {
  return {.weights = parameter_count(c) * kFloat,
          .activations = evaluation_floats_per_pixel(c) * pixels(c) * static_cast<double>(batch) * kFloat};
}

MemoryEstimate sampling_memory(const ImageModelConfig& c, int64_t count) {
  const double n = static_cast<double>(count), d = static_cast<double>(c.features);
  // The Gumbel noise of one row, [N, W, 256], and the temporaries that draw it: 6 such arrays.
  const double noise = 6 * kFloat * n * static_cast<double>(c.width) * kValues;
  // Keys and values of the rows above (outer column blocks) and of the pixels to the left (inner blocks).
  // (A raster model: of every pixel, in each block.)
  const double cached = c.axial() ? static_cast<double>(c.upper_layers / 2) * pixels(c) + static_cast<double>(c.row_layers) * static_cast<double>(c.width)
                                  : raster_blocks(c) * pixels(c);
  const double caches = 2 * n * d * kFloat * cached;
  // With more than one channel, the channel encoder runs on whole images: its blocks' widest
  // temporaries (the feed-forward's hidden layer, the block's input and projections) and every
  // channel's embedding.
  const double encoder_floats = 2 * d * static_cast<double>(c.ff_multiple) + 4 * d + static_cast<double>(c.channels) * d;
  const double encoding = c.channels > 1 ? encoder_floats * pixels(c) * n * kFloat : 0;
  // The outer decoder's step: an evaluation of one row of every image.
  const double row_step = evaluation_floats_per_pixel(c) * static_cast<double>(c.width) * n * kFloat;
  return {.weights = parameter_count(c) * kFloat, .activations = noise + caches + std::max(encoding, row_step)};
}

void check_fits(const MemoryEstimate& need, const char* op, const std::string& what, const std::string& advice, int processes_here,
                core::Device device) {
  const bool on_cpu = device.type == core::DeviceType::cpu;
  const core::MachineMemory memory = core::backend(device).memory();
  const double total = need.total() * std::max(processes_here, 1);
  if (total <= static_cast<double>(memory.available)) return;
  const std::string each = processes_here > 1 ? " in each of the " + std::to_string(processes_here) + " processes on this machine" : "";
  const std::string where = on_cpu ? "this machine" : "the GPU (" + device.str() + ")";
  throw Error(op, what, " needs about ", core::format_bytes(need.total()), each, " (weights ", core::format_bytes(need.weights),
              ", activations ", core::format_bytes(need.activations), "), but ", where, " has ",
              core::format_bytes(static_cast<double>(memory.total)), ", of which ", core::format_bytes(static_cast<double>(memory.available)),
              " is free; ", advice);
}

}  // namespace axiom::models
