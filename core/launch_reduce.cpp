// Op functions for reductions: normalise the axes, size the output, call the backend.
#include <algorithm>

#include "core/backend.h"
#include "core/checks.h"
#include "core/error.h"
#include "core/factory.h"
#include "core/launch.h"

namespace axiom::core {

namespace {

struct Reduced {
  Tensor values;
  Tensor indices;  // max only, when asked for
};

Reduced reduce_op(ReduceOp op, const Tensor& x, const std::vector<int64_t>& axes, bool keepdim, int64_t correction = 0,
                  bool want_indices = false) {
  const std::string_view name = op_name(op);
  checks::defined(name, x);
  checks::computable(name, x);
  if (op == ReduceOp::mean || op == ReduceOp::var) checks::floating(name, x);
  const std::vector<int> reduced = normalize_axes(name, axes, x.dim());
  // Sums of integers (pixels, say) are int64, so that they do not wrap around.
  const Tensor input = (op == ReduceOp::sum && !is_floating(x.dtype())) ? x.to(Dtype::int64) : x;

  Shape kept = x.shape(), dropped;
  for (int axis : reduced) {
    if ((op == ReduceOp::max || op == ReduceOp::min) && x.size(axis) == 0) {
      throw Error(name, "cannot take the ", name, " over axis ", axis, " of size 0 (shape ", x.shape(), ")");
    }
    kept[axis] = 1;
  }
  for (int64_t axis = 0; axis < x.dim(); ++axis) {
    if (std::find(reduced.begin(), reduced.end(), axis) == reduced.end()) dropped.push_back(x.size(axis));
  }
  Reduced result{empty(kept, input.dtype(), x.device()), {}};
  if (want_indices) result.indices = empty(kept, Dtype::int64, x.device());
  backend(x.device()).reduce(op, input, reduced, result.values, result.indices, correction);
  if (!keepdim) {
    result.values = result.values.view(dropped);
    if (want_indices) result.indices = result.indices.view(dropped);
  }
  return result;
}

}  // namespace

Tensor sum(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
  return reduce_op(ReduceOp::sum, x, axes, keepdim).values;
}

Tensor mean(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
  return reduce_op(ReduceOp::mean, x, axes, keepdim).values;
}

Tensor var(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim, int64_t correction) {
  if (correction < 0) throw Error("var", "correction must be 0 or more, got ", correction);
  return reduce_op(ReduceOp::var, x, axes, keepdim, correction).values;
}

Tensor max(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
  return reduce_op(ReduceOp::max, x, axes, keepdim).values;
}

Tensor min(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
  return reduce_op(ReduceOp::min, x, axes, keepdim).values;
}

std::pair<Tensor, Tensor> max_with_indices(const Tensor& x, int64_t axis, bool keepdim) {
  checks::defined("max", x);
  checks::computable("max", x);
  Reduced result = reduce_op(ReduceOp::max, x, {normalize_axis("max", axis, x.dim())}, keepdim, 0, true);
  return {result.values, result.indices};
}

Tensor argmax(const Tensor& x, int64_t axis, bool keepdim) { return max_with_indices(x, axis, keepdim).second; }

RoundedWithSums to_bfloat16_with_sums(const Tensor& g) {
  constexpr std::string_view name = "to_bfloat16_with_sums";
  checks::defined(name, g);
  checks::dtype_is(name, g, Dtype::float32, "g");
  checks::output_dtype(name, g, Dtype::bfloat16);  // on the CPU
  if (g.dim() == 0) throw Error(name, "needs at least one axis, got a scalar");
  RoundedWithSums result{empty(g.shape(), Dtype::bfloat16, g.device()),
                         empty({g.size(-1)}, Dtype::float32, g.device())};
  backend(g.device()).to_bfloat16_with_sums(g.contiguous(), result.rounded, result.sums);
  return result;
}

Tensor count_non_finite(const std::vector<Tensor>& tensors) {
  if (tensors.empty()) throw Error("count_non_finite", "needs at least one tensor (the count lives on their device)");
  std::vector<Tensor> contiguous;
  for (const Tensor& t : tensors) {
    checks::defined("count_non_finite", t);
    checks::floating("count_non_finite", t);
    checks::same_device("count_non_finite", tensors.front(), t);
    contiguous.push_back(t.contiguous());
  }
  const Tensor out = empty({}, Dtype::float64, tensors.front().device());
  backend(out.device()).count_non_finite(contiguous, out);
  return out;
}

}  // namespace axiom::core
