// Op functions that join tensors or move elements along an axis. Each one allocates its output
// and copies the inputs into views (narrow) of it, so the only kernels they need are fill and copy.
#include "core/backend.h"
#include "core/checks.h"
#include "core/error.h"
#include "core/factory.h"
#include "core/launch.h"

namespace axiom::core {

void copy_into(const Tensor& src, const Tensor& dst) {
  checks::defined("copy_into", src, "source");
  checks::defined("copy_into", dst, "destination");
  checks::same_device("copy_into", src, dst);
  checks::convertible("copy_into", src.dtype(), dst.dtype(), dst.device());
  if (broadcast_shapes("copy_into", src.shape(), dst.shape()) != dst.shape()) {
    throw Error("copy_into", "source of shape ", src.shape(), " does not broadcast to the destination's shape ",
                dst.shape());
  }
  backend(dst.device()).copy(src.expand(dst.shape()), dst);
  dst.storage()->mark_written();
}

Tensor concat(const std::vector<Tensor>& tensors, int64_t axis) {
  if (tensors.empty()) throw Error("concat", "needs at least one tensor");
  const Tensor& first = tensors.front();
  checks::defined("concat", first);
  const int a = normalize_axis("concat", axis, first.dim());
  Shape shape = first.shape();
  shape[a] = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    checks::defined("concat", t);
    checks::same_device("concat", first, t);
    checks::same_dtype("concat", first, t);
    Shape expected = first.shape();
    expected[a] = t.dim() == first.dim() ? t.size(a) : 0;
    if (t.shape() != expected) {
      throw Error("concat", "tensor ", i, " has shape ", t.shape(), ", which does not match tensor 0's ", first.shape(),
                  " outside axis ", a);
    }
    shape[a] += t.size(a);
  }
  Tensor out = empty(shape, first.dtype(), first.device());
  int64_t offset = 0;
  for (const Tensor& t : tensors) {
    copy_into(t, out.narrow(a, offset, t.size(a)));
    offset += t.size(a);
  }
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t axis) {
  if (tensors.empty()) throw Error("stack", "needs at least one tensor");
  checks::defined("stack", tensors.front());
  const int a = normalize_axis("stack", axis, tensors.front().dim() + 1);
  std::vector<Tensor> expanded;
  for (size_t i = 0; i < tensors.size(); ++i) {
    checks::defined("stack", tensors[i]);
    if (tensors[i].shape() != tensors.front().shape()) {
      throw Error("stack", "tensor ", i, " has shape ", tensors[i].shape(), ", tensor 0 has ", tensors.front().shape());
    }
    expanded.push_back(tensors[i].unsqueeze(a));
  }
  return concat(expanded, a);
}

Tensor pad(const Tensor& x, int64_t axis, int64_t before, int64_t after, double value) {
  checks::defined("pad", x);
  checks::computable("pad", x);
  const int a = normalize_axis("pad", axis, x.dim());
  if (before < 0 || after < 0) throw Error("pad", "padding must be 0 or more, got before ", before, ", after ", after);
  Shape shape = x.shape();
  shape[a] += before + after;
  Tensor out = full(shape, value, x.dtype(), x.device());
  copy_into(x, out.narrow(a, before, x.size(a)));
  return out;
}

Tensor shift(const Tensor& x, int64_t axis, int64_t amount) {
  checks::defined("shift", x);
  checks::computable("shift", x);
  const int a = normalize_axis("shift", axis, x.dim());
  const int64_t size = x.size(a);
  Tensor out = zeros(x.shape(), x.dtype(), x.device());
  const int64_t kept = size - std::min(size, amount < 0 ? -amount : amount);  // elements that stay inside
  if (kept == 0) return out;
  if (amount >= 0) {
    copy_into(x.narrow(a, 0, kept), out.narrow(a, amount, kept));  // [x0 x1 x2] -> [0 x0 x1]
  } else {
    copy_into(x.narrow(a, -amount, kept), out.narrow(a, 0, kept));  // [x0 x1 x2] -> [x1 x2 0]
  }
  return out;
}

}  // namespace axiom::core
