// Which library multiplies a float32 GEMM (core/cpu/gemm_choice.h) and how a product becomes GEMMs
// (core/matrix_layout.h: plan_product):
// - the nearest row of the CPU's key (SIMD target and vendor) and the same transposes decides; no
//   row: the size rule;
// - core::matmul uses the table of this CPU's key (gemm_library_calls counts each library);
// - both libraries, forced, split a large product into bands of rows or of columns and read
//   transposed operands in place, and linear adds its bias: each against a plain loop in double;
// - the shape-only device records the CPU's plans and the fused attention's GEMMs (meta_products).
#include <algorithm>
#include <optional>

#include "core/cpu/gemm_choice.h"
#include "core/cpu/onednn_gemm.h"
#include "core/cpu/vector_math.h"
#include "core/matrix_layout.h"
#include "core/meta/meta.h"
#include "tests/support/reference.h"

namespace axiom::test {

using core::GemmShape;
using core::Tensor;
using core::cpu::GemmChoice;
using core::cpu::GemmLibrary;

namespace {

// a [m, k] @ b [k, n] with a and b random, each row-major or a transposed view.
void check_product(int64_t m, int64_t n, int64_t k, bool a_transposed, bool b_transposed) {
  CAPTURE(m);
  CAPTURE(n);
  CAPTURE(k);
  CAPTURE(a_transposed);
  CAPTURE(b_transposed);
  Generator gen(5);
  const Tensor a = a_transposed ? random_tensor({k, m}, Dtype::float32, gen).transpose(0, 1)
                                : random_tensor({m, k}, Dtype::float32, gen);
  const Tensor b = b_transposed ? random_tensor({n, k}, Dtype::float32, gen).transpose(0, 1)
                                : random_tensor({k, n}, Dtype::float32, gen);
  const core::ProductPlan plan = core::plan_product(a, b);
  CHECK(plan.gemm == GemmShape{m, n, k, a_transposed, b_transposed});
  const std::vector<double> product = product_reference(a, b, unchanged);
  check_close(core::matmul(a, b), product, matmul_tolerance(Dtype::float32, k), "matmul");
  // linear: the bias added as the product is written (oneDNN) or written first (OpenBLAS)
  const Tensor bias = random_tensor({n}, Dtype::float32, gen);
  std::vector<double> with_bias = product;
  for (size_t i = 0; i < with_bias.size(); ++i) with_bias[i] += bias.at({static_cast<int64_t>(i) % n});
  check_close(core::linear(a, b, bias), with_bias, matmul_tolerance(Dtype::float32, k), "linear");
}

// The row of `library` on this CPU's target that the size rule would not choose, the smallest such;
// else the smallest row of `library`; none where the table has no row of it for this target.
std::optional<GemmChoice> row_to_try(GemmLibrary library) {
  const std::string key = core::cpu::gemm_table_key();
  std::optional<GemmChoice> found;
  auto work = [](const GemmChoice& row) { return row.gemm.m * row.gemm.n * row.gemm.k * row.count; };
  auto rule_differs = [](const GemmChoice& row) {
    const bool rule_says_onednn = core::is_large(row.gemm) && core::cpu::onednn_built();
    return rule_says_onednn != (row.library == GemmLibrary::onednn);
  };
  for (const GemmChoice& row : core::cpu::gemm_choice_table()) {
    if (row.key != key || row.library != library) continue;
    const bool better = !found || (rule_differs(row) && !rule_differs(*found)) ||
                        (rule_differs(row) == rule_differs(*found) && work(row) < work(*found));
    if (better) found = row;
  }
  return found;
}

}  // namespace

TEST_SUITE("gemm_choice") {
  TEST_CASE("the nearest row of the same target, transposes and size class decides, if near enough") {
    const GemmChoice table[] = {
        {"AVX3", {1000, 100, 100, false, false}, 1, GemmLibrary::onednn},
        {"AVX3", {70, 70, 70, false, false}, 1, GemmLibrary::onednn},  // large: 343,000 > 64^3
        {"AVX3", {40, 40, 40, false, false}, 2, GemmLibrary::openblas},
        {"AVX3", {30, 30, 30, false, false}, 64, GemmLibrary::openblas},
        {"AVX3", {60, 60, 60, false, true}, 1, GemmLibrary::onednn},
        {"AVX3", {1000, 100, 100, true, false}, 1, GemmLibrary::openblas},
        {"AVX2", {1000, 100, 100, false, false}, 1, GemmLibrary::openblas},
    };
    const bool onednn = core::cpu::onednn_built();
    const GemmLibrary large_rule = onednn ? GemmLibrary::onednn : GemmLibrary::openblas;
    CHECK(choose_gemm_library(table, "AVX3", {1200, 90, 100, false, false}, 1) == large_rule);
    CHECK(choose_gemm_library(table, "AVX3", {32, 32, 32, false, false}, 50) == GemmLibrary::openblas);
    CHECK(choose_gemm_library(table, "AVX3", {1000, 100, 100, true, false}, 1) == GemmLibrary::openblas);
    CHECK(choose_gemm_library(table, "AVX2", {1000, 100, 100, false, false}, 1) == GemmLibrary::openblas);
    CHECK(choose_gemm_library(table, "AVX3", {50, 50, 50, false, true}, 1) ==
          (onednn ? GemmLibrary::onednn : GemmLibrary::openblas));
    // 60^3 is small: the small row 2.75 away decides, not the large 70^3 0.67 away
    CHECK(choose_gemm_library(table, "AVX3", {60, 60, 60, false, false}, 1) == GemmLibrary::openblas);
    SUBCASE("no row of the target, the transposes or near enough: the size rule") {
      CHECK(choose_gemm_library(table, "SSE4", {1000, 100, 100, false, false}, 1) == large_rule);
      CHECK(choose_gemm_library(table, "AVX3", {1000, 100, 100, false, true}, 1) == large_rule);
      CHECK(choose_gemm_library(table, "AVX3", {30, 30, 30, true, true}, 1) == GemmLibrary::openblas);
      CHECK(choose_gemm_library(table, "AVX3", {100000, 4000, 10, true, false}, 1) == large_rule);        // 15 away
      CHECK(choose_gemm_library(table, "AVX3", {50, 50, 50, false, true}, 64) == GemmLibrary::openblas);  // 6.8
    }
  }

  TEST_CASE("a key names the SIMD target and the vendor: one vendor's rows never decide for another's") {
    const std::string key = core::cpu::gemm_table_key(), target = core::cpu::vec::target();
    CAPTURE(key);
    REQUIRE(key.starts_with(target + " "));
    const std::string vendor = key.substr(target.size() + 1);
    CHECK((vendor == "AMD" || vendor == "Intel" || vendor == "other CPU"));
    const GemmChoice table[] = {
        {"AVX3 AMD", {1000, 100, 100, true, false}, 1, GemmLibrary::openblas},
        {"AVX3 Intel", {1000, 100, 100, true, false}, 1, GemmLibrary::onednn},
    };
    const GemmLibrary large_rule = core::cpu::onednn_built() ? GemmLibrary::onednn : GemmLibrary::openblas;
    CHECK(choose_gemm_library(table, "AVX3 AMD", {1000, 100, 100, true, false}, 1) == GemmLibrary::openblas);
    CHECK(choose_gemm_library(table, "AVX3 Intel", {1000, 100, 100, true, false}, 1) == large_rule);
    CHECK(choose_gemm_library(table, "AVX3 other CPU", {1000, 100, 100, true, false}, 1) == large_rule);
    CHECK(choose_gemm_library(table, "AVX3", {1000, 100, 100, true, false}, 1) == large_rule);
  }

  TEST_CASE("core::matmul multiplies in the library of this CPU's table") {
    for (const GemmLibrary library : {GemmLibrary::openblas, GemmLibrary::onednn}) {
      const std::optional<GemmChoice> row = row_to_try(library);
      if (!row || (library == GemmLibrary::onednn && !core::cpu::onednn_built())) continue;
      const GemmShape& g = row->gemm;
      const std::string name(core::cpu::to_string(library));
      CAPTURE(name);
      CAPTURE(g.m);
      CAPTURE(g.n);
      CAPTURE(g.k);
      CAPTURE(row->count);
      Generator gen(3);
      auto operand = [&](int64_t rows, int64_t cols, bool transposed) {
        const Shape shape = transposed ? Shape{row->count, cols, rows} : Shape{row->count, rows, cols};
        const Tensor x = core::randn(shape, gen);
        return transposed ? x.transpose(1, 2) : x;
      };
      const Tensor a = operand(g.m, g.k, g.a_transposed), b = operand(g.k, g.n, g.b_transposed);
      const core::cpu::GemmLibraryCalls before = core::cpu::gemm_library_calls();
      (void)core::matmul(row->count == 1 ? a.squeeze(0) : a, row->count == 1 ? b.squeeze(0) : b);
      const core::cpu::GemmLibraryCalls after = core::cpu::gemm_library_calls();
      CHECK(after.openblas - before.openblas == (library == GemmLibrary::openblas ? 1 : 0));
      CHECK(after.onednn - before.onednn == (library == GemmLibrary::onednn ? 1 : 0));
    }
  }

  TEST_CASE("each library, forced, splits large products into bands and reads transposes in place") {
    for (const GemmLibrary library : {GemmLibrary::openblas, GemmLibrary::onednn}) {
      if (library == GemmLibrary::onednn && !core::cpu::onednn_built()) continue;
      const std::string name(core::cpu::to_string(library));
      CAPTURE(name);
      const core::cpu::ForcedGemmLibrary forced(library);
      for (const bool a_transposed : {false, true}) {
        for (const bool b_transposed : {false, true}) {
          check_product(150, 70, 90, a_transposed, b_transposed);  // bands of rows (m >= n)
          check_product(40, 130, 70, a_transposed, b_transposed);  // bands of columns
          check_product(9, 7, 5, a_transposed, b_transposed);      // small: one band
        }
      }
      SUBCASE("the forced library is the one counted, and the choice returns after") {
        const core::cpu::GemmLibraryCalls before = core::cpu::gemm_library_calls();
        check_product(9, 7, 5, false, false);  // a product and a linear
        const core::cpu::GemmLibraryCalls after = core::cpu::gemm_library_calls();
        CHECK((library == GemmLibrary::onednn ? after.onednn - before.onednn : after.openblas - before.openblas) == 2);
      }
    }
    const core::cpu::GemmLibraryCalls before = core::cpu::gemm_library_calls();
    check_product(9, 7, 5, false, false);  // no library forced any more: the table's choice
    const GemmLibrary table_says =
        core::cpu::choose_gemm_library(core::cpu::gemm_choice_table(), core::cpu::gemm_table_key(), {9, 7, 5}, 1);
    const core::cpu::GemmLibraryCalls after = core::cpu::gemm_library_calls();
    CHECK((table_says == GemmLibrary::onednn ? after.onednn - before.onednn : after.openblas - before.openblas) == 2);
  }

  TEST_CASE("plans: a batch sharing its weight folds into one tall GEMM, a batch of its own does not") {
    Generator gen(9);
    const Tensor x = core::randn({6, 100, 64}, gen), w = core::randn({64, 80}, gen);
    const core::ProductPlan folded = core::plan_product(x, w.expand({6, 64, 80}));
    CHECK(folded.folded);
    CHECK(folded.count == 1);
    CHECK(folded.gemm == GemmShape{600, 80, 64, false, false});
    const core::ProductPlan own = core::plan_product(x, core::randn({6, 80, 64}, gen).transpose(1, 2));
    CHECK_FALSE(own.folded);
    CHECK(own.count == 6);
    CHECK(own.gemm == GemmShape{100, 80, 64, false, true});
    const core::ProductPlan small =
        core::plan_product(core::randn({6, 4, 3}, gen), w.narrow(0, 0, 3).expand({6, 3, 80}));
    CHECK_FALSE(small.folded);  // 4 * 80 * 3 multiply-adds: small GEMMs spread over the threads
    CHECK(small.count == 6);
  }

  TEST_CASE("the shape-only device records each product's plan and attention's GEMMs") {
    const Tensor x = core::zeros({6, 100, 64}, Dtype::float32, Device::meta());
    const Tensor w = core::zeros({64, 80}, Dtype::float32, Device::meta());
    core::reset_meta_flops();
    (void)core::matmul(x, w);
    (void)core::matmul(x, w);
    std::vector<core::MetaProduct> products = core::meta_products();
    REQUIRE(products.size() == 1);
    CHECK(products[0].plan.gemm == GemmShape{600, 80, 64, false, false});
    CHECK(products[0].times == 2);
    CHECK(core::meta_flops() == doctest::Approx(2.0 * 2 * 600 * 80 * 64));

    // attention along axis 1 of qkv [2, 5, 3, 3 * 8] with 2 heads: 2 * 3 lines of 5 positions, Dh 4
    core::reset_meta_flops();
    const Tensor qkv = core::zeros({2, 5, 3, 24}, Dtype::float32, Device::meta());
    (void)core::attention(qkv, 1, 2, core::AttentionMask::all());
    products = core::meta_products();
    REQUIRE(products.size() == 2);
    double flops = 0;
    for (const core::MetaProduct& p : products) {
      CHECK(p.plan.count == 2 * 3 * 2);
      flops += 2.0 * static_cast<double>(p.plan.gemm.m * p.plan.gemm.n * p.plan.gemm.k * p.plan.count * p.times);
    }
    CHECK(flops == doctest::Approx(core::meta_flops()));
    const bool scores = std::any_of(products.begin(), products.end(), [](const core::MetaProduct& p) {
      return p.plan.gemm == GemmShape{5, 5, 4, false, true};
    });
    CHECK(scores);
  }
}

}  // namespace axiom::test
