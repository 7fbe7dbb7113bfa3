// Large float32 products (oneDNN where built, core/cpu/onednn_gemm.h) against loops in double, in
// both precisions (core/launch.h: MatmulPrecision). For bfloat16 the loop's operands are rounded by a
// second method (frexp and nearbyint, not the kernel's bit arithmetic); small products and float64
// stay exact.
#include <cfloat>
#include <cmath>

#include "core/cpu/onednn_gemm.h"
#include "core/cpu/vector_math.h"
#include "tests/support/emulated_cuda.h"
#include "tests/support/matmul_precision.h"
#include "tests/support/reference.h"

namespace axiom::test {

using core::Tensor;

namespace {

using core::MatmulPrecision;

// x rounded to 8 significant bits, ties to even (x = f * 2^e with f in [0.5, 1): keep 2^8 f whole).
double bfloat16_reference(double x) {
  int exponent = 0;
  const double fraction = std::frexp(x, &exponent);
  return std::ldexp(std::nearbyint(std::ldexp(fraction, 8)), exponent - 8);
}

// x rounded to TF32's 11 significant bits, the nearest, ties away from zero (std::round).
double tf32_reference(double x) {
  int exponent = 0;
  const double fraction = std::frexp(x, &exponent);
  return std::ldexp(std::round(std::ldexp(fraction, 11)), exponent - 11);
}

// Each product of bfloat16 values is exact in float32; only the float32 sums round.
Tolerance float32_sums(int64_t k) { return {1e-4, 1e-5 * static_cast<double>(k)}; }

}  // namespace

TEST_CASE("round_to_bfloat16: nearest, ties to even, infinities and NaN kept") {
  using core::cpu::round_to_bfloat16;
  CHECK(round_to_bfloat16(1.0f) == 0x3f80);
  CHECK(round_to_bfloat16(1.0f + 0x1p-8f) == 0x3f80);             // a tie: down to the even 1
  CHECK(round_to_bfloat16(1.0f + 0x1p-7f + 0x1p-8f) == 0x3f82);   // a tie: up to the even neighbour
  CHECK(round_to_bfloat16(1.0f + 0x1p-8f + 0x1p-20f) == 0x3f81);  // past the tie: up
  CHECK(round_to_bfloat16(-2.0f) == 0xc000);
  CHECK(round_to_bfloat16(-0.0f) == 0x8000);
  CHECK(round_to_bfloat16(INFINITY) == 0x7f80);
  CHECK(round_to_bfloat16(-INFINITY) == 0xff80);
  CHECK(round_to_bfloat16(FLT_MAX) == 0x7f80);  // beyond bfloat16's largest finite value
  CHECK(std::isnan(core::cpu::bfloat16_to_float(round_to_bfloat16(NAN))));
  CHECK(std::isnan(core::cpu::bfloat16_to_float(round_to_bfloat16(-NAN))));
  CHECK(core::cpu::bfloat16_to_float(round_to_bfloat16(3.140625f)) == 3.140625f);  // 8 significant bits: exact
}

TEST_CASE("matmul: large float32 products in every layout against loops, split over 1 or 2 threads") {
  const int64_t m = 70, k = 80, n = 60;  // 336,000 multiply-adds: past the 64^3 of a small product
  const int threads_before = core::num_threads();
  for (const int threads : {1, 2}) {
    core::set_num_threads(threads);
    for (const Layout la : {Layout::contiguous, Layout::permuted, Layout::sliced}) {
      for (const Layout lb : {Layout::contiguous, Layout::permuted, Layout::sliced}) {
        CAPTURE(threads);
        CAPTURE(la);
        CAPTURE(lb);
        Generator gen(41);
        const Tensor a = random_tensor({m, k}, Dtype::float32, gen, la),
                     b = random_tensor({k, n}, Dtype::float32, gen, lb);
        check_close(core::matmul(a, b), product_reference(a, b, unchanged), float32_sums(k), "float32");
        check_close(core::matmul(a.narrow(0, 0, 67), b), product_reference(a.narrow(0, 0, 67), b, unchanged),
                    float32_sums(k), "odd rows");
        if (!bfloat16_products_here()) continue;
        const PrecisionForTest bfloat16(MatmulPrecision::bfloat16);
        const Tensor out = core::matmul(a, b);
        check_close(out, product_reference(a, b, bfloat16_reference), float32_sums(k), "bfloat16 operands");
        // and it is not the float32 product: the rounding of the operands shows
        const std::vector<double> exact = product_reference(a, b, unchanged);
        double largest_change = 0;
        for (int64_t i = 0; i < out.numel(); ++i)
          largest_change = std::max(largest_change, std::abs(out.at({i / n, i % n}) - exact[i]));
        CHECK(largest_change > 1e-2);
      }
    }
  }
  core::set_num_threads(threads_before);
}

TEST_CASE("matmul: linear adds the bias, batches of shared and of separate matrices, in both precisions") {
  for (const MatmulPrecision precision : {MatmulPrecision::float32, MatmulPrecision::bfloat16}) {
    if (precision == MatmulPrecision::bfloat16 && !bfloat16_products_here()) continue;
    CAPTURE(core::to_string(precision));
    const PrecisionForTest scope(precision);
    const auto round = precision == MatmulPrecision::bfloat16 ? bfloat16_reference : unchanged;
    Generator gen(42);
    const Tensor x = random_tensor({2, 70, 80}, Dtype::float32, gen), w = random_tensor({80, 60}, Dtype::float32, gen);
    const Tensor bias = random_tensor({60}, Dtype::float32, gen), ws = random_tensor({2, 80, 60}, Dtype::float32, gen);
    const Tensor dense = core::linear(x, w, bias), shared = core::matmul(x, w), separate = core::matmul(x, ws);
    for (int64_t i = 0; i < 2; ++i) {
      CAPTURE(i);
      std::vector<double> expected = product_reference(x.select(0, i), w, round);
      check_close(shared.select(0, i), expected, float32_sums(80), "x @ w, one GEMM over the batch");
      for (size_t e = 0; e < expected.size(); ++e)
        expected[e] += bias.at({static_cast<int64_t>(e % 60)});  // not rounded
      check_close(dense.select(0, i), expected, float32_sums(80), "linear");
      check_close(separate.select(0, i), product_reference(x.select(0, i), ws.select(0, i), round), float32_sums(80),
                  "a matrix each");
    }
  }
}

// What `axiom bench train --precision bfloat16` times as the product without its rounding pass: the
// operands rounded beforehand, stored compact in either orientation ([k, m] for a transposed a),
// give matmul's bfloat16 product bit for bit.
TEST_CASE("onednn_gemm_bfloat16: operands rounded beforehand, in either orientation, give matmul's bits") {
  if (!bfloat16_products_here()) return;
  const PrecisionForTest bfloat16(MatmulPrecision::bfloat16);
  const int64_t m = 70, k = 80, n = 60;
  auto rounded = [](const Tensor& stored) {
    std::vector<uint16_t> bits(static_cast<size_t>(stored.numel()));
    core::cpu::vec::round_to_bfloat16(stored.data<float>(), bits.data(), stored.numel());
    return bits;
  };
  for (const bool a_transposed : {false, true}) {
    for (const bool b_transposed : {false, true}) {
      CAPTURE(a_transposed);
      CAPTURE(b_transposed);
      Generator gen(45);
      const Tensor a_stored = a_transposed ? core::randn({k, m}, gen) : core::randn({m, k}, gen);
      const Tensor b_stored = b_transposed ? core::randn({n, k}, gen) : core::randn({k, n}, gen);
      const Tensor a = a_transposed ? a_stored.transpose(0, 1) : a_stored;
      const Tensor b = b_transposed ? b_stored.transpose(0, 1) : b_stored;
      const Tensor expected = core::matmul(a, b), out = core::empty({m, n});
      const std::vector<uint16_t> a16 = rounded(a_stored), b16 = rounded(b_stored);
      core::cpu::onednn_gemm_bfloat16({.transposed = a_transposed, .ld = a_stored.size(1)},
                                      {.transposed = b_transposed, .ld = b_stored.size(1)}, m, n, k, a16.data(),
                                      b16.data(), {.c = out.data<float>(), .ldc = n}, core::num_threads());
      CHECK(core::sum(core::eq(out, expected).to(Dtype::float64)).item() == static_cast<double>(m * n));
    }
  }
}

// core::linear with a bfloat16 output (layer_norm_attention's qkv): each float32 sum, bias added,
// rounded as oneDNN writes it, the bits of the float32 output rounded; for one product over the
// batch and for a batch that does not fold into one (its float32 output rounded after).
TEST_CASE("linear: a bfloat16 output of bfloat16 operands is their float32 output rounded") {
  if (!bfloat16_products_here()) return;
  Generator gen(46);
  const Tensor w = random_tensor({80, 60}, Dtype::float32, gen).to(Dtype::bfloat16),
               bias = random_tensor({60}, Dtype::float32, gen);
  const Tensor folded = random_tensor({2, 70, 80}, Dtype::float32, gen).to(Dtype::bfloat16),
               strided = random_tensor({2, 80, 70}, Dtype::float32, gen).to(Dtype::bfloat16).transpose(1, 2);
  for (const Tensor& x : {folded, strided}) {
    const Tensor out = core::linear(x, w, bias, Dtype::bfloat16);
    CHECK(out.dtype() == Dtype::bfloat16);
    const Tensor expected = core::linear(x, w, bias).to(Dtype::bfloat16).to(Dtype::float32);
    CHECK(core::sum(core::eq(out.to(Dtype::float32), expected).to(Dtype::float64)).item() == 2 * 70 * 60);
  }
  const Tensor x32 = random_tensor({70, 80}, Dtype::float32, gen), w32 = random_tensor({80, 60}, Dtype::float32, gen);
  check_error([&] { core::linear(x32, w32, bias, Dtype::bfloat16); },
              {"[linear] a product of float32 operands is written in float32 (or in bfloat16, for bfloat16 operands); "
               "asked for bfloat16"});
}

TEST_CASE("matmul in bfloat16: small products and float64 stay exact") {
  if (!bfloat16_products_here()) return;
  const PrecisionForTest bfloat16(MatmulPrecision::bfloat16);
  Generator gen(43);
  const Tensor a = random_tensor({20, 30}, Dtype::float32, gen), b = random_tensor({30, 10}, Dtype::float32, gen);
  check_close(core::matmul(a, b), product_reference(a, b, unchanged), {1e-5, 1e-6 * 30},
              "6,000 multiply-adds: float32");
  const Tensor a64 = random_tensor({70, 80}, Dtype::float64, gen), b64 = random_tensor({80, 60}, Dtype::float64, gen);
  check_close(core::matmul(a64, b64), product_reference(a64, b64, unchanged), {1e-12, 1e-13 * 80}, "float64");
}

TEST_CASE("matmul precision: names, and refusals that say why") {
  CHECK(core::to_string(MatmulPrecision::bfloat16) == "bfloat16");
  CHECK(core::parse_matmul_precision("float32") == MatmulPrecision::float32);
  CHECK(core::parse_matmul_precision("bfloat16") == MatmulPrecision::bfloat16);
  CHECK(core::parse_matmul_precision("tf32") == MatmulPrecision::tf32);
  CHECK(core::to_string(MatmulPrecision::tf32) == "tf32");
  check_error([] { (void)core::parse_matmul_precision("fp16"); },
              {"[matmul precision] expected float32, bfloat16 or tf32, got 'fp16'"});
  CHECK(core::matmul_precision() == MatmulPrecision::float32);  // the default
  CHECK(core::matmul_precision_unavailable_reason(MatmulPrecision::float32).empty());
  const std::string reason = core::matmul_precision_unavailable_reason(MatmulPrecision::bfloat16);
  if (!reason.empty()) {
    check_error([] { core::set_matmul_precision(MatmulPrecision::bfloat16); },
                {"[set_matmul_precision] bfloat16 products cannot run here: ", reason});
    CHECK(core::matmul_precision() == MatmulPrecision::float32);
  }
}

TEST_CASE("matmul in bfloat16 refuses CUDA tensors" * doctest::test_suite("cuda-emulated")) {
  if (!bfloat16_products_here()) return;
  axiom::test::ScopedEmulatedCuda emulated;
  const PrecisionForTest bfloat16(MatmulPrecision::bfloat16);
  const Tensor a = core::ones({2, 3}).to(Device::cuda(0));
  check_error([&] { (void)core::matmul(a, a.transpose(0, 1)); },
              {"[matmul] bfloat16 products (set_matmul_precision) run on the CPU only; got cuda:0 tensors"});
  const Tensor a64 = a.to(Dtype::float64);
  CHECK(core::matmul(a64, a64.transpose(0, 1)).to(Device::cpu()).at({0, 0}) == 3);  // float64: unaffected
}

// The meta device counts a step's products (`axiom bench train` prints the limit from them), so
// it takes bfloat16 products as the CPU does: shapes out, nothing multiplied.
TEST_CASE("matmul in bfloat16 on the meta device gives the product's shape") {
  if (!bfloat16_products_here()) return;
  const PrecisionForTest bfloat16(MatmulPrecision::bfloat16);
  const Tensor a = core::empty({70, 80}, Dtype::float32, Device::meta());
  const Tensor product = core::matmul(a, a.transpose(0, 1));
  CHECK(product.shape() == Shape{70, 70});
  CHECK(product.device() == Device::meta());
}

// TF32 on the device: the products of TF32-rounded operands, in each of cuBLAS's three entries
// (one gemm, a strided batch, a batch of pointers), each run just after a float32 product left
// cuBLAS in its default mode; float64 and CPU products unaffected. A product of two TF32 values is
// exact in float32, so only the sums round: a tight tolerance tells TF32 from float32.
TEST_CASE("matmul in tf32 rounds a device product's operands to TF32 and leaves float64 and the CPU alone" *
          doctest::test_suite("cuda-emulated")) {
  axiom::test::ScopedEmulatedCuda emulated;
  Generator gen(44);
  const Device gpu = Device::cuda(0), cpu = Device::cpu();
  const Tensor a = random_tensor({3, 20, 30}, Dtype::float32, gen), b = random_tensor({3, 30, 10}, Dtype::float32, gen);
  const Tensor c =
      random_tensor({2, 3, 4, 5}, Dtype::float32, gen).transpose(0, 1);  // [3, 2, 4, 5]: matrices 60, 20 apart
  // fn's device product in tf32, after a float32 one
  auto in_tf32 = [&](auto fn) {
    (void)core::matmul(a.select(0, 0).to(gpu), b.select(0, 0).to(gpu));
    const PrecisionForTest tf32(MatmulPrecision::tf32);
    return fn().to(cpu);
  };
  // got (2-D) is the product of x and y's TF32 roundings, and not their float32 product
  auto check_tf32 = [](const Tensor& got, const Tensor& x, const Tensor& y, const char* what) {
    INFO(what);
    const int64_t k = x.size(1);
    check_close(got, product_reference(x, y, tf32_reference), {1e-5, 1e-6 * static_cast<double>(k)}, what);
    const std::vector<double> exact = product_reference(x, y, unchanged), values = values_of(got);
    double largest = 0;
    for (size_t i = 0; i < exact.size(); ++i) largest = std::max(largest, std::abs(values[i] - exact[i]));
    CHECK(largest > 1e-4);
  };
  const Tensor single = in_tf32([&] { return core::matmul(a.select(0, 0).to(gpu), b.select(0, 0).to(gpu)); });
  check_tf32(single, a.select(0, 0), b.select(0, 0), "one gemm");
  const Tensor strided = in_tf32([&] { return core::matmul(a.to(gpu), b.to(gpu)); });
  const Tensor irregular = in_tf32([&] { return core::matmul(c.to(gpu), c.to(gpu).transpose(2, 3)); });
  for (int64_t i = 0; i < 3; ++i) {
    check_tf32(strided.select(0, i), a.select(0, i), b.select(0, i), "a strided batch");
    for (int64_t j = 0; j < 2; ++j) {
      const Tensor m = c.select(0, i).select(0, j);
      check_tf32(irregular.select(0, i).select(0, j), m, m.transpose(0, 1), "a batch of pointers");
    }
  }
  const PrecisionForTest tf32(MatmulPrecision::tf32);
  check_close(core::matmul(a.select(0, 0), b.select(0, 0)),
              product_reference(a.select(0, 0), b.select(0, 0), unchanged), {1e-5, 1e-6 * 30},
              "the CPU's product: float32");
  const Tensor a64 = a.select(0, 0).to(Dtype::float64), b64 = b.select(0, 0).to(Dtype::float64);
  check_close(core::matmul(a64.to(gpu), b64.to(gpu)).to(cpu), product_reference(a64, b64, unchanged),
              {1e-12, 1e-13 * 30}, "float64");
}

}  // namespace axiom::test
