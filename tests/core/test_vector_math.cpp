// The Highway kernels of core/cpu/vector_math.h under every SIMD target this CPU can run (an AVX2
// bug shows on an AVX-512 machine too), against plain loops in double. Lengths cover the empty run,
// the one-lane tail alone, whole vectors with and without a tail, and unaligned starts.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <bit>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/adam_step.h"
#include "core/cpu/bfloat16.h"
#include "core/cpu/vector_math.h"
#include "core/random.h"

namespace {

namespace cpu = axiom::core::cpu;
namespace vec = axiom::core::cpu::vec;
using axiom::core::BinaryOp;
using axiom::core::UnaryOp;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// Around each target's vector widths (4, 8, 16 lanes) and their multiples; 28 is attention's row.
constexpr int64_t kLengths[] = {0, 1, 3, 4, 7, 8, 15, 16, 17, 28, 31, 32, 33, 64, 65, 100, 257};

// Runs check() once under each SIMD target, then goes back to the widest.
void under_every_target(const std::function<void()>& check) {
  const std::vector<std::string> targets = vec::targets();
  REQUIRE(!targets.empty());
  for (const std::string& name : targets) {
    CAPTURE(name);
    vec::use_target(name);
    REQUIRE(vec::target() == name);
    check();
  }
  vec::use_best_target();
}

// n random floats in [low, high), after `offset` floats of padding (an unaligned start for offset 1).
struct Floats {
  std::vector<float> storage;
  int64_t offset;
  float* data() { return storage.data() + offset; }
  float& operator[](int64_t i) { return storage[static_cast<size_t>(offset + i)]; }
};

Floats random_floats(int64_t n, double low, double high, std::mt19937& rng, int64_t offset = 1) {
  std::uniform_real_distribution<double> uniform(low, high);
  Floats x{std::vector<float>(static_cast<size_t>(n + offset)), offset};
  for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(uniform(rng));
  return x;
}

// |actual - expected| <= rel |expected| + abs, NaN only where NaN is expected, infinities exactly.
void check_near(double actual, double expected, double rel, double abs) {
  CAPTURE(actual);
  CAPTURE(expected);
  if (std::isnan(expected)) {
    CHECK(std::isnan(actual));
  } else if (std::isinf(expected)) {
    CHECK(actual == expected);
  } else {
    CHECK(std::abs(actual - expected) <= rel * std::abs(expected) + abs);
  }
}

double phi(double x) { return 0.5 * (1 + std::erf(x / std::sqrt(2.0))); }
double gelu_tanh_inner(double x) { return std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)); }

struct MapCase {
  UnaryOp f;
  const char* name;
  double low, high, rel, abs;
  std::function<double(double)> reference;
};

const std::vector<MapCase>& map_cases() {
  static const std::vector<MapCase> cases = {
      {UnaryOp::exp, "exp", -86, 88, 3e-7, 0, [](double x) { return std::exp(x); }},
      {UnaryOp::log, "log", 1e-30, 1e4, 3e-7, 3e-7, [](double x) { return std::log(x); }},
      {UnaryOp::tanh, "tanh", -10, 10, 5e-7, 1e-7, [](double x) { return std::tanh(x); }},
      {UnaryOp::sigmoid, "sigmoid", -60, 60, 5e-7, 0, [](double x) { return 1 / (1 + std::exp(-x)); }},
      {UnaryOp::gelu, "gelu", -8, 8, 1e-6, 1e-6, [](double x) { return x * phi(x); }},
      {UnaryOp::gelu_derivative, "gelu_derivative", -8, 8, 1e-6, 1e-6,
       [](double x) { return phi(x) + x * std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI); }},
      {UnaryOp::gelu_tanh, "gelu_tanh", -8, 8, 1e-6, 1e-6, [](double x) { return 0.5 * x * (1 + gelu_tanh_inner(x)); }},
      {UnaryOp::gelu_tanh_derivative, "gelu_tanh_derivative", -8, 8, 1e-6, 3e-6,  // (1 + tanh u cancels for x << 0)
       [](double x) {
         const double t = gelu_tanh_inner(x);
         return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * std::sqrt(2 / M_PI) * (1 + 3 * 0.044715 * x * x);
       }},
  };
  return cases;
}

}  // namespace

TEST_SUITE("simd") {
  TEST_CASE(
      "the SIMD targets: the widest first and each usable and an unknown name refused also from AXIOM_SIMD_TARGET") {
    const std::vector<std::string> targets = vec::targets();
    REQUIRE(!targets.empty());
    CHECK(vec::target() == targets.front());
    under_every_target([] {});
    CHECK(vec::target() == targets.front());
    CHECK_THROWS_WITH(vec::use_target("avx9000"), doctest::Contains("avx9000"));
    CHECK(vec::target() == targets.front());

    // AXIOM_SIMD_TARGET: a name of targets() in any case, unset for the widest, else an Error naming it
    std::string narrowest = targets.back();
    for (char& c : narrowest) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    setenv("AXIOM_SIMD_TARGET", narrowest.c_str(), 1);
    vec::use_target_from_environment();
    CHECK(vec::target() == targets.back());
    setenv("AXIOM_SIMD_TARGET", "avx9000", 1);
    CHECK_THROWS_WITH(vec::use_target_from_environment(),
                      doctest::Contains("[AXIOM_SIMD_TARGET] this CPU and build have no SIMD target 'avx9000'"));
    unsetenv("AXIOM_SIMD_TARGET");
    vec::use_target_from_environment();
    CHECK(vec::target() == targets.front());
  }

  TEST_CASE("elementwise maps against double references under every target") {
    under_every_target([] {
      std::mt19937 rng(3);
      for (const MapCase& c : map_cases()) {
        for (int64_t n : kLengths) {
          CAPTURE(std::string(c.name));
          CAPTURE(n);
          Floats x = random_floats(n, c.low, c.high, rng);
          std::vector<float> y(static_cast<size_t>(n));
          vec::map(c.f, x.data(), y.data(), n);
          for (int64_t i = 0; i < n; ++i) check_near(y[i], c.reference(x[i]), c.rel, c.abs);
        }
      }
    });
  }

  // A float's value may not depend on where it lies in the array: oneTBB cuts arrays into pieces
  // wherever its threads' work falls, and the last 1 to 15 floats of a piece take narrower vectors.
  // (Under AVX-512 GELU's approximate reciprocal had 14 bits in a whole vector, 12 in a narrower one.)
  TEST_CASE("elementwise maps and activation_and_slope give the same bits in whole vectors and in pieces") {
    constexpr float kUnwritten = std::numeric_limits<float>::quiet_NaN();
    auto same_bits = [](const std::vector<float>& a, const std::vector<float>& b) {
      return std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
    };
    under_every_target([&] {
      std::mt19937 rng(31);
      constexpr int64_t n = 96;
      for (const MapCase& c : map_cases()) {
        CAPTURE(std::string(c.name));
        Floats x = random_floats(n, c.low, c.high, rng);
        const bool has_slope = c.f == UnaryOp::gelu || c.f == UnaryOp::gelu_tanh;
        std::vector<float> whole(n), a_whole(n), slope_whole(n, 1.5f);
        vec::map(c.f, x.data(), whole.data(), n);
        if (has_slope) {
          vec::activation_and_slope(c.f, x.data(), a_whole.data(), slope_whole.data(), n);
          CHECK(same_bits(a_whole, whole));
        }
        for (int64_t piece : {1, 3, 4, 7, 8, 13}) {
          CAPTURE(piece);
          std::vector<float> pieces(n, kUnwritten), a_pieces(n, kUnwritten), slope_pieces(n, 1.5f);
          for (int64_t i = 0; i < n; i += piece) {
            const int64_t length = std::min(piece, n - i);
            vec::map(c.f, x.data() + i, pieces.data() + i, length);
            if (has_slope)
              vec::activation_and_slope(c.f, x.data() + i, a_pieces.data() + i, slope_pieces.data() + i, length);
          }
          CHECK(same_bits(pieces, whole));
          if (has_slope) CHECK(same_bits(a_pieces, a_whole));
          if (has_slope) CHECK(same_bits(slope_pieces, slope_whole));
        }
      }
    });
  }

  TEST_CASE("elementwise maps on special values in whole vectors and in the tail") {
    const std::vector<double> values = {-kInf, -100, -88, -87.5, -1, -0.0, 0, 1, 88, 89, kInf, kNaN};
    const std::vector<double> exp_expected = {0,    0,    0,   0, std::exp(-1), 1, 1, std::exp(1), std::exp(88),
                                              kInf, kInf, kNaN};
    const std::vector<double> log_expected = {kNaN,  kNaN, kNaN,         kNaN,         kNaN, -kInf,
                                              -kInf, 0,    std::log(88), std::log(89), kInf, kNaN};
    const std::vector<double> tanh_expected = {-1, -1, -1, -1, std::tanh(-1), 0, 0, std::tanh(1), 1, 1, 1, kNaN};
    const std::vector<double> sigmoid_expected = {0,
                                                  1 / (1 + std::exp(100)),
                                                  1 / (1 + std::exp(88)),
                                                  1 / (1 + std::exp(87.5)),
                                                  1 / (1 + std::exp(1)),
                                                  0.5,
                                                  0.5,
                                                  1 / (1 + std::exp(-1)),
                                                  1,
                                                  1,
                                                  1,
                                                  kNaN};
    under_every_target([&] {
      for (int copies : {1, 5}) {  // 12 values: the tail alone; 60: whole vectors too
        std::vector<float> x;
        for (int c = 0; c < copies; ++c) x.insert(x.end(), values.begin(), values.end());
        const int64_t n = static_cast<int64_t>(x.size());
        auto check_map = [&](UnaryOp f, const std::vector<double>& expected, double abs) {
          std::vector<float> y(x.size());
          vec::map(f, x.data(), y.data(), n);
          for (int64_t i = 0; i < n; ++i) {
            CAPTURE(x[i]);
            check_near(y[i], expected[i % values.size()], 3e-7, abs);
          }
        };
        check_map(UnaryOp::exp, exp_expected, 0);
        check_map(UnaryOp::log, log_expected, 0);
        check_map(UnaryOp::tanh, tanh_expected, 0);
        check_map(UnaryOp::sigmoid, sigmoid_expected, 1e-38);  // (float32 flushes e^-88 and below to 0)
        // GELU as the scalar formula gives it: x Phi(x), so -inf * 0 = NaN and inf * 1 = inf
        const std::vector<double> gelu_expected = {kNaN, -0.0,   -0.0, -0.0, -1 * phi(-1), -0.0,
                                                   0,    phi(1), 88,   89,   kInf,         kNaN};
        check_map(UnaryOp::gelu, gelu_expected, 1e-7);
      }
    });
  }

  TEST_CASE("activation_and_slope gives the bits of the activation, its derivative and a multiply under every target") {
    const std::vector<std::pair<UnaryOp, UnaryOp>> activations = {{UnaryOp::gelu, UnaryOp::gelu_derivative},
                                                                  {UnaryOp::gelu_tanh, UnaryOp::gelu_tanh_derivative}};
    under_every_target([&] {
      std::mt19937 rng(29);
      for (const auto& [f, derivative] : activations) {
        for (int64_t n : kLengths) {
          CAPTURE(static_cast<int>(f));
          CAPTURE(n);
          Floats h = random_floats(n, -8, 8, rng), g = random_floats(n, -2, 2, rng);
          std::vector<float> expected_a(static_cast<size_t>(n)), slope(static_cast<size_t>(n)),
              a(static_cast<size_t>(n));
          vec::map(f, h.data(), expected_a.data(), n);
          vec::map(derivative, h.data(), slope.data(), n);
          std::vector<float> expected_g(g.data(), g.data() + n);
          for (int64_t i = 0; i < n; ++i) expected_g[i] *= slope[i];
          vec::activation_and_slope(f, h.data(), a.data(), g.data(), n);
          for (int64_t i = 0; i < n; ++i) {
            CHECK(a[i] == expected_a[i]);
            CHECK(g[i] == expected_g[i]);
          }
        }
      }
    });
    float x = 1, y = 0, z = 1;
    CHECK_THROWS_WITH(vec::activation_and_slope(UnaryOp::exp, &x, &y, &z, 1), doctest::Contains("gelu or gelu_tanh"));
    // A unary op with no SIMD kernel is an Error, not an output left unwritten.
    for (int i = 0; i < axiom::core::kNumUnaryOps; ++i) {
      const auto op = static_cast<UnaryOp>(i);
      CAPTURE(axiom::core::op_name(op));
      if (!vec::has_map(op)) CHECK_THROWS_WITH(vec::map(op, &x, &y, 1), doctest::Contains("no SIMD kernel"));
    }
    CHECK_FALSE(vec::has_map(UnaryOp::neg));
    CHECK(vec::has_map(UnaryOp::gelu_tanh_derivative));
  }

  TEST_CASE("arithmetic on walked and repeated operands and column sums under every target") {
    const std::vector<std::pair<BinaryOp, std::function<float(float, float)>>> ops = {
        {BinaryOp::add, [](float x, float y) { return x + y; }},
        {BinaryOp::sub, [](float x, float y) { return x - y; }},
        {BinaryOp::mul, [](float x, float y) { return x * y; }},
        {BinaryOp::div, [](float x, float y) { return x / y; }},
    };
    under_every_target([&] {
      std::mt19937 rng(17);
      for (int64_t n : kLengths) {
        Floats a = random_floats(n + 1, -4, 4, rng), b = random_floats(n + 1, 0.5, 4, rng);
        for (const auto& [op, reference] : ops) {
          for (auto [a_step, b_step] : {std::pair<int64_t, int64_t>{1, 1}, {1, 0}, {0, 1}}) {
            CAPTURE(n);
            CAPTURE(static_cast<int>(op));
            CAPTURE(a_step);
            CAPTURE(b_step);
            std::vector<float> out(static_cast<size_t>(n));
            vec::arithmetic(op, a.data(), a_step, b.data(), b_step, out.data(), n);
            // exact: one IEEE operation per element, as the scalar loop does it
            for (int64_t i = 0; i < n; ++i) CHECK(out[i] == reference(a[i * a_step], b[i * b_step]));
          }
        }
        std::vector<double> totals(static_cast<size_t>(n), 0.5), expected = totals;
        vec::add_row_to_totals(a.data(), totals.data(), n);
        for (int64_t i = 0; i < n; ++i) CHECK(totals[i] == expected[i] + double(a[i]));
      }
    });
    // A binary op with no SIMD kernel is an Error, not an output left unwritten.
    float x = 1, y = 2, out = 0;
    for (int i = 0; i < axiom::core::kNumBinaryOps; ++i) {
      const auto op = static_cast<BinaryOp>(i);
      CAPTURE(axiom::core::op_name(op));
      CHECK(vec::has_arithmetic(op) ==
            (ops.end() != std::find_if(ops.begin(), ops.end(), [op](const auto& entry) { return entry.first == op; })));
      if (!vec::has_arithmetic(op))
        CHECK_THROWS_WITH(vec::arithmetic(op, &x, 1, &y, 1, &out, 1), doctest::Contains("no SIMD kernel"));
    }
  }

  TEST_CASE("uniform draws core::uniform's float32 numbers bit for bit under every target") {
    struct Case {
      uint64_t seed, first;
      double low, high;
    };
    // a counter's high word changing within a run; a range so narrow that rounding reaches `high`
    const Case cases[] = {
        {0, 0, 0, 1}, {7, (uint64_t{1} << 32) - 37, -3, 5}, {uint64_t{1} << 40 | 3, 12345, 1, 1 + 0x1p-23}};
    under_every_target([&] {
      for (const Case& c : cases) {
        for (int64_t n : kLengths) {
          CAPTURE(c.first);
          CAPTURE(n);
          std::vector<float> drawn(static_cast<size_t>(n) + 1);
          vec::uniform(c.seed, c.first, c.low, c.high, drawn.data() + 1, n);  // an unaligned start
          for (int64_t i = 0; i < n; ++i) {
            const float expected =
                axiom::core::uniform_float32(c.seed, c.first + static_cast<uint64_t>(i), c.low, c.high);
            CHECK(drawn[static_cast<size_t>(i) + 1] == expected);
            CHECK(expected < static_cast<float>(c.high));
          }
        }
      }
    });
  }

  TEST_CASE("one line of attention_step against loops under every target, with hidden keys and without") {
    under_every_target([] {
      std::mt19937 rng(6);
      const int64_t stride = 40;          // keys_t [dh, seen] and values [seen, dh] inside wider rows
      for (const int64_t dh : {5, 37}) {  // a part of a vector, and several vectors and a part
        for (const bool with_hidden : {false, true}) {
          for (int64_t seen : {1, 3, 16, 33}) {
            CAPTURE(dh);
            CAPTURE(seen);
            CAPTURE(with_hidden);
            Floats q = random_floats(dh, -2, 2, rng), keys_t = random_floats(dh * stride, -2, 2, rng),
                   values = random_floats(seen * stride, -2, 2, rng);
            std::vector<uint8_t> hidden(static_cast<size_t>(seen));
            for (int64_t s = 1; s < seen; s += 3)
              hidden[static_cast<size_t>(s)] = 1;  // keys 1, 4, 7, ... (key 0 is seen)
            std::vector<float> p(static_cast<size_t>(seen)), out(static_cast<size_t>(dh));
            vec::attention_step_line(q.data(), keys_t.data(), stride, values.data(), stride, dh, seen, 0.5f,
                                     with_hidden ? hidden.data() : nullptr, p.data(), out.data());
            std::vector<double> w(static_cast<size_t>(seen));
            double max = -kInf, total = 0;
            for (int64_t s = 0; s < seen; ++s) {
              for (int64_t d = 0; d < dh; ++d) w[s] += 0.5 * q[d] * keys_t[d * stride + s];
              if (with_hidden && hidden[static_cast<size_t>(s)]) w[s] = -kInf;
              max = std::max(max, w[s]);
            }
            for (double& x : w) total += (x = std::exp(x - max));
            for (int64_t d = 0; d < dh; ++d) {
              double expected = 0;
              for (int64_t s = 0; s < seen; ++s) expected += w[s] / total * values[s * stride + d];
              check_near(out[d], expected, 1e-5, 1e-6);
            }
            for (int64_t s = 0; s < seen; ++s) check_near(p[s], w[s] / total, 1e-5, 1e-7);
          }
        }
      }
    });
  }

  TEST_CASE("max and sum and softmax and its backward against loops under every target") {
    under_every_target([] {
      std::mt19937 rng(5);
      for (int64_t n : kLengths) {
        CAPTURE(n);
        Floats x = random_floats(n, -20, 20, rng);
        double max = -kInf, sum = 0;
        for (int64_t i = 0; i < n; ++i) max = std::max<double>(max, x[i]), sum += x[i];
        CHECK(vec::max(x.data(), n) == max);
        check_near(vec::sum(x.data(), n), sum, 1e-5, 1e-4);

        const float shift = n ? static_cast<float>(max) : 0.0f;
        std::vector<float> e(static_cast<size_t>(n));
        double exp_sum = 0;
        // (the kernel subtracts in float, as the reference does: exp magnifies that rounding)
        for (int64_t i = 0; i < n; ++i) exp_sum += std::exp(double(x[i] - shift));
        check_near(vec::exp_shifted(x.data(), shift, e.data(), n), exp_sum, 1e-5, 0);
        check_near(vec::exp_shifted(x.data(), shift, nullptr, n), exp_sum, 1e-5, 0);
        for (int64_t i = 0; i < n; ++i) check_near(e[i], std::exp(double(x[i] - shift)), 3e-7, 0);

        std::vector<float> probabilities(static_cast<size_t>(n)), log_probabilities(static_cast<size_t>(n));
        vec::softmax(x.data(), probabilities.data(), n, false);
        vec::softmax(x.data(), log_probabilities.data(), n, true);
        std::vector<float> in_place(x.data(), x.data() + n), in_place_log(x.data(), x.data() + n);
        vec::softmax(in_place.data(), in_place.data(), n, false);  // (attention's rows: in place)
        vec::softmax(in_place_log.data(), in_place_log.data(), n, true);
        for (int64_t i = 0; i < n; ++i) {
          check_near(probabilities[i], std::exp(double(x[i] - shift)) / exp_sum, 1e-6, 0);
          check_near(log_probabilities[i], double(x[i] - shift) - std::log(exp_sum), 1e-6, 1e-6);
          CHECK(in_place[i] == probabilities[i]);
          CHECK(in_place_log[i] == log_probabilities[i]);
        }

        // a row of equal values: each probability exactly 1/n, which a lane summed twice would spoil;
        // and softmax's backward of equal gradients is 0 (their dot with p is the gradient itself)
        if (n > 0) {
          std::vector<float> equal(static_cast<size_t>(n), 3.0f), ones(static_cast<size_t>(n), 1.0f);
          vec::softmax(equal.data(), equal.data(), n, false);
          for (int64_t i = 0; i < n; ++i) CHECK(equal[i] == static_cast<float>(1.0 / double(n)));
          vec::softmax_backward(equal.data(), ones.data(), 1.0f, n);
          for (int64_t i = 0; i < n; ++i) CHECK(std::abs(ones[i]) < 1e-7f);
        }

        // softmax's backward: dp = p (dp - sum(dp p)) scale
        Floats dp = random_floats(n, -1, 1, rng);
        std::vector<double> dp_ref(static_cast<size_t>(n));
        double dot = 0;
        for (int64_t i = 0; i < n; ++i) dot += double(dp[i]) * probabilities[i];
        for (int64_t i = 0; i < n; ++i) dp_ref[i] = probabilities[i] * (dp[i] - dot) * 0.125;
        vec::softmax_backward(probabilities.data(), dp.data(), 0.125f, n);
        for (int64_t i = 0; i < n; ++i) check_near(dp[i], dp_ref[i], 1e-5, 1e-7);
      }
    });
  }

  TEST_CASE("max and softmax of rows with NaN or infinities under every target") {
    under_every_target([] {
      for (int64_t n : {1, 9, 40}) {
        for (int64_t nan_at : {int64_t{0}, n / 2, n - 1}) {
          CAPTURE(n);
          CAPTURE(nan_at);
          std::vector<float> x(static_cast<size_t>(n), 1.0f);
          x[nan_at] = std::numeric_limits<float>::quiet_NaN();
          CHECK(std::isnan(vec::max(x.data(), n)));
        }
        std::vector<float> masked(static_cast<size_t>(n), -HUGE_VALF);
        CHECK(vec::max(masked.data(), n) == -kInf);

        // softmax: a row with a NaN or +inf, or only -inf, is NaN everywhere (as the scalar loop);
        // -inf entries among numbers get probability 0
        for (float odd : {std::numeric_limits<float>::quiet_NaN(), HUGE_VALF, -HUGE_VALF}) {
          for (int64_t odd_at : {int64_t{0}, n / 2, n - 1}) {  // in the first vector, the middle, the last
            CAPTURE(odd_at);
            std::vector<float> x(static_cast<size_t>(n), odd), y(static_cast<size_t>(n));
            if (odd != -HUGE_VALF) std::fill(x.begin(), x.end(), 0.5f), x[odd_at] = odd;
            for (bool log : {false, true}) {
              vec::softmax(x.data(), y.data(), n, log);
              for (float v : y) CHECK(std::isnan(v));
            }
          }
        }
        std::vector<float> x(static_cast<size_t>(n), -HUGE_VALF), y(static_cast<size_t>(n));
        x[n / 3] = 2.0f;
        vec::softmax(x.data(), y.data(), n, false);
        for (int64_t i = 0; i < n; ++i) CHECK(y[i] == (i == n / 3 ? 1.0f : 0.0f));
      }
      CHECK(vec::max(nullptr, 0) == -kInf);
    });
  }

  TEST_CASE("layer norm's passes forward and backward with and without weight and bias under every target") {
    under_every_target([] {
      std::mt19937 rng(9);
      for (int64_t n : kLengths) {
        if (n == 0) continue;
        CAPTURE(n);
        Floats x = random_floats(n, -3, 5, rng), g = random_floats(n, -1, 1, rng);
        Floats w = random_floats(n, 0.5, 1.5, rng), b = random_floats(n, -1, 1, rng);
        double mean = 0, squares = 0;
        for (int64_t i = 0; i < n; ++i) mean += x[i];
        mean /= double(n);
        for (int64_t i = 0; i < n; ++i) squares += (x[i] - mean) * (x[i] - mean);
        const float m = static_cast<float>(mean), r = static_cast<float>(1 / std::sqrt(squares / double(n) + 1e-5));
        check_near(vec::squared_deviations(x.data(), m, n), squares, 1e-5, 1e-5);

        for (bool affine : {false, true}) {
          CAPTURE(affine);
          const float* wp = affine ? w.data() : nullptr;
          const float* bp = affine ? b.data() : nullptr;
          auto weight = [&](int64_t i) { return affine ? double(w[i]) : 1.0; };
          std::vector<float> y(static_cast<size_t>(n)), dx(static_cast<size_t>(n));
          vec::layer_norm_apply(x.data(), m, r, wp, bp, y.data(), n);
          double sum_gw = 0, sum_gw_xhat = 0;
          for (int64_t i = 0; i < n; ++i) {
            const double xhat = (double(x[i]) - m) * r;
            check_near(y[i], xhat * weight(i) + (affine ? double(b[i]) : 0.0), 1e-6, 1e-6);
            sum_gw += g[i] * weight(i);
            sum_gw_xhat += g[i] * weight(i) * xhat;
          }
          float got_gw = 0, got_gw_xhat = 0;
          vec::layer_norm_backward_sums(x.data(), g.data(), wp, m, r, n, &got_gw, &got_gw_xhat);
          check_near(got_gw, sum_gw, 1e-5, 1e-5);
          check_near(got_gw_xhat, sum_gw_xhat, 1e-5, 1e-5);
          const float mean_gw = static_cast<float>(sum_gw / double(n)),
                      mean_gw_xhat = static_cast<float>(sum_gw_xhat / double(n));
          vec::layer_norm_backward_apply(x.data(), g.data(), wp, m, r, mean_gw, mean_gw_xhat, dx.data(), n);
          for (int64_t i = 0; i < n; ++i) {
            const double xhat = (double(x[i]) - m) * r;
            check_near(dx[i], r * (g[i] * weight(i) - mean_gw - xhat * mean_gw_xhat), 1e-5, 1e-5);
          }
        }
      }
    });
  }

  // Random bit patterns cover every class of float32 (NaN, infinities, subnormals, both signs);
  // the ties to even, the largest finite values and quiet/signalling NaN are set by hand.
  TEST_CASE("round_to_bfloat16 gives the scalar rounding's bits under every target") {
    under_every_target([] {
      std::mt19937 rng(12);
      for (int64_t n : kLengths) {
        CAPTURE(n);
        std::vector<uint32_t> bits(static_cast<size_t>(n));
        for (uint32_t& b : bits) b = static_cast<uint32_t>(rng());
        const uint32_t edges[] = {0x3f808000u, 0x3f818000u, 0x7f7fffffu, 0xff7fffffu, 0x7f800001u, 0xffc00000u,
                                  0x00008000u, 0x80018000u, 0x7f800000u, 0x3f80ffffu, 0xffffffffu, 0xffff8000u};
        for (size_t i = 0; i < bits.size(); ++i) bits[i] = i % 2 ? bits[i] : edges[(i / 2) % std::size(edges)];
        std::vector<float> x(bits.size());
        for (size_t i = 0; i < bits.size(); ++i) x[i] = std::bit_cast<float>(bits[i]);
        std::vector<uint16_t> y(bits.size());
        vec::round_to_bfloat16(x.data(), y.data(), n);
        for (int64_t i = 0; i < n; ++i) {
          CAPTURE(bits[i]);
          CHECK(y[i] == cpu::round_to_bfloat16(x[i]));
        }
      }
    });
  }

  TEST_CASE("cross-entropy's gradient pass and one Adam step against loops under every target") {
    under_every_target([] {
      std::mt19937 rng(13);
      for (int64_t n : kLengths) {
        CAPTURE(n);
        Floats x = random_floats(n, -6, 6, rng);
        std::vector<float> dx(static_cast<size_t>(n));
        vec::softmax_minus(x.data(), 2.5f, 0.01f, 0.5f, dx.data(), n);
        for (int64_t i = 0; i < n; ++i) check_near(dx[i], (std::exp(double(x[i] - 2.5f)) - 0.01) * 0.5, 1e-6, 1e-7);

        for (bool decoupled : {false, true}) {
          CAPTURE(decoupled);
          const axiom::core::AdamStep step{
              .lr = 0.01, .weight_decay = 0.1, .decoupled_weight_decay = decoupled, .step = 3};
          Floats p = random_floats(n, -1, 1, rng), grad = random_floats(n, -1, 1, rng);
          Floats m = random_floats(n, -0.1, 0.1, rng), v = random_floats(n, 0, 0.01, rng);
          std::vector<double> p_ref(static_cast<size_t>(n)), m_ref(p_ref.size()), v_ref(p_ref.size());
          const auto k = axiom::core::adam_scalars<double>(step);
          for (int64_t i = 0; i < n; ++i) {
            p_ref[i] = p[i], m_ref[i] = m[i], v_ref[i] = v[i];
            axiom::core::adam_element<double>(p_ref[i], grad[i], m_ref[i], v_ref[i], k);
          }
          vec::adam(p.data(), grad.data(), m.data(), v.data(), axiom::core::adam_scalars<float>(step), n);
          for (int64_t i = 0; i < n; ++i) {
            check_near(p[i], p_ref[i], 1e-6, 1e-8);  // (p - update cancels: an absolute term in lr's units)
            check_near(m[i], m_ref[i], 1e-6, 1e-8);
            check_near(v[i], v_ref[i], 1e-6, 1e-10);
          }
        }
      }
    });
  }

}  // TEST_SUITE("simd")
