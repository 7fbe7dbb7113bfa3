// Row-wise kernels: softmax / log_softmax along any axis, layer norm along the last axis, the
// softmax cross-entropy of rows of logits, and a value drawn from each row (categorical).
// A "row" is the line of elements along the normalised axis; rows are independent and run in
// parallel. A contiguous float32 row goes to the SIMD kernels of vector_math.h (sums in float32
// lanes; categorical's totals are in double); the others (strided rows, float64) take the loops
// here, with sums in double.
#include <algorithm>
#include <cmath>
#include <tuple>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/categorical.h"
#include "core/cpu/column_sums.h"
#include "core/cpu/cpu_backend.h"
#include "core/cpu/maps.h"
#include "core/cpu/fast_math.h"
#include "core/cpu/loops.h"
#include "core/cpu/vector_math.h"
#include "core/tensor.h"

namespace axiom::core::cpu {

namespace {

Shape without(const Shape& values, int axis) {
  Shape result = values;
  result.erase(result.begin() + axis);
  return result;
}

// y = softmax(x) or log_softmax(x) of one row of `length` elements, x and y with their own steps.
// Stable form: subtract the row's max first, so exp never overflows.
template <typename T>
void softmax_row(const T* x, int64_t x_step, T* y, int64_t y_step, int64_t length, bool log) {
  if constexpr (std::is_same_v<T, float>) {
    if (x_step == 1 && y_step == 1) return vec::softmax(x, y, length, log);  // the same passes, a vector at a time
  }
  T max = -std::numeric_limits<T>::infinity();
  for (int64_t i = 0; i < length; ++i) {
    const T v = x[i * x_step];
    if (v > max || std::isnan(v)) max = v;
    if (std::isnan(max)) break;
  }
  // y = exp(x - max) first (a loop of exps alone vectorises), then their sum, in double
  if (x_step == 1 && y_step == 1) {
    for (int64_t i = 0; i < length; ++i) y[i] = exp_of(x[i] - max);
  } else {
    for (int64_t i = 0; i < length; ++i) y[i * y_step] = exp_of(x[i * x_step] - max);
  }
  double total = 0;
  for (int64_t i = 0; i < length; ++i) total += y[i * y_step];
  if (log) {  // y is overwritten
    // (x - max) - log(total), not x - (max + log(total)): rounding max + log(total) to T would
    // cost an ulp of max, which for float32 logits near 1000 is 6e-5.
    const T log_total = static_cast<T>(std::log(total));
    for (int64_t i = 0; i < length; ++i) y[i * y_step] = (x[i * x_step] - max) - log_total;
  } else {
    const T scale = static_cast<T>(1.0 / total);
    for (int64_t i = 0; i < length; ++i) y[i * y_step] *= scale;
  }
}

// sum over i of f(x[i * step]) in double, in 8 running sums (lane j takes i = j mod 8) added at the
// end: independent additions that the compiler turns into vector instructions when step is 1,
// instead of one chain of dependent ones. The order is the same for every step: the same bits.
template <typename T, typename F>
double lane_sum(const T* x, int64_t step, int64_t length, F f) {
  constexpr int kLanes = 8;
  double lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= length; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) lanes[j] += f(static_cast<double>(x[(i + j) * step]));
  }
  for (int j = 0; i < length; ++i, ++j) lanes[j] += f(static_cast<double>(x[i * step]));
  double total = 0;
  for (double lane : lanes) total += lane;
  return total;
}

// The mean and rstd = 1 / sqrt(var + eps) of one contiguous float32 row, in SIMD.
std::pair<float, float> row_moments(const float* x, int64_t length, double eps) {
  const float mean = vec::sum(x, length) / static_cast<float>(length);
  const double squares = vec::squared_deviations(x, mean, length);
  return {mean, static_cast<float>(1.0 / std::sqrt(squares / static_cast<double>(length) + eps))};
}

// Layer norm of one row: y = (x - mean) * rstd * w + b, with rstd = 1 / sqrt(var + eps).
template <typename T>
void layer_norm_row(const T* x, int64_t x_step, int64_t length, const T* w, const T* b, double eps, T* y, T* mean_out,
                    T* rstd_out) {
  if constexpr (std::is_same_v<T, float>) {
    if (x_step == 1) {
      std::tie(*mean_out, *rstd_out) = row_moments(x, length, eps);
      return vec::layer_norm_apply(x, *mean_out, *rstd_out, w, b, y, length);
    }
  }
  auto moments = [&](int64_t step) {  // step is 1 (a literal, for the vectorizer) or x_step
    const double mean = lane_sum(x, step, length, [](double v) { return v; }) / static_cast<double>(length);
    const double squares = lane_sum(x, step, length, [mean](double v) { return (v - mean) * (v - mean); });
    return std::pair{mean, squares};
  };
  const auto [mean, squares] = x_step == 1 ? moments(1) : moments(x_step);
  const double rstd = 1.0 / std::sqrt(squares / static_cast<double>(length) + eps);
  const T m = static_cast<T>(mean), r = static_cast<T>(rstd);
  for (int64_t i = 0; i < length; ++i) {
    T v = (x[i * x_step] - m) * r;
    if (w) v *= w[i];
    if (b) v += b[i];
    y[i] = v;
  }
  *mean_out = m;
  *rstd_out = r;
}

// dx of layer norm for one row (see Backend::layer_norm_backward). g and dx contiguous.
template <typename T>
void layer_norm_backward_row(const T* x, int64_t x_step, const T* g, int64_t g_step, int64_t length, const T* w,
                             double mean, double rstd, T* dx) {
  if constexpr (std::is_same_v<T, float>) {
    if (x_step == 1 && g_step == 1) {
      const float m = static_cast<float>(mean), r = static_cast<float>(rstd);
      float sum_gw = 0, sum_gw_xhat = 0;
      vec::layer_norm_backward_sums(x, g, w, m, r, length, &sum_gw, &sum_gw_xhat);
      const float n = static_cast<float>(length);
      return vec::layer_norm_backward_apply(x, g, w, m, r, sum_gw / n, sum_gw_xhat / n, dx, length);
    }
  }
  double mean_gw = 0, mean_gw_xhat = 0;
  for (int64_t i = 0; i < length; ++i) {
    const double gw = w ? double(g[i * g_step]) * w[i] : double(g[i * g_step]);
    mean_gw += gw;
    mean_gw_xhat += gw * (x[i * x_step] - mean) * rstd;
  }
  mean_gw /= length;
  mean_gw_xhat /= length;
  for (int64_t i = 0; i < length; ++i) {
    const double gw = w ? double(g[i * g_step]) * w[i] : double(g[i * g_step]);
    const double xhat = (x[i * x_step] - mean) * rstd;
    dx[i] = static_cast<T>(rstd * (gw - mean_gw - xhat * mean_gw_xhat));
  }
}

// The cross-entropy of one row x [C] against class t (Backend::cross_entropy); returns the loss
// and writes log sum exp x to *lse.
template <typename T>
T cross_entropy_row(const T* x, int64_t classes, int64_t target, double smoothing, T* lse) {
  if constexpr (std::is_same_v<T, float>) {
    const float max = vec::max(x, classes);
    if (!std::isfinite(max)) {  // a NaN or an infinity in the row, or a row of -inf: NaN, as the loop below gives
      *lse = std::numeric_limits<float>::quiet_NaN();
      return *lse;
    }
    const double log_sum_exp = double(max) + std::log(double(vec::exp_shifted(x, max, nullptr, classes)));
    const double total = smoothing == 0 ? 0.0 : double(vec::sum(x, classes));
    *lse = static_cast<float>(log_sum_exp);
    return static_cast<float>(log_sum_exp - (1 - smoothing) * double(x[target]) - smoothing * total / double(classes));
  }
  T max = -std::numeric_limits<T>::infinity();
  for (int64_t c = 0; c < classes; ++c) {
    if (x[c] > max || std::isnan(x[c])) max = x[c];
    if (std::isnan(max)) break;
  }
  double exps = 0, total = 0;
  for (int64_t c = 0; c < classes; ++c) exps += exp_of(x[c] - max), total += x[c];
  const double log_sum_exp = double(max) + std::log(exps);
  *lse = static_cast<T>(log_sum_exp);
  return static_cast<T>(log_sum_exp - (1 - smoothing) * double(x[target]) - smoothing * total / double(classes));
}

// dx = (softmax(x) - q) * g for one row (Backend::cross_entropy_backward).
template <typename T>
void cross_entropy_backward_row(const T* x, int64_t classes, int64_t target, T lse, T g, double smoothing, T* dx) {
  const T spread = static_cast<T>(smoothing / double(classes)), hit = static_cast<T>(1 - smoothing);
  if constexpr (std::is_same_v<T, float>) {
    vec::softmax_minus(x, lse, spread, g, dx, classes);
  } else {
    for (int64_t c = 0; c < classes; ++c) dx[c] = (exp_of(x[c] - lse) - spread) * g;
  }
  dx[target] = (exp_of(x[target] - lse) - (spread + hit)) * g;
}

}  // namespace

void CpuBackend::cross_entropy(const Tensor& logits, const Tensor& targets, double smoothing, const Tensor& losses,
                               const Tensor& lse) {
  dispatch_floating("cross_entropy", logits.dtype(), [&]<typename T>() {
    const int64_t rows = losses.numel(), classes = logits.size(-1);
    const T* x = logits.data<T>();
    const int64_t* t = targets.data<int64_t>();
    T *loss = losses.data<T>(), *lse_out = lse.data<T>();
    parallel_for(rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(classes, 1) / 4),
                 [&](int64_t begin, int64_t end) {
                   for (int64_t r = begin; r < end; ++r)
                     loss[r] = cross_entropy_row(x + r * classes, classes, t[r], smoothing, lse_out + r);
                 });
  });
}

void CpuBackend::cross_entropy_backward(const Tensor& logits, const Tensor& targets, const Tensor& lse,
                                        const Tensor& grad_losses, double smoothing, const Tensor& grad_logits) {
  dispatch_floating("cross_entropy_backward", logits.dtype(), [&]<typename T>() {
    const int64_t rows = lse.numel(), classes = logits.size(-1);
    const T *x = logits.data<T>(), *lse_in = lse.data<T>(), *g = grad_losses.data<T>();
    const int64_t* t = targets.data<int64_t>();
    T* dx = grad_logits.data<T>();
    parallel_for(
        rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(classes, 1) / 4), [&](int64_t begin, int64_t end) {
          for (int64_t r = begin; r < end; ++r) {
            cross_entropy_backward_row(x + r * classes, classes, t[r], lse_in[r], g[r], smoothing, dx + r * classes);
          }
        });
  });
}

void CpuBackend::layer_norm_backward(const Tensor& x, const Tensor& weight, const Tensor& mean, const Tensor& rstd,
                                     const Tensor& grad_out, const Tensor& grad_x) {
  dispatch_floating("layer_norm_backward", x.dtype(), [&]<typename T>() {
    const int last = static_cast<int>(x.dim()) - 1;
    const Shape rows_shape = without(x.shape(), last);
    const Strides x_strides = without(x.strides(), last), g_strides = without(grad_out.strides(), last);
    const StridedLoop<2> rows(rows_shape, {&x_strides, &g_strides});
    const int64_t length = x.size(last), x_step = x.stride(last), g_step = grad_out.stride(last);
    const T *x_base = x.data<T>(), *g_base = grad_out.data<T>();
    const T* w = weight.defined() ? weight.data<T>() : nullptr;
    const T *mean_base = mean.data<T>(), *rstd_base = rstd.data<T>();
    T* dx = grad_x.data<T>();
    const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(length, 1) / 4);
    parallel_for(rows.numel(), grain, [&](int64_t begin, int64_t end) {
      int64_t row = begin;
      rows.for_each_run(begin, end, [&](const auto& offset, int64_t n, const auto& step) {
        for (int64_t i = 0; i < n; ++i, ++row) {
          layer_norm_backward_row(x_base + offset[0] + i * step[0], x_step, g_base + offset[1] + i * step[1], g_step,
                                  length, w, mean_base[row], rstd_base[row], dx + row * length);
        }
      });
    });
  });
}

void CpuBackend::softmax(const Tensor& x, int axis, bool log, const Tensor& out) {
  dispatch_floating("softmax", x.dtype(), [&]<typename T>() {
    const Shape rows_shape = without(x.shape(), axis);
    const Strides out_strides = without(out.strides(), axis), x_strides = without(x.strides(), axis);
    const StridedLoop<2> rows(rows_shape, {&out_strides, &x_strides});
    const int64_t length = x.size(axis), x_step = x.stride(axis), y_step = out.stride(axis);
    T* out_base = out.data<T>();
    const T* x_base = x.data<T>();
    const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(length, 1) / 4);
    parallel_runs(rows, grain, [&](const auto& offset, int64_t n, const auto& step) {
      for (int64_t i = 0; i < n; ++i) {
        softmax_row(x_base + offset[1] + i * step[1], x_step, out_base + offset[0] + i * step[0], y_step, length, log);
      }
    });
  });
}

namespace {

// The sum of w[0..n) in double, in four running sums (first_passing adds in one: the two differ
// by rounding in double alone).
double total_in_double(const float* w, int64_t n) {
  double sums[4] = {0, 0, 0, 0};
  int64_t v = 0;
  for (; v + 4 <= n; v += 4) {
    for (int k = 0; k < 4; ++k) sums[k] += w[v + k];
  }
  for (; v < n; ++v) sums[0] += w[v];
  return (sums[0] + sums[1]) + (sums[2] + sums[3]);
}

// core/categorical.h's draw_row for a contiguous float32 row, its weights computed once, with SIMD
// (vector_math.h), into `weights` (room for n floats).
int64_t draw_float_row(const float* logits, int64_t n, float u, float temperature, float* weights) {
  vec::arithmetic(BinaryOp::div, logits, 1, &temperature, 0, weights, n);  // logits / T
  const float m = vec::max(weights, n);
  if (!std::isfinite(m)) return formulas::argmax_of_row(logits, n);
  vec::exp_shifted(weights, m, weights, n);  // (its float32 total is not used)
  const double target = formulas::target_of(u, total_in_double(weights, n));
  return formulas::first_passing([&](int64_t v) { return weights[v]; }, n, target);
}

}  // namespace

void CpuBackend::categorical(const Tensor& logits, const Tensor& uniforms, double temperature, const Tensor& out) {
  dispatch_floating("categorical", logits.dtype(), [&]<typename T>() {
    const int64_t length = logits.size(-1), rows = out.numel();
    const T *x = logits.data<T>(), *u = uniforms.data<T>();
    int64_t* values = out.data<int64_t>();
    parallel_for(
        rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(length, 1) / 4), [&](int64_t begin, int64_t end) {
          std::vector<float> weights(std::is_same_v<T, float> ? static_cast<size_t>(length) : 0);
          for (int64_t row = begin; row < end; ++row) {
            const T* row_logits = x + row * length;
            if constexpr (std::is_same_v<T, float>) {
              values[row] = draw_float_row(row_logits, length, u[row], static_cast<float>(temperature), weights.data());
            } else {
              values[row] = formulas::draw_row(row_logits, length, u[row], static_cast<T>(temperature));
            }
          }
        });
  });
}

namespace {
// Layer norm of contiguous float32 rows [rows, length] with the output rounded to bfloat16 as it is
// written (core::layer_norm with a bfloat16 output): the float32 path's values, rounded.
void layer_norm_rounded(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, const Tensor& out,
                        const Tensor& mean, const Tensor& rstd) {
  const int64_t length = x.size(-1), rows = mean.numel();  // (rows of 0 columns too: mean and rstd NaN)
  const float* x_base = x.data<float>();
  const float* w = weight.defined() ? weight.data<float>() : nullptr;
  const float* b = bias.defined() ? bias.data<float>() : nullptr;
  uint16_t* y = out.data<uint16_t>();
  float *mean_base = mean.data<float>(), *rstd_base = rstd.data<float>();
  parallel_for(rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(length, 1) / 4), [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const float* x_row = x_base + row * length;
      const std::pair<float, float> moments = row_moments(x_row, length, eps);
      const float m = moments.first, r = moments.second;  // (named: a lambda below takes them)
      rounded_in_chunks(length, y + row * length, [&](int64_t at, int64_t n, float* buffer) {
        vec::layer_norm_apply(x_row + at, m, r, w ? w + at : nullptr, b ? b + at : nullptr, buffer, n);
      });
      mean_base[row] = m, rstd_base[row] = r;
    }
  });
}
}  // namespace

// Column sums (column_sums.h, the blocking of core::sum: the same bits) of g * xhat, computed a row
// segment at a time into the task's scratch, and of g itself.
void CpuBackend::layer_norm_param_grads(const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& grad_out,
                                        const Tensor& dweight, const Tensor& dbias) {
  dispatch_floating("layer_norm_param_grads", x.dtype(), [&]<typename T>() {
    const int64_t cols = x.size(-1), rows = cols == 0 ? 0 : x.numel() / cols;
    const T *x_base = x.data<T>(), *g_base = grad_out.data<T>(), *means = mean.data<T>(), *rstds = rstd.data<T>();
    auto g_times_xhat = [&](int64_t i, int64_t begin, int64_t width, T* scratch) {
      const T *x_row = x_base + i * cols + begin, *g_row = g_base + i * cols + begin;
      const T m = means[i], r = rstds[i];
      for (int64_t j = 0; j < width; ++j) scratch[j] = g_row[j] * ((x_row[j] - m) * r);
      return static_cast<const T*>(scratch);
    };
    auto g_itself = [&](int64_t i, int64_t begin, int64_t, T*) { return g_base + i * cols + begin; };
    const auto weight_totals = column_totals<T>(rows, cols, g_times_xhat);
    const auto bias_totals = column_totals<T>(rows, cols, g_itself);
    for (int64_t j = 0; j < cols; ++j) {
      dweight.data<T>()[j] = static_cast<T>(weight_totals[j]);
      dbias.data<T>()[j] = static_cast<T>(bias_totals[j]);
    }
  });
}

void CpuBackend::layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, const Tensor& out,
                            const Tensor& mean, const Tensor& rstd) {
  if (out.dtype() == Dtype::bfloat16) return layer_norm_rounded(x, weight, bias, eps, out, mean, rstd);
  dispatch_floating("layer_norm", x.dtype(), [&]<typename T>() {
    const int last = static_cast<int>(x.dim()) - 1;
    const Shape rows_shape = without(x.shape(), last);
    const Strides x_strides = without(x.strides(), last);
    const StridedLoop<1> rows(rows_shape, {&x_strides});
    const int64_t length = x.size(last), x_step = x.stride(last);
    const T* x_base = x.data<T>();
    const T* w = weight.defined() ? weight.data<T>() : nullptr;
    const T* b = bias.defined() ? bias.data<T>() : nullptr;
    T *y = out.data<T>(), *mean_base = mean.data<T>(), *rstd_base = rstd.data<T>();
    const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(length, 1) / 4);
    parallel_for(rows.numel(), grain, [&](int64_t begin, int64_t end) {
      int64_t row = begin;  // out, mean and rstd are contiguous: row r starts at r * length
      rows.for_each_run(begin, end, [&](const auto& offset, int64_t n, const auto& step) {
        for (int64_t i = 0; i < n; ++i, ++row) {
          layer_norm_row(x_base + offset[0] + i * step[0], x_step, length, w, b, eps, y + row * length, mean_base + row,
                         rstd_base + row);
        }
      });
    });
  });
}

}  // namespace axiom::core::cpu
