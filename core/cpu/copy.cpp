// fill and copy (with dtype conversion), on tensors of any strides.
#include <cmath>
#include <limits>
#include <type_traits>

#include "core/cpu/cpu_backend.h"
#include "core/cpu/loops.h"
#include "core/cpu/maps.h"
#include "core/tensor.h"

namespace axiom::core::cpu {

namespace {

// Converts one value. Floating to integer truncates toward zero and saturates at the target's
// limits (NaN becomes 0): C++ leaves out-of-range conversions undefined, so we define them.
template <typename To, typename From>
To convert(From value) {
  if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    if (std::isnan(value)) return 0;
    constexpr auto lowest = static_cast<From>(std::numeric_limits<To>::lowest());
    constexpr auto highest = static_cast<From>(std::numeric_limits<To>::max());
    if (value <= lowest) return std::numeric_limits<To>::lowest();
    if (value >= highest) return std::numeric_limits<To>::max();
  }
  return static_cast<To>(value);
}

}  // namespace

void CpuBackend::fill(const Tensor& out, double value) {
  dispatch(out.dtype(), [&]<typename T>() {
    const T v = convert<T>(value);
    StridedLoop<1> loop(out.shape(), {&out.strides()});
    T* base = out.data<T>();
    parallel_runs(loop, kGrain, [&](const auto& offset, int64_t n, const auto& step) {
      T* o = base + offset[0];
      for (int64_t i = 0; i < n; ++i) o[i * step[0]] = v;
    });
  });
}

void CpuBackend::copy(const Tensor& src, const Tensor& dst) {
  dispatch(dst.dtype(), [&]<typename To>() {
    // a lambda, not the function's address: the compiler inlines it and vectorises the loop
    dispatch(src.dtype(), [&]<typename From>() { map_unary<To, From>(src, dst, [](From v) { return convert<To, From>(v); }); });
  });
}

}  // namespace axiom::core::cpu
