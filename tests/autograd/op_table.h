// The op table: every differentiable op of autograd/ops.h and every differentiable view method of
// axiom::Tensor, once or more, each with sample inputs: broadcasting shapes, leaves whose memory is
// not contiguous (transposed or sliced buffers), empty tensors, values used twice, constants beside
// differentiable inputs. Inputs are float64 and kept away from the points where an op has no
// derivative (0 for abs and relu, ties for maximum, minimum and max).
//
// From this one table the suite runs
//   - gradcheck and gradgradcheck of every case (test_gradcheck_ops.cpp),
//   - every case on the emulated GPU (and a real one, when there is one) against the CPU: forward
//     values, gradients and second derivatives (test_devices.cpp),
//   - the coverage check: every op named in autograd/ops.h and every view method of autograd/tensor.h
//     has a case (test_gradcheck_ops.cpp), so that a new op cannot be forgotten,
//   - every case against PyTorch (tests/python/test_ops_vs_torch.py, through the Python module's
//     axiom._axiom._op_table): forward values, gradients and second derivatives in float64, and
//     forward values in float32.
// A new op gets its cases here, and nowhere else.
#pragma once

#include <string>
#include <vector>

#include "tests/support/samples.h"

namespace axiom::test {

struct OpCase {
  std::string op;  // the op of autograd/ops.h or the Tensor method the case checks ("composite": several ops together)
  std::string what;  // what is particular about its inputs: "broadcast [3, 1, 4] with [5, 1]", ...
  // float64 on the CPU (integer and uint8 ones too: indices, targets, masks). Those that require a
  // gradient are differentiated; the others are constants, passed as inputs so that they move to
  // the device with the rest.
  std::vector<Tensor> inputs;
  Fn f;
  // The same in PyTorch: a Python expression over the inputs, named a, b, c, d, e in order, with
  // torch, F (torch.nn.functional) and the helpers of tests/python/test_ops_vs_torch.py.
  std::string pytorch;
  GradcheckOptions options = {};
};

std::vector<OpCase> op_table();

// The names of the ops that must have a case: the Tensor-returning functions of autograd/ops.h and
// the view methods of autograd/tensor.h (read from the sources under `source_dir`), less those that
// are not differentiable (comparisons, argmax) or not an op of their own.
std::vector<std::string> ops_that_need_a_case(const std::string& source_dir);

}  // namespace axiom::test
