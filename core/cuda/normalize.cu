// Row kernels on the GPU: softmax / log_softmax along any axis, layer norm (and its backward)
// along the last axis, the softmax cross-entropy of rows of logits (and its backward), and a value
// drawn from each row of logits (categorical: a thread per row, core/categorical.h). A warp per
// row for rows of up to 1,024 elements, a block per longer row (launch_rows, kernels.cuh); the
// formulas are core/cpu/normalize.cpp's, with sums in double.
#include <cmath>
#include <limits>

#include "core/categorical.h"
#include "core/cuda/cuda_backend.h"
#include "core/cuda/kernels.cuh"
#include "core/tensor.h"

namespace AXIOM_CUDA_NAMESPACE {

namespace {

template <typename T>
T without(const T& values, int axis) {
  T result = values;
  result.erase(result.begin() + axis);
  return result;
}

// A row of `length` elements, `step` apart, starting at row_offset.
struct Rows {
  StridedOperands<2> starts;  // where each row starts in the two operands
  int64_t count, length, step0, step1;
};

Rows rows_along(std::string_view op, const Shape& shape, int axis, const Strides& s0, const Strides& s1) {
  const Shape rows_shape = without(shape, axis);
  const Strides r0 = without(s0, axis), r1 = without(s1, axis);
  return {strided_operands<2>(op, rows_shape, {&r0, &r1}), numel(rows_shape), shape[axis], s0[axis], s1[axis]};
}

// y = softmax(x) (or log_softmax) of each row. Stable: the row's max is subtracted first.
template <typename T, typename Team>
__global__ void softmax_kernel(Rows rows, T* out, const T* x, bool log) {
  const Team team;
  for (int64_t r = team.first_row(); r < rows.count; r += team.row_step()) {
    const Offsets<2> at = rows.starts.offsets(r);
    T* y = out + at.of[0];
    const T* xr = x + at.of[1];
    T max = -std::numeric_limits<T>::infinity();
    for (int64_t j = team.rank(); j < rows.length; j += team.size()) max = Max{}(max, xr[j * rows.step1]);
    max = team.reduce(max, Max{});
    double total = 0;
    for (int64_t j = team.rank(); j < rows.length; j += team.size()) {
      const T e = exp(xr[j * rows.step1] - max);
      y[j * rows.step0] = e;
      total += e;
    }
    total = team.reduce(total, Sum{});
    // each thread rewrites the elements it wrote above: no other thread's writes are read
    if (log) {
      const T log_total = static_cast<T>(::log(total));
      for (int64_t j = team.rank(); j < rows.length; j += team.size())
        y[j * rows.step0] = (xr[j * rows.step1] - max) - log_total;
    } else {
      const T scale = static_cast<T>(1.0 / total);
      for (int64_t j = team.rank(); j < rows.length; j += team.size()) y[j * rows.step0] *= scale;
    }
  }
}

// y = (x - mean) * rstd * w + b for each row, rstd = 1 / sqrt(var + eps); w, b may be null.
// out, mean and rstd are contiguous: row r of out starts at r * length.
template <typename T, typename Team>
__global__ void layer_norm_kernel(Rows rows, const T* x, const T* w, const T* b, double eps, T* out, T* mean_out,
                                  T* rstd_out) {
  const Team team;
  for (int64_t r = team.first_row(); r < rows.count; r += team.row_step()) {
    const T* xr = x + rows.starts.offsets(r).of[0];
    double total = 0;
    for (int64_t j = team.rank(); j < rows.length; j += team.size()) total += xr[j * rows.step0];
    const double mean = team.reduce(total, Sum{}) / rows.length;
    double squares = 0;
    for (int64_t j = team.rank(); j < rows.length; j += team.size()) {
      const double d = xr[j * rows.step0] - mean;
      squares += d * d;
    }
    const double rstd = 1.0 / ::sqrt(team.reduce(squares, Sum{}) / rows.length + eps);
    const T m = static_cast<T>(mean), rs = static_cast<T>(rstd);
    T* y = out + r * rows.length;
    for (int64_t j = team.rank(); j < rows.length; j += team.size()) {
      T v = (xr[j * rows.step0] - m) * rs;
      if (w) v *= w[j];
      if (b) v += b[j];
      y[j] = v;
    }
    if (team.rank() == 0) mean_out[r] = m, rstd_out[r] = rs;
  }
}

// grad_x = rstd * (gw - mean(gw) - xhat * mean(gw * xhat)), gw = grad_out * w, per row.
template <typename T, typename Team>
__global__ void layer_norm_backward_kernel(Rows rows, const T* x, const T* g, const T* w, const T* mean, const T* rstd,
                                           T* dx) {
  const Team team;
  for (int64_t r = team.first_row(); r < rows.count; r += team.row_step()) {
    const Offsets<2> at = rows.starts.offsets(r);
    const T *xr = x + at.of[0], *gr = g + at.of[1];
    const double m = mean[r], rs = rstd[r];
    double sum_gw = 0, sum_gw_xhat = 0;
    for (int64_t j = team.rank(); j < rows.length; j += team.size()) {
      const double gw = w ? double(gr[j * rows.step1]) * w[j] : double(gr[j * rows.step1]);
      sum_gw += gw;
      sum_gw_xhat += gw * (xr[j * rows.step0] - m) * rs;
    }
    const double mean_gw = team.reduce(sum_gw, Sum{}) / rows.length;
    const double mean_gw_xhat = team.reduce(sum_gw_xhat, Sum{}) / rows.length;
    for (int64_t j = team.rank(); j < rows.length; j += team.size()) {
      const double gw = w ? double(gr[j * rows.step1]) * w[j] : double(gr[j * rows.step1]);
      const double xhat = (xr[j * rows.step0] - m) * rs;
      dx[r * rows.length + j] = static_cast<T>(rs * (gw - mean_gw - xhat * mean_gw_xhat));
    }
  }
}

// Log-sum-exp in one pass over a row: each thread keeps the largest logit m it has met and
// sum e^(x - m) of its logits, rescaled when m grows; the team then rescales every thread's sum to
// the row's max M:  lse = M + log sum_threads s_t e^(m_t - M). Non-finite logits give what the
// CPU's two passes give: NaN for a NaN logit (it enters the sum), for a +inf one (e^(inf - inf)
// when rescaled to M) and for a row of -inf.
struct RunningLogSumExp {
  static constexpr double kInfinity = std::numeric_limits<double>::infinity();
  double max = -kInfinity, sum = 0;
  __device__ void add(double x) {
    if (x > max)
      sum = sum * exp(max - x) + 1, max = x;
    else if (x != -kInfinity)
      sum += exp(x - max);  // -inf adds e^(-inf) = 0
  }
  // sum e^(x - row_max) over this thread's logits
  __device__ double sum_below(double row_max) const {
    if (row_max == -kInfinity) return std::numeric_limits<double>::quiet_NaN();  // e^(-inf - -inf)
    return sum == 0 ? 0.0 : sum * exp(max - row_max);
  }
};

// loss_r and lse_r of each row of logits [rows, classes] (Backend::cross_entropy), a team per row,
// reading each logit once:
//   loss_r = lse_r - (1 - smoothing) x[r, target_r] - smoothing mean_c x[r, c]
template <typename T, typename Team>
__global__ void cross_entropy_kernel(const T* logits, const int64_t* targets, int64_t rows, int64_t classes,
                                     double smoothing, T* losses, T* lse) {
  const Team team;
  for (int64_t r = team.first_row(); r < rows; r += team.row_step()) {
    const T* x = logits + r * classes;
    RunningLogSumExp running;
    double total = 0;
    for (int64_t c = team.rank(); c < classes; c += team.size()) running.add(x[c]), total += x[c];
    const double max = team.reduce(running.max, Max{});
    const double exps = team.reduce(running.sum_below(max), Sum{});
    total = team.reduce(total, Sum{});
    if (team.rank() == 0) {
      const double log_sum_exp = max + ::log(exps);
      lse[r] = static_cast<T>(log_sum_exp);
      const int64_t t = targets[r];  // out of range: reported at the next read back (index_checks.cu); not read here
      const double target_logit = in_range(t, classes) ? double(x[t]) : 0.0;
      losses[r] = static_cast<T>(log_sum_exp - (1 - smoothing) * target_logit - smoothing * total / double(classes));
    }
  }
}

// dx[r, c] = (e^(x[r, c] - lse_r) - q[r, c]) g_r, q the smoothed one-hot target; a team per row
// reads its lse, g and target once. Each element is read and written by the same thread, so dx may
// be the logits' own memory.
template <typename T, typename Team>
__global__ void cross_entropy_backward_kernel(const T* logits, const int64_t* targets, const T* lse, const T* grad,
                                              int64_t rows, int64_t classes, double smoothing, T* dx) {
  const Team team;
  const T spread = static_cast<T>(smoothing / double(classes)), hit = static_cast<T>(1 - smoothing);
  for (int64_t r = team.first_row(); r < rows; r += team.row_step()) {
    const T *x = logits + r * classes, row_lse = lse[r], g = grad[r];
    const int64_t target = targets[r];
    T* d = dx + r * classes;
    for (int64_t c = team.rank(); c < classes; c += team.size())
      d[c] = (exp(x[c] - row_lse) - (c == target ? spread + hit : spread)) * g;
  }
}

template <typename T>
const T* optional_data(const Tensor& t) {
  return t.defined() ? device_data<T>(t) : nullptr;
}

}  // namespace

void CudaBackend::softmax(const Tensor& x, int axis, bool log, const Tensor& out) {
  const Rows rows = rows_along("softmax", x.shape(), axis, out.strides(), x.strides());
  if (rows.count == 0 || rows.length == 0) return;
  require_device("softmax");
  dispatch_floating("softmax", x.dtype(), [&]<typename T>() {
    launch_rows(
        "softmax", rows.count, rows.length, [&]<typename Team>() { return softmax_kernel<T, Team>; }, rows,
        device_data<T>(out), device_data<T>(x), log);
  });
}

namespace {

// values[r] = the draw from row r of logits [rows, length] with uniforms[r], a thread per row.
template <typename T>
__global__ void categorical_kernel(int64_t rows, int64_t length, const T* logits, const T* uniforms, T temperature,
                                   int64_t* values) {
  for (int64_t r = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; r < rows; r += int64_t(gridDim.x) * blockDim.x)
    values[r] = formulas::draw_row(logits + r * length, length, uniforms[r], temperature);
}

}  // namespace

void CudaBackend::categorical(const Tensor& logits, const Tensor& uniforms, double temperature, const Tensor& out) {
  const int64_t rows = out.numel(), length = logits.size(-1);
  if (rows == 0) return;
  require_device("categorical");
  dispatch_floating("categorical", logits.dtype(), [&]<typename T>() {
    launch("categorical", categorical_kernel<T>, grid_size(rows), kThreads, rows, length, device_data<T>(logits),
           device_data<T>(uniforms), static_cast<T>(temperature), device_data<int64_t>(out));
  });
}

void CudaBackend::layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, const Tensor& out,
                             const Tensor& mean, const Tensor& rstd) {
  const int last = static_cast<int>(x.dim()) - 1;
  const Rows rows = rows_along("layer_norm", x.shape(), last, x.strides(), x.strides());
  if (rows.count == 0) return;
  require_device("layer_norm");
  dispatch_floating("layer_norm", x.dtype(), [&]<typename T>() {
    launch_rows(
        "layer_norm", rows.count, rows.length, [&]<typename Team>() { return layer_norm_kernel<T, Team>; }, rows,
        device_data<T>(x), optional_data<T>(weight), optional_data<T>(bias), eps, device_data<T>(out),
        device_data<T>(mean), device_data<T>(rstd));
  });
}

void CudaBackend::layer_norm_backward(const Tensor& x, const Tensor& weight, const Tensor& mean, const Tensor& rstd,
                                      const Tensor& grad_out, const Tensor& grad_x) {
  const int last = static_cast<int>(x.dim()) - 1;
  const Rows rows = rows_along("layer_norm_backward", x.shape(), last, x.strides(), grad_out.strides());
  if (rows.count == 0) return;
  require_device("layer_norm_backward");
  dispatch_floating("layer_norm_backward", x.dtype(), [&]<typename T>() {
    launch_rows(
        "layer_norm_backward", rows.count, rows.length,
        [&]<typename Team>() { return layer_norm_backward_kernel<T, Team>; }, rows, device_data<T>(x),
        device_data<T>(grad_out), optional_data<T>(weight), device_data<T>(mean), device_data<T>(rstd),
        device_data<T>(grad_x));
  });
}

void CudaBackend::cross_entropy(const Tensor& logits, const Tensor& targets, double smoothing, const Tensor& losses,
                                const Tensor& lse) {
  const int64_t rows = losses.numel(), classes = logits.size(-1);
  if (rows == 0) return;
  require_device("cross_entropy");
  dispatch_floating("cross_entropy", logits.dtype(), [&]<typename T>() {
    launch_rows(
        "cross_entropy", rows, classes, [&]<typename Team>() { return cross_entropy_kernel<T, Team>; },
        device_data<T>(logits), device_data<int64_t>(targets), rows, classes, smoothing, device_data<T>(losses),
        device_data<T>(lse));
  });
}

void CudaBackend::cross_entropy_backward(const Tensor& logits, const Tensor& targets, const Tensor& lse,
                                         const Tensor& grad_losses, double smoothing, const Tensor& grad_logits) {
  const int64_t rows = lse.numel(), classes = logits.size(-1);
  if (rows * classes == 0) return;
  require_device("cross_entropy_backward");
  dispatch_floating("cross_entropy_backward", logits.dtype(), [&]<typename T>() {
    launch_rows(
        "cross_entropy_backward", rows, classes,
        [&]<typename Team>() { return cross_entropy_backward_kernel<T, Team>; }, device_data<T>(logits),
        device_data<int64_t>(targets), device_data<T>(lse), device_data<T>(grad_losses), rows, classes, smoothing,
        device_data<T>(grad_logits));
  });
}

}  // namespace AXIOM_CUDA_NAMESPACE
