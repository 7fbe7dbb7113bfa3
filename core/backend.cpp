#include "core/backend.h"

#include <array>
#include <iterator>
#include <limits>

#include "core/error.h"
#include "core/factory.h"
#include "core/launch.h"
#include "core/random.h"
#include "core/tensor.h"

namespace axiom::core {

// Defined by core/cpu and by core/cuda (the real backend, or the stub when built without CUDA).
std::unique_ptr<Backend> make_cpu_backend();
std::unique_ptr<Backend> make_cuda_backend();
std::unique_ptr<Backend> make_meta_backend();  // core/meta

namespace {
using Registry = std::array<std::unique_ptr<Backend>, kNumDeviceTypes>;

Registry& registry() {
  static Registry backends = [] {
    Registry r;
    r[static_cast<int>(DeviceType::cpu)] = make_cpu_backend();
    r[static_cast<int>(DeviceType::cuda)] = make_cuda_backend();
    r[static_cast<int>(DeviceType::meta)] = make_meta_backend();
    return r;
  }();
  return backends;
}
}  // namespace

void Backend::adam_update_many(const std::vector<AdamUpdate>& updates) {
  for (const AdamUpdate& u : updates) adam_update(u.param, u.grad, u.exp_avg, u.exp_avg_sq, u.step);
}

void Backend::attention_step(const Tensor& q, const Tensor& keys_t, const Tensor& values, double scale,
                             const std::vector<uint8_t>& hidden, const Tensor& out) {
  Tensor scores = core::mul(core::matmul(q, keys_t), scale);  // [..., 1, S]
  if (!hidden.empty()) {
    const Tensor mask = from_vector(hidden, {static_cast<int64_t>(hidden.size())}, q.device());
    scores = core::masked_fill(scores, mask, -std::numeric_limits<double>::infinity());
  }
  copy(core::matmul(core::softmax(scores, -1), values), out);
}

namespace {
// out [N] = x [..., N] summed over every axis but the last, by the backend's reduce, written into
// out (no copy).
void sum_rows_into(Backend& backend, const Tensor& x, const Tensor& out) {
  if (x.dim() == 1) return backend.copy(x, out);  // one row: nothing to sum
  std::vector<int> rows(static_cast<size_t>(x.dim() - 1));
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<int>(i);
  Shape kept(rows.size(), 1);
  kept.push_back(x.size(-1));
  backend.reduce(ReduceOp::sum, x, rows, out.reshape(kept), Tensor(), 0);
}
}  // namespace

void Backend::layer_norm_param_grads(const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& grad_out,
                                     const Tensor& dweight, const Tensor& dbias) {
  const Tensor xhat = core::mul(core::sub(x, mean.unsqueeze(-1)), rstd.unsqueeze(-1));
  const Tensor products = core::mul(grad_out, xhat);
  sum_rows_into(*this, products, dweight);
  sum_rows_into(*this, grad_out, dbias);
}

void Backend::to_bfloat16_with_sums(const Tensor& g, const Tensor& rounded, const Tensor& sums) {
  copy(g, rounded);
  sum_rows_into(*this, g, sums);
}

void Backend::activation_backward_to_bfloat16(UnaryOp activation, const Tensor& h, const Tensor& grad,
                                              const Tensor& rounded, const Tensor& sums, const Tensor& activated) {
  const Tensor h32 = empty(h.shape(), Dtype::float32, h.device());
  const Tensor slope_times_grad = empty(grad.shape(), Dtype::float32, grad.device());
  copy(h, h32);
  copy(grad, slope_times_grad);
  activation_backward(activation, h32, slope_times_grad, activated);
  to_bfloat16_with_sums(slope_times_grad, rounded, sums);
}

void Backend::attention_backward_rounded(const Tensor& qkv, const Tensor& probs, const Tensor& grad_out, int axis,
                                         int64_t heads, const AttentionMask& mask, const Tensor& rounded,
                                         const Tensor& sums) {
  const Tensor grad_qkv = empty(qkv.shape(), Dtype::float32, qkv.device());
  attention_backward(qkv, probs, grad_out, axis, heads, mask, grad_qkv);
  to_bfloat16_with_sums(grad_qkv, rounded, sums);
}

void Backend::activation_backward(UnaryOp activation, const Tensor& h, const Tensor& grad, const Tensor& activated) {
  unary(activation, h, activated, 0);
  Tensor slope;
  switch (activation) {
    case UnaryOp::gelu: slope = core::gelu_derivative(h); break;
    case UnaryOp::gelu_tanh: slope = core::gelu_tanh_derivative(h); break;
    default: slope = core::gt(h, core::scalar(0, h.dtype(), h.device())).to(h.dtype()); break;  // relu
  }
  binary(BinaryOp::mul, grad, slope, grad);
}

void Backend::uniform(const Tensor& out, uint64_t seed, uint64_t first, double low, double high) {
  std::vector<float> host(static_cast<size_t>(out.numel()));
  for (size_t i = 0; i < host.size(); ++i) host[i] = uniform_float32(seed, first + i, low, high);
  copy_from_host(out.raw_data(), host.data(), host.size() * sizeof(float));
}

void Backend::categorical(const Tensor& logits, const Tensor& uniforms, double temperature, const Tensor& out) {
  const Tensor host_logits = logits.to(Device::cpu()), host_uniforms = uniforms.to(Device::cpu());
  const Tensor values = empty(out.shape(), Dtype::int64, Device::cpu());
  backend(Device::cpu()).categorical(host_logits, host_uniforms, temperature, values);
  copy_from_host(out.raw_data(), values.raw_data(), static_cast<size_t>(values.numel()) * sizeof(int64_t));
}

MachineMemory Backend::memory() { return machine_memory(); }

std::string Backend::matmul_precision_unavailable(MatmulPrecision) const { return ""; }

void Backend::linear(const Tensor& a, const Tensor& b, const Tensor& bias, const Tensor& out) {
  copy(bias.expand(out.shape()), out);
  matmul(a, b, out, /*accumulate=*/true);
}

void Backend::check_indices(const IndexBounds& bounds, const Tensor& index) {
  bounds.check(index.to_vector<int64_t>(), index.shape());
}

Backend& backend(Device device) {
  auto& slot = registry().at(static_cast<int>(device.type));
  if (!slot) throw Error("backend", "no backend is registered for device ", device);
  if (device.index != 0) throw Error("backend", "device ", device, ": one device of each type is supported (index 0)");
  return *slot;
}

std::unique_ptr<Backend> register_backend(DeviceType type, std::unique_ptr<Backend> backend) {
  auto& slot = registry().at(static_cast<int>(type));
  std::swap(slot, backend);
  return backend;
}

std::string_view op_name(UnaryOp op) {
  constexpr std::string_view names[] = {
      "neg",     "abs",  "exp",  "log",       "sqrt", "rsqrt",           "tanh",
      "sigmoid", "relu", "gelu", "gelu_tanh", "pow",  "gelu_derivative", "gelu_tanh_derivative"};
  static_assert(std::size(names) == kNumUnaryOps);
  return names[static_cast<int>(op)];
}

std::string_view op_name(BinaryOp op) {
  constexpr std::string_view names[] = {"add", "sub", "mul", "div", "pow", "maximum", "minimum",
                                        "eq",  "ne",  "lt",  "le",  "gt",  "ge"};
  static_assert(std::size(names) == kNumBinaryOps);
  return names[static_cast<int>(op)];
}

std::string_view op_name(ReduceOp op) {
  constexpr std::string_view names[] = {"sum", "mean", "max", "var", "min"};
  static_assert(std::size(names) == kNumReduceOps);
  return names[static_cast<int>(op)];
}

}  // namespace axiom::core
