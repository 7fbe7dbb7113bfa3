// Shared helpers for the autograd tests: the sample inputs (samples.h), and check_grad, which runs
// gradcheck and reports a failure, with gradcheck's own message, at the caller's line.
#pragma once

#include <doctest/doctest.h>

#include <functional>
#include <set>
#include <source_location>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "tests/support/reference.h"
#include "tests/support/samples.h"
#include "autograd/internal.h"

namespace axiom::test {

// Runs gradcheck(fn, inputs, options), then gradgradcheck (the second derivatives, from a graph
// of the backward pass), and fails at the caller's line when either does not pass (or throws),
// with `what` and the check's message.
inline void check_grad(const std::string& what, const Fn& fn, const std::vector<axiom::Tensor>& inputs,
                       const GradcheckOptions& options = {},
                       std::source_location where = std::source_location::current()) {
  const char* file = where.file_name();
  const int line = static_cast<int>(where.line());
  for (const bool second : {false, true}) {
    const std::string check = second ? "gradgradcheck" : "gradcheck";
    GradcheckResult result;
    try {
      result = second ? gradgradcheck(fn, inputs, options) : gradcheck(fn, inputs, options);
    } catch (const std::exception& e) {
      ADD_FAIL_CHECK_AT(file, line, (what + ": " + check + " threw: " + e.what()));
      return;
    }
    if (!result.ok) {
      ADD_FAIL_CHECK_AT(file, line, (what + ": " + check + ": " + result.message));
      return;
    }
  }
}

// The number of distinct buffers holding the gradients of `tensors` (gradients may share memory).
inline int64_t grad_buffers(const std::vector<axiom::Tensor>& tensors) {
  std::set<const core::Storage*> storages;
  for (const axiom::Tensor& t : tensors) {
    if (t.grad().defined()) storages.insert(core_tensor(t.grad()).storage().get());
  }
  return static_cast<int64_t>(storages.size());
}

inline int64_t live_buffers() { return core::allocation_stats().live_buffers; }

}  // namespace axiom::test
