// Activation checkpointing: keep a function's input instead of everything inside it, and run the
// function again in the backward pass to get back what its backward rules need.
//
//   y = checkpoint(f, x, parameters, &gen)      same numbers as y = f(x)
//
//   forward:   f(x) runs without recording: nothing made inside f is kept, only x (and the
//              generator's state before f drew anything).
//   backward:  f runs again on x, recording, from that same generator state (so it draws the same
//              dropout masks); the output's gradient goes back through this second graph, which is
//              freed at once; x and the parameters get its gradients.
//
// The second run does the same ops on the same values in the same order, so every gradient is
// bitwise the one the plain y = f(x) gives. The price is one more forward pass of f per backward.
// Transformer blocks use it to trade time for memory (models::AxialTransformer::set_checkpoint_blocks).
#pragma once

#include <functional>
#include <vector>

#include "tensor.h"
#include "../core/random.h"

namespace axiom {

// f must depend only on x and on `parameters` (every tensor inside f that wants a gradient must be
// listed) and draw its random numbers, if any, from `gen` (null: f draws none). f is kept until the
// backward pass runs it again: capture by value what it uses. x [any shape], the result [whatever f returns].
Tensor checkpoint(std::function<Tensor(const Tensor&)> f, const Tensor& x, const std::vector<Tensor>& parameters,
                  Generator* gen = nullptr);

}  // namespace axiom
