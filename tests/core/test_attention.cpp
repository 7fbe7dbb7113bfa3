// attention (whole lines, causal, block patterns) and attention_step against loops in double.
#include <cmath>
#include <limits>
#include <vector>

#include "tests/support/reference.h"

namespace core = axiom::core;
using namespace axiom::test;
using axiom::core::Tensor;

namespace {

const double kInf = std::numeric_limits<double>::infinity();

std::vector<double> attention_reference(const Tensor& qkv, int64_t axis, int64_t heads,
                                        const core::AttentionMask& mask) {
  const Shape positions(qkv.shape().begin(), qkv.shape().end() - 1);
  const int64_t d = qkv.size(-1) / 3, dh = d / heads, length = positions[axis];
  const std::vector<double> v = values_of(qkv);
  const std::vector<uint8_t> sees = mask.table(length);
  std::vector<double> out(static_cast<size_t>(core::numel(positions) * d));
  for (int64_t p = 0; p < core::numel(positions); ++p) {
    auto index = unravel(p, positions);
    const int64_t i = index[axis];
    auto at = [&](int64_t j) {  // where position j of p's line starts in qkv
      index[axis] = j;
      return ravel(index, positions) * 3 * d;
    };
    for (int64_t h = 0; h < heads; ++h) {
      std::vector<double> w(static_cast<size_t>(length), -kInf);  // -inf: a key it does not see
      double max = -kInf, total = 0;
      for (int64_t j = 0; j < length; ++j) {
        if (!sees[static_cast<size_t>(i * length + j)]) continue;
        double dot = 0;
        for (int64_t c = 0; c < dh; ++c) dot += v[at(i) + h * dh + c] * v[at(j) + d + h * dh + c];
        w[j] = dot / std::sqrt(static_cast<double>(dh));
        max = std::max(max, w[j]);
      }
      for (double& x : w) total += (x = std::exp(x - max));
      for (int64_t c = 0; c < dh; ++c) {
        double mixed = 0;
        for (int64_t j = 0; j < length; ++j) mixed += w[j] / total * v[at(j) + 2 * d + h * dh + c];
        out[p * d + h * dh + c] = mixed;
      }
    }
  }
  return out;
}

}  // namespace

TEST_CASE("attention along every axis, causal or not, against loops") {
  struct Case {
    Shape shape;  // of qkv
    int64_t axis, heads;
  };
  const std::vector<Case> cases = {{{2, 3, 4, 12}, 1, 2},  {{2, 3, 4, 12}, 2, 2}, {{2, 3, 4, 12}, -2, 1},
                                   {{3, 5, 6}, 1, 2},      {{4, 2, 6}, 0, 1},     {{2, 1, 3, 24}, 1, 4},
                                   {{1, 7, 2, 5, 9}, 3, 3}};
  for (const Dtype dtype : {Dtype::float32, Dtype::float64}) {
    for (const Case& c : cases) {
      for (const bool causal : {false, true}) {
        CAPTURE(str(c.shape));
        CAPTURE(c.axis);
        CAPTURE(causal);
        CAPTURE(dtype);
        Generator gen(30);
        const Tensor qkv = core::mul(core::randn(c.shape, gen, dtype), 2.0);
        const core::AttentionResult r = core::attention(qkv, c.axis, c.heads, core::AttentionMask::causal_if(causal));
        const int64_t a = c.axis < 0 ? c.axis + qkv.dim() : c.axis;
        check_close(r.output, attention_reference(qkv, a, c.heads, core::AttentionMask::causal_if(causal)),
                    matmul_tolerance(dtype, c.shape[a]));
        // the saved weights are distributions, zero after the diagonal when causal
        const Tensor row_sums = core::sum(r.probs, {-1});
        check_close(row_sums, std::vector<double>(static_cast<size_t>(row_sums.numel()), 1.0),
                    matmul_tolerance(dtype, 1));
        if (causal) {
          const int64_t l = qkv.size(a);
          const Tensor after =
              core::mul(r.probs, core::gt(core::arange(l).unsqueeze(0), core::arange(l).unsqueeze(1)).to(dtype));
          CHECK(core::max(core::abs(after)).item() == 0);
        }
      }
    }
  }
}

TEST_CASE("attention of a non-contiguous qkv, and errors") {
  Generator gen(31);
  const auto all = core::AttentionMask::all(), causal = core::AttentionMask::causal();
  const Tensor qkv = core::randn({12, 4, 3}, gen, Dtype::float64).permute({2, 1, 0});  // [3, 4, 12], strided
  check_close(core::attention(qkv, 1, 2, causal).output, attention_reference(qkv, 1, 2, causal),
              matmul_tolerance(Dtype::float64, 4));
  check_error([&] { core::attention(qkv, 2, 2, all); }, {"[attention] axis 2 is the feature axis"});
  check_error([&] { core::attention(qkv, 1, 5, all); },
              {"[attention] qkv's last axis (12) must be 3 * heads * Dh for heads = 5"});
  check_error([&] { core::attention(core::zeros({3, 4, 12}, Dtype::int64), 1, 2, all); }, {"[attention]", "int64"});
  const core::AttentionResult r = core::attention(qkv, 1, 2, all);
  check_error(
      [&] {
        core::attention_backward(qkv, r.probs, core::zeros({3, 4, 5}, Dtype::float64), 1, 2, all);
      },
      {"[attention_backward] for qkv [3, 4, 12] expected grad_out [3, 4, 4]"});
}

namespace {
// A block pattern on a line of 7: queries in blocks of 3 (the last padded), each with a memory of
// 4 keys (some -1), each query seeing the keys whose (query + key) is not a multiple of 3, and
// itself. Not local attention's: a pattern of any shape.
core::BlockPattern odd_pattern() {
  core::BlockPattern b{.length = 7,
                       .block_queries = 3,
                       .block_keys = 4,
                       .queries = {0, 1, 2, 3, 4, 5, 6, -1, -1},
                       .keys = {0, 1, 2, 5, /**/ 2, 3, 4, -1, /**/ 6, 0, 3, 5},
                       .visible = {}};
  for (int64_t block = 0; block < 3; ++block) {
    for (int64_t p = 0; p < 3; ++p) {
      const int64_t query = b.queries[static_cast<size_t>(block * 3 + p)];
      for (int64_t m = 0; m < 4; ++m) {
        const int64_t key = b.keys[static_cast<size_t>(block * 4 + m)];
        b.visible.push_back(query >= 0 && key >= 0 && (key == query || (query + key) % 3 != 0));
      }
    }
  }
  // (query 3's memory 2, 3, 4 holds itself; query 6 sees 6, 0, 5 and not 3)
  return b;
}
}  // namespace

TEST_CASE("a mask's table is refused for a negative length or one too long to hold") {
  CHECK(core::AttentionMask::causal().table(3) == std::vector<uint8_t>{1, 0, 0, 1, 1, 0, 1, 1, 1});
  CHECK(core::AttentionMask::all().table(0).empty());
  for (const int64_t length : {int64_t{-1}, core::AttentionMask::kMaxTableLength + 1, int64_t{1} << 40}) {
    CAPTURE(length);
    check_error([&] { (void)core::AttentionMask::causal().table(length); },
                {"[attention] a mask's table is for lines of 0 to 65536 positions, got ", std::to_string(length)});
  }
}

TEST_CASE("attention with a block pattern against loops over the whole line, and the patterns it refuses") {
  Generator gen(32);
  const core::AttentionMask mask = core::AttentionMask::blocks(odd_pattern(), "test");
  for (const Dtype dtype : {Dtype::float32, Dtype::float64}) {
    CAPTURE(dtype);
    const Tensor qkv = core::mul(core::randn({2, 7, 3, 12}, gen, dtype), 2.0);  // along axis 1, 2 heads
    const core::AttentionResult r = core::attention(qkv, 1, 2, mask);
    CHECK(str(r.probs.shape()) == "[6, 2, 3, 3, 4]");  // [lines, heads, blocks, P, M]
    check_close(r.output, attention_reference(qkv, 1, 2, mask), matmul_tolerance(dtype, 7));
  }
  core::BlockPattern twice = odd_pattern();
  twice.queries[1] = 0;
  check_error([&] { core::AttentionMask::blocks(twice, "test"); }, {"[test] query 0 is in two blocks"});
  core::BlockPattern blind = odd_pattern();
  for (int64_t m = 0; m < 4; ++m) blind.visible[static_cast<size_t>(m)] = 0;
  check_error([&] { core::AttentionMask::blocks(blind, "test"); }, {"[test] query 0 sees no key"});
  core::BlockPattern outside = odd_pattern();
  outside.keys[3] = 7;
  check_error([&] { core::AttentionMask::blocks(outside, "test"); },
              {"[test] a block's key position 7 is outside the line of 7"});
  core::BlockPattern short_visible = odd_pattern();
  short_visible.visible.pop_back();
  check_error([&] { core::AttentionMask::blocks(short_visible, "test"); },
              {"[test] a block pattern needs", "35 entries"});
  check_error(
      [&] {
        core::attention(core::zeros({2, 6, 12}), 1, 2, mask);
      },
      {"[attention] the mask's block pattern is for lines of 7, but qkv [2, 6, 12] has lines of 6 along axis 1"});
}

// softmax(scale * q K^T) V for every line of q [..., 1, Dh], keys_t [..., Dh, S], values [..., S, Dh], in double,
// over the keys not hidden.
std::vector<double> attention_step_reference(const Tensor& q, const Tensor& keys_t, const Tensor& values, double scale,
                                             const std::vector<uint8_t>& hidden) {
  const std::vector<double> qv = values_of(q), kv = values_of(keys_t), vv = values_of(values);
  const int64_t dh = q.size(-1), seen = keys_t.size(-1), lines = q.numel() / dh;
  std::vector<double> out(static_cast<size_t>(q.numel()));
  for (int64_t line = 0; line < lines; ++line) {
    std::vector<double> w(static_cast<size_t>(seen));
    double max = -kInf, total = 0;
    for (int64_t s = 0; s < seen; ++s) {
      for (int64_t d = 0; d < dh; ++d) w[s] += qv[line * dh + d] * kv[(line * dh + d) * seen + s];
      w[s] = hidden.empty() || !hidden[static_cast<size_t>(s)] ? w[s] * scale : -kInf;
      max = std::max(max, w[s]);
    }
    for (double& x : w) total += (x = std::exp(x - max));
    for (int64_t d = 0; d < dh; ++d) {
      for (int64_t s = 0; s < seen; ++s) out[line * dh + d] += w[s] / total * vv[(line * seen + s) * dh + d];
    }
  }
  return out;
}

TEST_CASE("attention_step: one query against cached keys and values, against loops, and errors") {
  for (const Dtype dtype : {Dtype::float32, Dtype::float64}) {
    for (const int64_t seen : {1, 3, 17}) {
      CAPTURE(dtype);
      CAPTURE(seen);
      Generator gen(32);
      // as a sampler's caches hold them: views of the first `seen` of 20 positions
      const Tensor q = core::randn({2, 3, 1, 5}, gen, dtype);
      const Tensor keys_t = core::mul(core::randn({2, 3, 5, 20}, gen, dtype), 2.0).narrow(3, 0, seen);
      const Tensor values = core::randn({2, 3, 20, 5}, gen, dtype).narrow(2, 0, seen);
      const Tensor out = core::attention_step(q, keys_t, values, 0.7);
      CHECK(str(out.shape()) == "[2, 3, 1, 5]");
      check_close(out, attention_step_reference(q, keys_t, values, 0.7, {}), matmul_tolerance(dtype, seen));
      // keys given with a strided last axis are copied first: the same numbers
      const Tensor strided_keys = keys_t.transpose(-1, -2).contiguous().transpose(-1, -2);
      check_close(core::attention_step(q, strided_keys, values, 0.7), values_of(out), matmul_tolerance(dtype, 1));
      // hidden keys: every other one (key 0 is seen)
      std::vector<uint8_t> hidden(static_cast<size_t>(seen));
      for (int64_t s = 1; s < seen; s += 2) hidden[static_cast<size_t>(s)] = 1;
      check_close(core::attention_step(q, keys_t, values, 0.7, hidden),
                  attention_step_reference(q, keys_t, values, 0.7, hidden), matmul_tolerance(dtype, seen));
    }
  }
  Generator gen(33);
  const Tensor q = core::randn({2, 1, 4}, gen), keys_t = core::randn({2, 4, 3}, gen),
               values = core::randn({2, 3, 4}, gen);
  check_error([&] { core::attention_step(q, keys_t.narrow(2, 0, 0), values.narrow(1, 0, 0), 1); },
              {"[attention_step] needs q [..., 1, Dh], keys_t [..., Dh, S] and values [..., S, Dh]", "S >= 1"});
  check_error([&] { core::attention_step(q, keys_t, values.narrow(1, 0, 2), 1); }, {"[attention_step]", "[2, 2, 4]"});
  check_error(
      [&] {
        core::attention_step(core::randn({2, 2, 4}, gen), keys_t, values, 1);
      },
      {"[attention_step]", "[2, 2, 4]"});
  check_error([&] { core::attention_step(q, keys_t.to(Dtype::float64), values, 1); }, {"[attention_step]", "float64"});
  check_error(
      [&] {
        core::attention_step(q, keys_t, values, 1, {0, 1});
      },
      {"[attention_step] hidden has 2 flags for 3 keys"});
  check_error(
      [&] {
        core::attention_step(q, keys_t, values, 1, {1, 1, 1});
      },
      {"[attention_step] hidden hides every one of the 3 keys"});
}

TEST_CASE("attention_step_cached: writes the step's key and value, then attends as attention_step, and errors") {
  for (const Dtype dtype : {Dtype::float32, Dtype::float64}) {
    for (const auto& [t, first] : {std::pair<int64_t, int64_t>{0, 0}, {4, 0}, {6, 3}}) {
      CAPTURE(dtype);
      CAPTURE(t);
      CAPTURE(first);
      Generator gen(34);
      const int64_t b = 2, h = 3, dh = 4, length = 8;
      const Tensor qkv_t = core::randn({b, 3 * h * dh}, gen, dtype);
      const Tensor keys_t = core::randn({b, h, dh, length}, gen, dtype),
                   values = core::randn({b, h, length, dh}, gen, dtype);
      const Tensor keys_before = keys_t.clone(), values_before = values.clone();
      std::vector<uint8_t> hidden;
      if (first > 0) hidden = std::vector<uint8_t>{1, 0, 1, 0};  // t + 1 - first flags
      const Tensor out = core::attention_step_cached(qkv_t, keys_t, values, t, first, 0.6, hidden);
      CHECK(str(out.shape()) == "[2, 12]");
      // position t of the caches now holds the step's key and value; every other position is as it was
      const Tensor parts = qkv_t.reshape({b, 3, h, dh});
      check_equal(keys_t.select(3, t), values_of(parts.select(1, 1)));
      check_equal(values.select(2, t), values_of(parts.select(1, 2)));
      for (int64_t s = 0; s < length; ++s) {
        if (s == t) continue;
        check_equal(keys_t.select(3, s), values_of(keys_before.select(3, s)));
        check_equal(values.select(2, s), values_of(values_before.select(2, s)));
      }
      // the attention of the step's query over positions first..t, heads side by side
      const Tensor query = parts.select(1, 0).unsqueeze(2);
      const int64_t seen = t + 1 - first;
      check_close(
          out.reshape({b, h, 1, dh}),
          attention_step_reference(query, keys_t.narrow(3, first, seen), values.narrow(2, first, seen), 0.6, hidden),
          matmul_tolerance(dtype, seen));
    }
  }
  Generator gen(35);
  const Tensor qkv_t = core::randn({2, 24}, gen), keys_t = core::randn({2, 2, 4, 5}, gen),
               values = core::randn({2, 2, 5, 4}, gen);
  check_error([&] { core::attention_step_cached(qkv_t, keys_t, values, 5, 0, 1); },
              {"[attention_step_cached] needs 0 <= first <= t < L = 5; got first 0 and t 5"});
  check_error([&] { core::attention_step_cached(qkv_t, keys_t, values, 2, 3, 1); }, {"got first 3 and t 2"});
  check_error(
      [&] { core::attention_step_cached(qkv_t.narrow(1, 0, 12), keys_t, values, 0, 0, 1); },
      {"[attention_step_cached] needs qkv_t [B, 3 H Dh], keys_t [B, H, Dh, L] and values [B, H, L, Dh]", "[2, 12]"});
  check_error([&] { core::attention_step_cached(qkv_t, keys_t, values.narrow(2, 0, 4), 0, 0, 1); },
              {"[attention_step_cached]", "[2, 2, 4, 4]"});
  check_error([&] { core::attention_step_cached(qkv_t, keys_t.select(0, 0), values, 0, 0, 1); },
              {"[attention_step_cached]", "[2, 4, 5]"});
  check_error([&] { core::attention_step_cached(qkv_t.to(Dtype::float64), keys_t, values, 0, 0, 1); },
              {"[attention_step_cached]", "float64"});
  check_error(
      [&] {
        core::attention_step_cached(qkv_t, keys_t, values, 2, 0, 1, {1, 1, 1});
      },
      {"[attention_step] hidden hides every one of the 3 keys"});
}

namespace {
// Every element of a and b the same number (float32 results of one shape).
bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         core::sum(core::eq(a, b).to(Dtype::float64)).item() == static_cast<double>(a.numel());
}
}  // namespace

// A bfloat16 qkv (a product's output rounded as it is written, core/launch.h) is widened as it is
// read: the bits of attention on the same values in float32, forward and backward, whether its
// lines are copied (widened line by line as they are) or not (widened whole first), and with a
// block pattern.
TEST_CASE("attention of a bfloat16 qkv gives the bits of the same values in float32") {
  struct Case {
    const char* what;
    Shape shape;
    int64_t axis, heads;
    core::AttentionMask mask;
  };
  const std::vector<Case> cases = {
      {"lines copied, along axis 1, causal", {2, 5, 7, 24}, 1, 2, core::AttentionMask::causal()},
      {"lines copied, along axis 2", {2, 5, 7, 24}, 2, 2, core::AttentionMask::all()},
      {"a line too long to copy (300^2 x 8 > 64^3)", {1, 300, 24}, 1, 1, core::AttentionMask::causal()},
      {"a block pattern", {2, 7, 3, 12}, 1, 2, core::AttentionMask::blocks(odd_pattern(), "test")}};
  Generator gen(33);
  for (const Case& c : cases) {
    CAPTURE(c.what);
    const Tensor qkv16 = core::mul(core::randn(c.shape, gen), 2.0).to(Dtype::bfloat16),
                 qkv32 = qkv16.to(Dtype::float32);
    const core::AttentionResult r16 = core::attention(qkv16, c.axis, c.heads, c.mask),
                                r32 = core::attention(qkv32, c.axis, c.heads, c.mask);
    CHECK(same_bits(r16.output, r32.output));
    CHECK(same_bits(r16.probs, r32.probs));
    const Tensor grad = core::randn(r32.output.shape(), gen);
    const Tensor grad_qkv = core::attention_backward(qkv32, r32.probs, grad, c.axis, c.heads, c.mask);
    CHECK(same_bits(core::attention_backward(qkv16, r16.probs, grad, c.axis, c.heads, c.mask), grad_qkv));
    // the gradient rounded as it is written, and summed over the rows: the sums in an order of their own
    const core::RoundedWithSums rounded =
        core::attention_backward_to_bfloat16(qkv16, r16.probs, grad, c.axis, c.heads, c.mask);
    CHECK(same_bits(rounded.rounded.to(Dtype::float32), grad_qkv.to(Dtype::bfloat16).to(Dtype::float32)));
    const Tensor rows = grad_qkv.reshape({-1, grad_qkv.size(-1)});
    check_close(rounded.sums, values_of(core::sum(rows.to(Dtype::float64), {0})), 1e-5,
                1e-6 * static_cast<double>(rows.size(0)), "sums over the rows");
  }
  const Tensor qkv16 = core::randn({2, 5, 24}, gen).to(Dtype::bfloat16);
  const core::AttentionResult r = core::attention(qkv16, 1, 2, core::AttentionMask::all());
  check_error(
      [&] { core::attention_backward(qkv16, r.probs, r.output.to(Dtype::float64), 1, 2, core::AttentionMask::all()); },
      {"[attention_backward] grad_out must be float32, got float64"});
  check_error(
      [&] {
        core::attention_backward_to_bfloat16(qkv16.to(Dtype::float32), r.probs, r.output, 1, 2,
                                             core::AttentionMask::all());
      },
      {"[attention_backward_to_bfloat16] qkv must be bfloat16, got float32"});
}
