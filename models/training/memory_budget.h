// What a command will allocate, measured before anything is allocated, so that a config, a batch
// or a sample count that cannot fit ends at once in an Error that gives the estimate and the
// machine's memory, not in std::bad_alloc (or the kernel's out-of-memory killer) halfway through
// building the model.
//
//   const models::MemoryEstimate need = models::training_memory(config, /*batch=*/32);
//   models::check_fits(need, "train", "training with 32 images a step", "use a smaller --batch");
//
// Every estimate is a measurement: the model is made on the shape-only device and runs the work
// there (models/training/cost.h, core/meta), which allocates nothing and counts every tensor, so a new layer
// needs no memory code. Work on up to 64 examples is measured as it is; larger work is measured at
// 32 and 64 and extrapolated, every tensor's size being linear in the examples from there.
#pragma once

#include <cstdint>
#include <string>

#include "../../core/device.h"
#include "cost.h"

namespace axiom::models {

struct MemoryEstimate {
  double weights = 0;      // bytes: the parameters (training: and their gradients and Adam's two moments)
  double activations = 0;  // bytes: everything else alive at the work's peak
  double total() const { return weights + activations; }
};

// One training step on `batch` examples (the batch of one process), as `how` describes it.
// A model whose weights alone exceed the device's memory is not run: its weights refuse it.
MemoryEstimate training_memory(const ModelConfig& config, int64_t batch, const Measuring& how = {});
// Scoring `batch` examples at once, without a graph.
MemoryEstimate evaluation_memory(const ModelConfig& config, int64_t batch, const Measuring& how = {});
// Drawing `count` images with `sampler`.
MemoryEstimate sampling_memory(const ImageModelConfig& config, int64_t count, Sampler sampler = Sampler::fast,
                               const Measuring& how = {});

// An Error when `processes_here` processes that each need `need` do not fit in the memory that
// `device` has free (the machine's for the CPU, machine_memory in core/memory.h; the GPU's for cuda,
// what cudaMemGetInfo says plus the allocator's cache: Backend::memory in core/backend.h), e.g.
//   [train] training with 2000 images a step needs about 41.2 GiB (weights 25.4 MiB, activations
//   41.2 GiB), but this machine has 23.4 GiB, of which 22.9 GiB is free; use a smaller --batch ...
void check_fits(const MemoryEstimate& need, const char* op, const std::string& what, const std::string& advice,
                int processes_here = 1, Device device = Device::cpu());

}  // namespace axiom::models
