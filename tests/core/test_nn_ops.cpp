// softmax / log_softmax, layer_norm and matmul against loops in double, in every layout.
#include <cmath>
#include <limits>
#include <vector>

#include "tests/core/reference.h"

namespace core = axiom::core;
using namespace axiom::test;

namespace {

const double kInf = std::numeric_limits<double>::infinity();

// softmax or log_softmax of x along `axis`, one row at a time.
std::vector<double> softmax_reference(const Tensor& x, int64_t axis, bool log) {
  const Shape& shape = x.shape();
  const int64_t a = axis < 0 ? axis + x.dim() : axis;
  const std::vector<double> v = values_of(x);
  std::vector<double> out(v.size());
  for (int64_t flat = 0; flat < x.numel(); ++flat) {
    auto index = unravel(flat, shape);
    if (index[a] != 0) continue;  // visit each row once, from its first element
    std::vector<int64_t> row;
    for (int64_t i = 0; i < shape[a]; ++i) {
      index[a] = i;
      row.push_back(ravel(index, shape));
    }
    double max = -kInf, total = 0;
    for (int64_t p : row) max = std::max(max, v[p]);
    for (int64_t p : row) total += std::exp(v[p] - max);
    for (int64_t p : row) out[p] = log ? v[p] - max - std::log(total) : std::exp(v[p] - max) / total;
  }
  return out;
}

struct LayerNormExpected {
  std::vector<double> output, mean, rstd;
};

LayerNormExpected layer_norm_reference(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
  const int64_t d = x.size(-1), rows = x.numel() / d;
  const std::vector<double> v = values_of(x);
  const std::vector<double> w = weight.defined() ? values_of(weight) : std::vector<double>(d, 1.0);
  const std::vector<double> b = bias.defined() ? values_of(bias) : std::vector<double>(d, 0.0);
  LayerNormExpected e;
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < d; ++i) mean += v[r * d + i] / d;
    for (int64_t i = 0; i < d; ++i) var += (v[r * d + i] - mean) * (v[r * d + i] - mean) / d;
    const double rstd = 1 / std::sqrt(var + eps);
    for (int64_t i = 0; i < d; ++i) e.output.push_back((v[r * d + i] - mean) * rstd * w[i] + b[i]);
    e.mean.push_back(mean);
    e.rstd.push_back(rstd);
  }
  return e;
}

// a @ b with NumPy's rules (1-D operands, broadcast batch axes), as a triple loop in double.
std::vector<double> matmul_reference(const Tensor& a, const Tensor& b, Shape* out_shape) {
  Shape as = a.shape(), bs = b.shape();
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  const int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  REQUIRE(bs[bs.size() - 2] == k);
  const Shape a_batch(as.begin(), as.end() - 2), b_batch(bs.begin(), bs.end() - 2);
  const Shape batch = broadcast_reference(a_batch, b_batch);
  const std::vector<double> va = values_of(a), vb = values_of(b);
  std::vector<double> out;
  for (int64_t bi = 0; bi < core::numel(batch); ++bi) {
    const auto index = unravel(bi, batch);
    const int64_t pa = broadcast_source(index, a_batch) * m * k, pb = broadcast_source(index, b_batch) * k * n;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double total = 0;
        for (int64_t p = 0; p < k; ++p) total += va[pa + i * k + p] * vb[pb + p * n + j];
        out.push_back(total);
      }
    }
  }
  *out_shape = batch;
  if (a.dim() > 1) out_shape->push_back(m);
  if (b.dim() > 1) out_shape->push_back(n);
  return out;
}

Tolerance matmul_tolerance(Dtype dtype, int64_t k) {
  const double scale = static_cast<double>(std::max<int64_t>(k, 1));
  return dtype == Dtype::float32 ? Tolerance{1e-4, 1e-5 * scale} : Tolerance{1e-12, 1e-13 * scale};
}

void check_matmul(const Tensor& a, const Tensor& b, std::source_location where = std::source_location::current()) {
  CAPTURE(str(a.shape()));
  CAPTURE(str(a.strides()));
  CAPTURE(str(b.shape()));
  CAPTURE(str(b.strides()));
  Shape shape;
  const std::vector<double> expected = matmul_reference(a, b, &shape);
  const Tensor out = core::matmul(a, b);
  if (str(out.shape()) != str(shape)) {
    ADD_FAIL_CHECK_AT(where.file_name(), static_cast<int>(where.line()),
                      ("shape " + str(out.shape()) + ", expected " + str(shape)));
  }
  CHECK(out.dtype() == a.dtype());
  check_close(out, expected, matmul_tolerance(a.dtype(), a.size(-1)), "matmul", where);
}

// Self-attention along `axis` of packed qkv [..., 3D] (queries, keys, values side by side, each
// heads * Dh wide) as plain loops in double, over the keys the mask's table lets each query see: out [..., D].
std::vector<double> attention_reference(const Tensor& qkv, int64_t axis, int64_t heads, const core::AttentionMask& mask) {
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

// --- attention -----------------------------------------------------------------------------------------

TEST_CASE("attention along every axis, causal or not, against loops") {
  struct Case {
    Shape shape;  // of qkv
    int64_t axis, heads;
  };
  const std::vector<Case> cases = {{{2, 3, 4, 12}, 1, 2}, {{2, 3, 4, 12}, 2, 2}, {{2, 3, 4, 12}, -2, 1},
                                   {{3, 5, 6}, 1, 2},      {{4, 2, 6}, 0, 1},      {{2, 1, 3, 24}, 1, 4},
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
        check_close(r.output, attention_reference(qkv, a, c.heads, core::AttentionMask::causal_if(causal)), matmul_tolerance(dtype, c.shape[a]));
        // the saved weights are distributions, zero after the diagonal when causal
        const Tensor row_sums = core::sum(r.probs, {-1});
        check_close(row_sums, std::vector<double>(static_cast<size_t>(row_sums.numel()), 1.0), matmul_tolerance(dtype, 1));
        if (causal) {
          const int64_t l = qkv.size(a);
          const Tensor after = core::mul(r.probs, core::gt(core::arange(l).unsqueeze(0), core::arange(l).unsqueeze(1)).to(dtype));
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
  check_close(core::attention(qkv, 1, 2, causal).output, attention_reference(qkv, 1, 2, causal), matmul_tolerance(Dtype::float64, 4));
  check_error([&] { core::attention(qkv, 2, 2, all); }, {"[attention] axis 2 is the feature axis"});
  check_error([&] { core::attention(qkv, 1, 5, all); }, {"[attention] qkv's last axis (12) must be 3 * heads * Dh for heads = 5"});
  check_error([&] { core::attention(core::zeros({3, 4, 12}, Dtype::int64), 1, 2, all); }, {"[attention]", "int64"});
  const core::AttentionResult r = core::attention(qkv, 1, 2, all);
  check_error([&] { core::attention_backward(qkv, r.probs, core::zeros({3, 4, 5}, Dtype::float64), 1, 2, all); },
              {"[attention_backward] for qkv [3, 4, 12] expected grad_out [3, 4, 4]"});
}

namespace {
// A block pattern on a line of 7: queries in blocks of 3 (the last padded), each with a memory of
// 4 keys (some -1), each query seeing the keys whose (query + key) is not a multiple of 3, and
// itself. Not local attention's: a pattern of any shape.
core::BlockPattern odd_pattern() {
  core::BlockPattern b{.length = 7, .block_queries = 3, .block_keys = 4,
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
  check_error([&] { core::AttentionMask::blocks(outside, "test"); }, {"[test] a block's key position 7 is outside the line of 7"});
  core::BlockPattern short_visible = odd_pattern();
  short_visible.visible.pop_back();
  check_error([&] { core::AttentionMask::blocks(short_visible, "test"); }, {"[test] a block pattern needs", "35 entries"});
  check_error([&] { core::attention(core::zeros({2, 6, 12}), 1, 2, mask); },
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
      check_close(core::attention_step(q, keys_t, values, 0.7, hidden), attention_step_reference(q, keys_t, values, 0.7, hidden),
                  matmul_tolerance(dtype, seen));
    }
  }
  Generator gen(33);
  const Tensor q = core::randn({2, 1, 4}, gen), keys_t = core::randn({2, 4, 3}, gen), values = core::randn({2, 3, 4}, gen);
  check_error([&] { core::attention_step(q, keys_t.narrow(2, 0, 0), values.narrow(1, 0, 0), 1); },
              {"[attention_step] needs q [..., 1, Dh], keys_t [..., Dh, S] and values [..., S, Dh]", "S >= 1"});
  check_error([&] { core::attention_step(q, keys_t, values.narrow(1, 0, 2), 1); }, {"[attention_step]", "[2, 2, 4]"});
  check_error([&] { core::attention_step(core::randn({2, 2, 4}, gen), keys_t, values, 1); }, {"[attention_step]", "[2, 2, 4]"});
  check_error([&] { core::attention_step(q, keys_t.to(Dtype::float64), values, 1); }, {"[attention_step]", "float64"});
  check_error([&] { core::attention_step(q, keys_t, values, 1, {0, 1}); }, {"[attention_step] hidden has 2 flags for 3 keys"});
  check_error([&] { core::attention_step(q, keys_t, values, 1, {1, 1, 1}); }, {"[attention_step] hidden hides every one of the 3 keys"});
}

// --- softmax -------------------------------------------------------------------------------------------

TEST_CASE("softmax and log_softmax along every axis, in every layout") {
  Generator gen(31);
  for (Dtype dtype : {Dtype::float32, Dtype::float64}) {
    for (Layout layout : kAllLayouts) {
      const Tensor x = random_tensor({3, 4, 5}, dtype, gen, layout, -4, 4);
      for (int64_t axis = -3; axis < 3; ++axis) {
        for (bool log : {false, true}) {
          CAPTURE(dtype);
          CAPTURE(layout);
          CAPTURE(axis);
          CAPTURE(log);
          const Tensor y = log ? core::log_softmax(x, axis) : core::softmax(x, axis);
          CHECK(str(y.shape()) == "[3, 4, 5]");
          CHECK(y.dtype() == dtype);
          check_close(y, softmax_reference(x, axis, log), dtype == Dtype::float32 ? Tolerance{1e-5, 1e-6} : Tolerance{1e-13, 1e-14});
        }
      }
    }
  }
}

TEST_CASE("softmax with -inf entries gives them probability 0") {
  for (Dtype dtype : {Dtype::float32, Dtype::float64}) {
    CAPTURE(dtype);
    Generator gen(32);
    const Tensor x = random_tensor({4, 6}, dtype, gen);
    x.set({0, 0}, -kInf);
    x.set({0, 5}, -kInf);
    x.set({2, 1}, -kInf);
    for (int i = 0; i < 5; ++i) x.set({3, i}, -kInf);  // one finite entry left: probability 1
    for (int64_t axis : {0, 1}) {
      CAPTURE(axis);
      const Tensor p = core::softmax(x, axis), lp = core::log_softmax(x, axis);
      check_close(p, softmax_reference(x, axis, false), 1e-5, 1e-6);
      check_close(lp, softmax_reference(x, axis, true), 1e-5, 1e-6);
    }
    CHECK(core::softmax(x, 1).at({0, 0}) == 0);
    CHECK(core::softmax(x, 1).at({3, 5}) == 1);
    CHECK(core::log_softmax(x, 1).at({2, 1}) == -kInf);
  }
}

TEST_CASE("softmax is stable for large inputs") {
  for (Dtype dtype : {Dtype::float32, Dtype::float64}) {
    CAPTURE(dtype);
    Generator gen(33);
    const Tensor x = core::add(random_tensor({5, 7}, dtype, gen, Layout::contiguous, -1, 1), 1000);
    const Tensor p = core::softmax(x, -1), lp = core::log_softmax(x, -1);
    const auto pv = values_of(p), lpv = values_of(lp);
    CHECK(std::all_of(pv.begin(), pv.end(), [](double v) { return std::isfinite(v); }));
    CHECK(std::all_of(lpv.begin(), lpv.end(), [](double v) { return std::isfinite(v); }));
    check_close(p, softmax_reference(x, -1, false), 1e-5, 1e-6);
    // log_softmax subtracts the max before anything else, so the large offset costs no accuracy.
    check_close(lp, softmax_reference(x, -1, true), 1e-5, 1e-6);
    check_close(core::sum(p, {1}), std::vector<double>(5, 1.0), 1e-6, 0);
    // Negative large inputs: every exp would underflow without the max subtracted.
    const Tensor y = core::sub(x, 2000);
    check_close(core::softmax(y, 0), softmax_reference(y, 0, false), 1e-5, 1e-6);
  }
}

TEST_CASE("softmax of large rows split across threads, and errors") {
  Generator gen(34);
  const Tensor x = random_tensor({300, 50}, Dtype::float64, gen, Layout::permuted);
  check_close(core::softmax(x, 0), softmax_reference(x, 0, false), 1e-12, 1e-15);
  check_close(core::log_softmax(x, 1), softmax_reference(x, 1, true), 1e-12, 1e-13);
  check_error([] { (void)core::softmax(core::zeros({2, 3}), 2); }, {"[softmax] axis 2 is out of range for a tensor of rank 2"});
  check_error([] { (void)core::log_softmax(core::zeros({2}, Dtype::int64)); },
              {"[log_softmax] dtype int64 is not supported (float32 or float64 only)"});
}

// --- layer norm ----------------------------------------------------------------------------------------

TEST_CASE("layer_norm with and without weight and bias, in every layout") {
  Generator gen(35);
  for (Dtype dtype : {Dtype::float32, Dtype::float64}) {
    for (Layout layout : kAllLayouts) {
      for (const Shape& shape : std::vector<Shape>{{3, 4, 5}, {6, 8}, {7}, {2, 1, 16}}) {
        for (int affine = 0; affine < 4; ++affine) {  // bit 0: weight, bit 1: bias
          CAPTURE(dtype);
          CAPTURE(layout);
          CAPTURE(str(shape));
          CAPTURE(affine);
          const int64_t d = shape.back();
          const Tensor x = random_tensor(shape, dtype, gen, layout, -3, 5);
          const Tensor w = affine & 1 ? random_tensor({d}, dtype, gen, Layout::contiguous, 0.5, 2) : Tensor();
          // The bias as a non-contiguous view: layer_norm must make it contiguous itself.
          const Tensor b = affine & 2 ? random_tensor({d}, dtype, gen, Layout::sliced) : Tensor();
          const double eps = 1e-5;
          const auto result = core::layer_norm(x, w, b, eps);
          const LayerNormExpected e = layer_norm_reference(x, w, b, eps);
          const Shape rows(shape.begin(), shape.end() - 1);
          CHECK(str(result.output.shape()) == str(shape));
          CHECK(str(result.mean.shape()) == str(rows));
          CHECK(str(result.rstd.shape()) == str(rows));
          const Tolerance tol = dtype == Dtype::float32 ? Tolerance{1e-5, 1e-5} : Tolerance{1e-12, 1e-12};
          check_close(result.output, e.output, tol, "output");
          check_close(result.mean, e.mean, tol, "mean");
          check_close(result.rstd, e.rstd, tol, "rstd");
        }
      }
    }
  }
}

TEST_CASE("layer_norm: eps, constant rows and many rows") {
  // A constant row has variance 0: rstd is 1 / sqrt(eps) and the output 0 (then the bias).
  const Tensor x = core::full({2, 4}, 3.0, Dtype::float64);
  const auto r = core::layer_norm(x, {}, core::full({4}, 0.5, Dtype::float64), 0.25);
  check_close(r.rstd, {2, 2}, 1e-15, 0);
  check_close(r.output, std::vector<double>(8, 0.5), 1e-15, 0);
  // Enough rows for several threads.
  Generator gen(36);
  const Tensor big = random_tensor({2000, 24}, Dtype::float32, gen, Layout::permuted);
  const auto result = core::layer_norm(big);
  const auto e = layer_norm_reference(big, {}, {}, 1e-5);
  check_close(result.output, e.output, 1e-5, 1e-5);
  check_close(result.rstd, e.rstd, 1e-5, 1e-5);
}

TEST_CASE("layer_norm errors") {
  const Tensor x = core::zeros({2, 3});
  check_error([&] { (void)core::layer_norm(x, core::ones({4})); },
              {"[layer_norm] weight has shape [4]; expected [3] for input [2, 3]"});
  check_error([&] { (void)core::layer_norm(x, {}, core::ones({1, 3})); },
              {"[layer_norm] bias has shape [1, 3]; expected [3] for input [2, 3]"});
  check_error([&] { (void)core::layer_norm(x, core::ones({3}, Dtype::float64)); },
              {"[layer_norm] dtypes float32 and float64 differ"});
  check_error([&] { (void)core::layer_norm(core::scalar(1)); }, {"[layer_norm] needs at least one axis, got a scalar"});
  check_error([&] { (void)core::layer_norm(x, {}, {}, -1); }, {"[layer_norm] eps must be 0 or more, got -1"});
  check_error([&] { (void)core::layer_norm(core::zeros({2, 3}, Dtype::int64)); }, {"[layer_norm] dtype int64 is not supported"});
}

// --- matmul --------------------------------------------------------------------------------------------

TEST_CASE("cross_entropy and its backward against loops, with label smoothing, and errors") {
  Generator gen(41);
  for (const Dtype dtype : {Dtype::float64, Dtype::float32}) {
    CAPTURE(dtype);
    const Tensor x = core::mul(core::randn({5, 3}, gen, dtype), 3).transpose(0, 1);  // [3, 5], a transposed view
    const Tensor targets = core::from_vector<int64_t>({4, 0, 2}, {3});
    const Tensor g = core::randn({3}, gen, dtype);
    const std::vector<double> xs = values_of(x), gs = values_of(g);
    for (const double s : {0.0, 0.2}) {
      CAPTURE(s);
      std::vector<double> losses, lses, grads;
      for (int r = 0; r < 3; ++r) {
        double total = 0;
        for (int c = 0; c < 5; ++c) total += std::exp(xs[r * 5 + c]);
        const double lse = std::log(total);
        double loss = 0;
        for (int c = 0; c < 5; ++c) {
          const double q = (c == targets.at({r}) ? 1 - s : 0) + s / 5;
          loss -= q * (xs[r * 5 + c] - lse);
          grads.push_back((std::exp(xs[r * 5 + c] - lse) - q) * gs[r]);
        }
        losses.push_back(loss), lses.push_back(lse);
      }
      const auto ce = core::cross_entropy(x, targets, s);
      CHECK(ce.losses.shape() == Shape{3});
      check_close(ce.losses, losses, tolerance(dtype).rtol * 10, tolerance(dtype).atol * 10, "losses");
      check_close(ce.lse, lses, tolerance(dtype).rtol * 10, tolerance(dtype).atol * 10, "lse");
      check_close(core::cross_entropy_backward(x, targets, ce.lse, g, s), grads, tolerance(dtype).rtol * 10, tolerance(dtype).atol * 10,
                  "gradient");
    }
  }
  const Tensor x = core::zeros({2, 4}), t = core::from_vector<int64_t>({1, 3}, {2});
  check_error([&] { (void)core::cross_entropy(x, core::from_vector<int64_t>({1, 4}, {2})); },
              {"[cross_entropy] target 4 (element 1 of the targets) is not a class in [0, 4)"});
  check_error([&] { (void)core::cross_entropy(x, t.narrow(0, 0, 1)); }, {"[cross_entropy] logits [2, 4] need targets of shape [2]"});
  check_error([&] { (void)core::cross_entropy(x, t, 1.5); }, {"label_smoothing must be in [0, 1], got 1.5"});
  check_error([&] { (void)core::cross_entropy(x, t.to(Dtype::float32)); }, {"[cross_entropy] ", "int64"});
  check_error([&] { (void)core::cross_entropy_backward(x, t, core::zeros({3}), core::zeros({2})); },
              {"[cross_entropy_backward] lse has shape [3], the targets [2]"});
}

TEST_CASE("adam_update errors name the operand and the value") {
  const Tensor p = core::zeros({3}), g = core::zeros({3});
  check_error([&] { core::adam_update(p, g, core::zeros({4}), core::zeros({3}), {}); }, {"[adam_update] exp_avg has shape [4], param [3]"});
  check_error([&] { core::adam_update(p, g, core::zeros({3}, Dtype::float64), core::zeros({3}), {}); }, {"[adam_update] ", "float64"});
  check_error([&] { core::adam_update(core::zeros({3, 2}).transpose(0, 1), core::zeros({2, 3}), core::zeros({2, 3}), core::zeros({2, 3}), {}); },
              {"[adam_update] param must be contiguous (it is updated in place)"});
  check_error([&] { core::adam_update(p, g, core::zeros({3}), core::zeros({3}), {.beta1 = 1}); }, {"betas must be in [0, 1), got 1 and 0.999"});
  check_error([&] { core::adam_update(p, g, core::zeros({3}), core::zeros({3}), {.eps = 0}); }, {"eps must be > 0, got 0"});
  check_error([&] { core::adam_update(p, g, core::zeros({3}), core::zeros({3}), {.step = 0}); }, {"step must be 1 or more, got 0"});
  check_error([&] { core::adam_update(core::zeros({3}, Dtype::int64), core::zeros({3}, Dtype::int64), core::zeros({3}, Dtype::int64),
                                      core::zeros({3}, Dtype::int64), {}); }, {"[adam_update] "});
  CHECK(p.to_vector<float>() == std::vector<float>{0, 0, 0});  // nothing was written
}

TEST_CASE("matmul: shapes") {
  Generator gen(37);
  for (Dtype dtype : {Dtype::float32, Dtype::float64}) {
    CAPTURE(dtype);
    auto r = [&](const Shape& shape) { return random_tensor(shape, dtype, gen); };
    SUBCASE("2-D") { check_matmul(r({3, 4}), r({4, 5})); }
    SUBCASE("batched") { check_matmul(r({2, 3, 4}), r({2, 4, 5})); }
    SUBCASE("broadcast batch axes") {
      check_matmul(r({2, 1, 3, 4}), r({5, 4, 6}));
      CHECK(str(core::matmul(r({2, 1, 3, 4}), r({5, 4, 6})).shape()) == "[2, 5, 3, 6]");
      check_matmul(r({1, 3, 4}), r({3, 4, 2}));
    }
    SUBCASE("1-D operands") {
      check_matmul(r({4}), r({4, 5}));
      check_matmul(r({3, 4}), r({4}));
      check_matmul(r({4}), r({4}));
      check_matmul(r({2, 3, 4}), r({4}));
      check_matmul(r({4}), r({2, 4, 5}));
      CHECK(core::matmul(r({4}), r({4})).dim() == 0);
    }
    SUBCASE("vectors as matrices: M = 1, N = 1, K = 1") {
      check_matmul(r({1, 4}), r({4, 5}));
      check_matmul(r({3, 4}), r({4, 1}));
      check_matmul(r({3, 1}), r({1, 5}));
      check_matmul(r({2, 1, 4}), r({2, 4, 1}));
    }
    SUBCASE("a single large product, threaded by BLAS") { check_matmul(r({96, 80}), r({80, 72})); }
  }
}

TEST_CASE("matmul: non-contiguous operands") {
  Generator gen(38);
  for (Dtype dtype : {Dtype::float32, Dtype::float64}) {
    CAPTURE(dtype);
    auto r = [&](const Shape& shape) { return random_tensor(shape, dtype, gen); };
    SUBCASE("transposed operands") {
      const Tensor at = r({2, 4, 3}).transpose(-1, -2), bt = r({2, 5, 4}).transpose(-1, -2);
      check_matmul(at, r({2, 4, 5}));
      check_matmul(r({2, 3, 4}), bt);
      check_matmul(at, bt);
      check_matmul(r({4, 1}).transpose(0, 1), r({5, 4}).transpose(0, 1));  // M = 1 transposed
    }
    SUBCASE("sliced operands with steps") {
      check_matmul(r({7, 4}).slice(0, 0, 7, 2), r({4, 5}));      // rows 2 apart
      check_matmul(r({4, 4}), r({4, 10}).slice(1, 1, 10, 2));    // columns 2 apart: copied
      check_matmul(r({3, 9}).slice(1, 0, 9, 3), r({3, 2}));      // K = 3 columns 3 apart
      check_matmul(r({5, 3, 4}).slice(0, 0, 5, 2), r({3, 4, 2})); // every other matrix of a batch
      check_matmul(r({2, 6, 8}).slice(1, 1, 6, 2).slice(2, 0, 8, 2), r({2, 4, 3}));
    }
    SUBCASE("expanded operands: one matrix shared by the batch") {
      check_matmul(r({1, 3, 4}).expand({5, 3, 4}), r({5, 4, 2}));
      check_matmul(r({5, 3, 4}), r({4, 2}).expand({5, 4, 2}));
      check_matmul(r({3, 1}).expand({3, 4}), r({4, 2}));             // stride-0 columns
      check_matmul(r({2, 1, 4}).expand({2, 3, 4}), r({2, 4, 5}));   // stride-0 rows
    }
    SUBCASE("every pair of layouts") {
      for (Layout la : kAllLayouts) {
        for (Layout lb : kAllLayouts) {
          CAPTURE(la);
          CAPTURE(lb);
          check_matmul(random_tensor({2, 3, 4}, dtype, gen, la), random_tensor({2, 4, 5}, dtype, gen, lb));
        }
      }
    }
  }
}

TEST_CASE("matmul: the batch-fold and many-small-matrices paths") {
  Generator gen(39);
  for (Dtype dtype : {Dtype::float32, Dtype::float64}) {
    CAPTURE(dtype);
    auto r = [&](const Shape& shape) { return random_tensor(shape, dtype, gen); };
    SUBCASE("x [B, T, D] @ w [D, E] with large matrices: one tall GEMM") {
      // T * D * E = 70 * 64 * 64 is above the small-GEMM limit of 64^3, so these take the fold.
      check_matmul(r({2, 70, 64}), r({64, 64}));
      check_matmul(r({2, 70, 80}).narrow(2, 8, 64), r({64, 64}));         // rows 80 apart, K = 64
      check_matmul(r({2, 70, 64}), r({64, 64}).transpose(0, 1));         // transposed weight
      check_matmul(r({1, 70, 64}).expand({2, 70, 64}), r({64, 64}));     // an expanded batch: per matrix
      check_matmul(r({4, 70, 64}).slice(0, 0, 4, 2), r({64, 64}));       // matrices not adjacent: per matrix
      check_matmul(r({70, 2, 64}).transpose(0, 1), r({64, 64}));         // batch axis out of order
      check_matmul(r({2, 64, 70}).transpose(1, 2), r({64, 64}));         // transposed x
    }
    SUBCASE("x [B, T, D] @ w [D, E] with small matrices") {
      check_matmul(r({3, 5, 4}), r({4, 6}));
      check_matmul(r({2, 3, 5, 4}), r({4, 6}));
      check_matmul(r({3, 5, 8}).narrow(2, 2, 4), r({4, 6}));
      check_matmul(r({3, 5, 8}).slice(2, 0, 8, 2), r({4, 6}));  // columns 2 apart: copied first
      check_matmul(r({3, 1, 4}), r({4, 6}));                    // M = 1
    }
    SUBCASE("many small matrices, spread over threads") {
      check_matmul(r({64, 32, 32}), r({32, 32}));
      check_matmul(r({64, 32, 32}), r({64, 32, 32}));
      check_matmul(r({64, 8, 16}).transpose(-1, -2), r({64, 8, 12}));
    }
  }
}

TEST_CASE("matmul: empty sizes") {
  for (Dtype dtype : {Dtype::float32, Dtype::float64}) {
    CAPTURE(dtype);
    SUBCASE("K = 0 gives zeros") {
      const Tensor out = core::matmul(core::ones({3, 0}, dtype), core::ones({0, 4}, dtype));
      CHECK(str(out.shape()) == "[3, 4]");
      check_equal(out, std::vector<double>(12, 0.0));
      check_equal(core::matmul(core::ones({2, 3, 0}, dtype), core::ones({0, 2}, dtype)), std::vector<double>(12, 0.0));
      check_equal(core::matmul(core::ones({0}, dtype), core::ones({0}, dtype)), {0});
    }
    SUBCASE("M = 0, N = 0, batch 0") {
      CHECK(str(core::matmul(core::ones({0, 4}, dtype), core::ones({4, 5}, dtype)).shape()) == "[0, 5]");
      CHECK(str(core::matmul(core::ones({3, 4}, dtype), core::ones({4, 0}, dtype)).shape()) == "[3, 0]");
      CHECK(str(core::matmul(core::ones({0, 3, 4}, dtype), core::ones({4, 5}, dtype)).shape()) == "[0, 3, 5]");
      CHECK(str(core::matmul(core::ones({0, 3, 4}, dtype), core::ones({0, 4, 5}, dtype)).shape()) == "[0, 3, 5]");
      CHECK(str(core::matmul(core::ones({2, 0, 4}, dtype), core::ones({2, 4, 5}, dtype)).shape()) == "[2, 0, 5]");
    }
  }
}

// linear = matmul + bias, with the bias put in first and the product accumulated onto it: every
// path of the matmul kernel (one GEMM, the batch fold, many small matrices) must add, not overwrite.
TEST_CASE("linear: x @ w + b on every matmul path, and errors") {
  Generator gen(40);
  for (Dtype dtype : {Dtype::float32, Dtype::float64}) {
    CAPTURE(dtype);
    auto r = [&](const Shape& shape) { return random_tensor(shape, dtype, gen); };
    for (const auto& [x, w] : std::vector<std::pair<Tensor, Tensor>>{{r({5, 4}), r({4, 6})},
                                                                     {r({2, 70, 64}), r({64, 64})},
                                                                     {r({3, 5, 4}), r({4, 6})},
                                                                     {r({70, 2, 64}).transpose(0, 1), r({64, 64})},
                                                                     {r({4}), r({4, 6})}}) {
      CAPTURE(str(x.shape()));
      const Tensor b = r({w.size(1)});
      Shape shape;
      std::vector<double> expected = matmul_reference(x, w, &shape);
      const std::vector<double> bias = values_of(b);
      for (size_t i = 0; i < expected.size(); ++i) expected[i] += bias[i % bias.size()];
      const Tensor out = core::linear(x, w, b);
      CHECK(str(out.shape()) == str(shape));
      check_close(out, expected, matmul_tolerance(dtype, x.size(-1)));
    }
    check_equal(core::linear(core::ones({2, 0}, dtype), core::ones({0, 3}, dtype), core::full({3}, 7, dtype)),
                std::vector<double>(6, 7.0));  // K = 0: the bias alone
  }
  check_error([] { (void)core::linear(core::zeros({2, 3}), core::zeros({3, 4}), core::zeros({3})); },
              {"[linear] needs weight [K, N] and bias [N], got [3, 4] and [3]"});
  check_error([] { (void)core::linear(core::zeros({2, 3}), core::zeros({4, 4}), core::zeros({4})); },
              {"[linear] shapes [2, 3] and [4, 4] cannot be multiplied (3 != 4)"});
}

TEST_CASE("matmul errors") {
  check_error([] { (void)core::matmul(core::zeros({2, 3}), core::zeros({4, 5})); },
              {"[matmul] shapes [2, 3] and [4, 5] cannot be multiplied (3 != 4)"});
  check_error([] { (void)core::matmul(core::zeros({3}), core::zeros({4})); },
              {"[matmul] shapes [3] and [4] cannot be multiplied (3 != 4)"});
  check_error([] { (void)core::matmul(core::zeros({2, 2, 3}), core::zeros({3, 3, 4})); },
              {"[matmul] batch shapes [2] and [3] of [2, 2, 3] and [3, 3, 4] cannot be broadcast"});
  check_error([] { (void)core::matmul(core::scalar(1), core::zeros({2})); },
              {"[matmul] needs operands with at least one axis, got shapes [] and [2]"});
  check_error([] { (void)core::matmul(core::zeros({2, 2}, Dtype::int64), core::zeros({2, 2}, Dtype::int64)); },
              {"[matmul] dtype int64 is not supported"});
  check_error([] { (void)core::matmul(core::zeros({2, 2}), core::zeros({2, 2}, Dtype::float64)); },
              {"[matmul] dtypes float32 and float64 differ"});
}

TEST_CASE("count_non_finite counts NaN and infinities over many tensors and refuses what it cannot count") {
  const Tensor a = core::from_vector<double>({1.0, NAN, INFINITY, -2.0});
  const Tensor b = core::from_vector<float>({-INFINITY, 0.0f});
  CHECK(core::count_non_finite({a, b, a.narrow(0, 0, 1)}).item() == 3);
  CHECK(core::count_non_finite({a.narrow(0, 0, 1)}).item() == 0);
  check_error([&] { core::count_non_finite({}); }, {"[count_non_finite] needs at least one tensor"});
  check_error([&] { core::count_non_finite({a, core::from_vector<int64_t>({1})}); }, {"[count_non_finite] ", "int64"});
}

TEST_CASE("adam_update_many checks every update before it changes any") {
  const Tensor p = core::zeros({3}), g = core::ones({3});
  const Tensor q = core::zeros({2});
  const core::AdamStep step{.lr = 0.1};
  check_error([&] { core::adam_update_many({{p, g, core::zeros({3}), core::zeros({3}), step}, {q, g, core::zeros({2}), core::zeros({2}), step}}); },
              {"[adam_update_many] grad has shape [3], param [2]"});
  CHECK(p.at({0}) == 0);  // the first update, which was fine, did not run either
  check_error([&] { core::adam_update_many({{p, g, core::zeros({3}), core::zeros({3}), {.step = 0}}}); },
              {"[adam_update_many] step must be 1 or more, got 0"});
}
