// From a Tensor to the kernels' value: for axiom's own layers (autograd's rules, the optimizers,
// the data loaders, the Python module) and for its tests, which call core's launch layer
// (core/launch.h) on the numbers. Not installed and not reached from axiom.h: a user's program
// speaks axiom::Tensor only, and reads numbers with item(), at() and to_vector().
#pragma once

#include "tensor.h"

namespace axiom {

// The numbers of x as core's tensor: they share memory, and autograd never sees a change made
// through them. An Error for an undefined x.
const core::Tensor& core_tensor(const Tensor& x);
// The same, or an undefined core tensor for an undefined x (an optional parameter left out).
inline core::Tensor data_or_undefined(const Tensor& x) { return x.defined() ? core_tensor(x) : core::Tensor(); }

// A gradient summed over the axes that broadcasting added or stretched, back to `shape` (the
// engine's, for every op's gradients; a custom op's checks use it too).
//   [4, 5, 3] -> [5, 1]: sum over axis 0 (added) and axis 2 (stretched from 1)
Tensor sum_to_shape(Tensor grad, const Shape& shape);

// --- the profiler's hooks (profiler.cpp) ----------------------------------------------------------
// Whether a Profiler is running: one atomic load (a plain load on x86), what an op pays when none is.
bool profiling();
// An op that has just computed `output` from `inputs` (call only while profiling()).
void profile_op(const char* name, const std::vector<Tensor>& inputs, const core::Tensor& output);

// While it lives, an event of `kind` ("rule", "op", "range") under `name`: what runs inside it
// nests in it. Costs nothing when no profiler runs.
class ProfiledSpan {
 public:
  ProfiledSpan(const char* name, const char* kind);
  ~ProfiledSpan();
  ProfiledSpan(const ProfiledSpan&) = delete;
  ProfiledSpan& operator=(const ProfiledSpan&) = delete;

 private:
  bool open_;
  uint64_t generation_ = 0;
};

// While it lives, the ops this thread records belong to a backward pass (the engine's walk).
class InBackwardWalk {
 public:
  InBackwardWalk();
  ~InBackwardWalk();
  InBackwardWalk(const InBackwardWalk&) = delete;
  InBackwardWalk& operator=(const InBackwardWalk&) = delete;
};

}  // namespace axiom
