// What a command will allocate, estimated from the config before anything is allocated, so that a
// config, a batch or a sample count that cannot fit ends at once in an Error that gives the estimate
// and the machine's memory, not in std::bad_alloc (or the kernel's out-of-memory killer) halfway
// through building the model.
//
//   const models::MemoryEstimate need = models::training_memory(config, /*batch=*/32);  // measured on meta
//   models::check_fits(need, "train", "training with 32 images a step", "use a smaller --batch");
//
// A training step is measured: the model runs it on the shape-only device (models/cost.h, core/meta),
// which allocates nothing and counts every tensor, so a new layer needs no memory code. Evaluation
// and sampling are still formulas per pixel of each image, with weights fitted to the peak bytes
// that core::allocation_stats measured on 17 configs; tests/models/test_memory_budget.cpp checks
// them against fresh measurements. They describe the CPU backend's float32 tensors; other devices
// are similar (a GPU composes local attention from plain ops, which keeps more).
#pragma once

#include <cstdint>
#include <string>

#include "../core/device.h"
#include "../core/dtype.h"
#include "config.h"

namespace axiom::models {

struct MemoryEstimate {
  double weights = 0;      // bytes: the parameters (training: and their gradients and Adam's two moments)
  double activations = 0;  // bytes: what the forward and backward passes hold at their peak
  double total() const { return weights + activations; }
};

// How many numbers the model holds (exactly the AxialTransformer's; a double, so that an absurd
// config gives a huge number rather than an overflow).
double parameter_count(const ImageModelConfig& c);

// The attention scores that one head of a raster model's block computes per pixel (attention
// "full": every pixel; "local1d", "local2d": its memory blocks, padding included).
double raster_scores_per_pixel(const ImageModelConfig& c);

// One training step on `batch` images (the batch of one process), with parameters of `dtype`, and
// the first `checkpoint_blocks` transformer blocks recomputed in backward (ImageModel::set_checkpoint_blocks):
// measured by running the step on the shape-only device (models/cost.h), as the CPU runs it.
MemoryEstimate training_memory(const ImageModelConfig& c, int64_t batch, core::Dtype dtype = core::Dtype::float32,
                               int64_t checkpoint_blocks = 0);
// The exact likelihood of `batch` images at once, without a graph.
MemoryEstimate evaluation_memory(const ImageModelConfig& c, int64_t batch);
// Drawing `count` images with sample_fast or sample_naive (their Gumbel noise is drawn a row at a time).
MemoryEstimate sampling_memory(const ImageModelConfig& c, int64_t count);

// An Error when `processes_here` processes that each need `need` do not fit in the memory that
// `device` has free (the machine's for the CPU, core::machine_memory; the GPU's for cuda, what
// cudaMemGetInfo says plus the allocator's cache: core::Backend::memory), e.g.
//   [train] training with 2000 images a step needs about 41.2 GiB (weights 25.4 MiB, activations
//   41.2 GiB), but this machine has 23.4 GiB, of which 22.9 GiB is free; use a smaller --batch ...
void check_fits(const MemoryEstimate& need, const char* op, const std::string& what, const std::string& advice,
                int processes_here = 1, core::Device device = core::Device::cpu());

}  // namespace axiom::models
