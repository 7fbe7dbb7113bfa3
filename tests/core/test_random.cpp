// Random numbers: Philox-4x32-10 against its published known answer, reproducibility (same seed,
// any thread count), and the distributions within loose statistical bounds.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/distributed/batch_share.h"
#include "tests/support/reference.h"

using namespace axiom::core;
using namespace axiom::test;
using axiom::default_generator;
using axiom::manual_seed;

namespace {

struct Moments {
  double mean, variance, min, max;
};

Moments moments(const std::vector<double>& v) {
  double total = 0, lo = INFINITY, hi = -INFINITY;
  for (double x : v) total += x, lo = std::min(lo, x), hi = std::max(hi, x);
  const double mean = total / static_cast<double>(v.size());
  double squares = 0;
  for (double x : v) squares += (x - mean) * (x - mean);
  return {mean, squares / static_cast<double>(v.size() - 1), lo, hi};
}

// Restores the thread count when the test ends, however it ends.
struct ThreadCountGuard {
  int saved = num_threads();
  ~ThreadCountGuard() { set_num_threads(saved); }
};

}  // namespace

TEST_CASE("philox4x32 matches the Random123 known-answer vector") {
  // Random123 kat_vectors: philox4x32_10, counter {0, 0, 0, 0}, key {0, 0}.
  const std::array<uint32_t, 4> expected = {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8};
  CHECK(philox4x32(0, 0) == expected);
  // Any change of seed or counter changes every word.
  const auto a = philox4x32(0, 1), b = philox4x32(1, 0), c = philox4x32(uint64_t{1} << 32, 0);
  for (int i = 0; i < 4; ++i) {
    CHECK(a[i] != expected[i]);
    CHECK(b[i] != expected[i]);
    CHECK(c[i] != b[i]);
  }
}

TEST_CASE("a uniform draw is made from the first two Philox words") {
  // Element i of a float64 draw is the top 53 bits of (word0 << 32 | word1) of counter i, over 2^53.
  Generator gen(0);
  const std::vector<double> u = rand({3}, gen, Dtype::float64).to_vector<double>();
  for (uint64_t i = 0; i < 3; ++i) {
    const auto words = philox4x32(0, i);
    const uint64_t bits = (uint64_t{words[0]} << 32) | words[1];
    CHECK(u[i] == static_cast<double>(bits >> 11) * 0x1p-53);
  }
}

TEST_CASE("float32 uniform draws are uniform_float32 of each counter: the CPU's kernel and the default host loop") {
  Generator gen(7);
  gen.reserve(5);  // from counter 5 on
  const std::vector<float> drawn = uniform({40000}, -2, 3, gen).to_vector<float>();
  const Tensor by_default = empty({40000});
  backend(axiom::Device::cpu()).Backend::uniform(by_default, 7, 5, -2, 3);  // what another device without a kernel runs
  const std::vector<float> host = by_default.to_vector<float>();
  for (uint64_t i = 0; i < drawn.size(); i += 997) CHECK(drawn[i] == uniform_float32(7, 5 + i, -2, 3));
  CHECK(drawn == host);
}

TEST_CASE("the same seed gives the same numbers, another seed others") {
  for (Dtype dtype : {Dtype::float32, Dtype::float64}) {
    CAPTURE(dtype);
    Generator a(42), b(42), c(43);
    const auto x = randn({200}, a, dtype).to_vector<double>();
    const auto y = randn({200}, b, dtype).to_vector<double>();
    const auto z = randn({200}, c, dtype).to_vector<double>();
    CHECK(x == y);
    int equal = 0;
    for (size_t i = 0; i < x.size(); ++i) equal += x[i] == z[i];
    CHECK(equal == 0);
  }
  Generator a(9), b(9);
  CHECK(randint({50}, 0, 1000, a).to_vector<int64_t>() == randint({50}, 0, 1000, b).to_vector<int64_t>());
  CHECK(bernoulli({50}, 0.5, a).to_vector<uint8_t>() == bernoulli({50}, 0.5, b).to_vector<uint8_t>());
}

TEST_CASE("the numbers do not depend on the thread count") {
  ThreadCountGuard guard;
  const Shape shape = {400, 500};  // 200000 elements: split into several chunks with two threads
  auto draw = [&](int threads) {
    set_num_threads(threads);
    Generator gen(2024);
    std::vector<double> all = uniform(shape, -1, 1, gen).to_vector<double>();
    for (double v : normal(shape, 0, 1, gen, Dtype::float64).to_vector<double>()) all.push_back(v);
    for (double v : randint(shape, 0, 7, gen).to_vector<double>()) all.push_back(v);
    return all;
  };
  const auto one = draw(1), two = draw(2), four = draw(4);
  CHECK(one.size() == 600000);
  CHECK(one == two);
  CHECK(one == four);
}

TEST_CASE("each draw advances the generator's offset") {
  Generator gen(1);
  const auto first = rand({10}, gen).to_vector<float>();
  CHECK(gen.offset() == 10);
  const auto second = rand({10}, gen).to_vector<float>();
  CHECK(gen.offset() == 20);
  CHECK(first != second);
  // Counter-based: two draws of 10 are one draw of 20.
  Generator fresh(1);
  const auto both = rand({20}, fresh).to_vector<float>();
  CHECK(std::vector<float>(both.begin(), both.begin() + 10) == first);
  CHECK(std::vector<float>(both.begin() + 10, both.end()) == second);
  // set_state rewinds.
  gen.set_state(1, 10);
  CHECK(rand({10}, gen).to_vector<float>() == second);
  CHECK(gen.reserve(5) == 20);
  CHECK(gen.offset() == 25);
  (void)rand({0}, gen);
  CHECK(gen.offset() == 25);
}

TEST_CASE("manual_seed resets the default generator") {
  manual_seed(77);
  const auto a = randn({8}).to_vector<float>();
  const auto b = randn({8}).to_vector<float>();
  manual_seed(77);
  CHECK(randn({8}).to_vector<float>() == a);
  CHECK(randn({8}).to_vector<float>() == b);
  CHECK(default_generator().seed() == 77);
  CHECK(default_generator().offset() == 16);
}

TEST_CASE("uniform: range, mean and variance") {
  for (Dtype dtype : {Dtype::float32, Dtype::float64}) {
    CAPTURE(dtype);
    Generator gen(3);
    const Tensor u = uniform({20000}, -3, 5, gen, dtype);
    CHECK(u.dtype() == dtype);
    const Moments m = moments(u.to_vector<double>());
    CHECK(m.min >= -3);
    CHECK(m.max < 5);
    CHECK(m.min < -2.99);  // the whole range is used
    CHECK(m.max > 4.99);
    CHECK(std::abs(m.mean - 1) < 0.1);               // sd of the mean: 0.016
    CHECK(std::abs(m.variance - 64.0 / 12) < 0.25);  // sd of the variance: 0.04
  }
  // float32 rounding never reaches `high`, even for a range whose top is just above a float.
  Generator gen(4);
  const auto v = uniform({100000}, 0, 1, gen).to_vector<float>();
  CHECK(*std::max_element(v.begin(), v.end()) < 1.0f);
}

TEST_CASE("normal: mean, standard deviation and shape of the distribution") {
  for (Dtype dtype : {Dtype::float32, Dtype::float64}) {
    CAPTURE(dtype);
    Generator gen(5);
    const std::vector<double> v = normal({20000}, 2, 3, gen, dtype).to_vector<double>();
    const Moments m = moments(v);
    CHECK(std::abs(m.mean - 2) < 0.1);                 // sd of the mean: 0.021
    CHECK(std::abs(std::sqrt(m.variance) - 3) < 0.1);  // sd of the sd: 0.015
    int within_one_sd = 0;
    for (double x : v) within_one_sd += std::abs(x - 2) < 3;
    CHECK(std::abs(within_one_sd / 20000.0 - 0.6827) < 0.02);
    CHECK(std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); }));
  }
  Generator gen(6);
  check_equal(normal({4}, 1.5, 0, gen), {1.5, 1.5, 1.5, 1.5});
}

TEST_CASE("bernoulli: only 0 and 1, at frequency p") {
  Generator gen(7);
  const auto v = bernoulli({20000}, 0.3, gen).to_vector<double>();
  CHECK(std::all_of(v.begin(), v.end(), [](double x) { return x == 0 || x == 1; }));
  double ones = 0;
  for (double x : v) ones += x;
  CHECK(std::abs(ones / 20000 - 0.3) < 0.02);  // sd: 0.0032
  check_equal(bernoulli({5}, 0, gen), {0, 0, 0, 0, 0});
  check_equal(bernoulli({5}, 1, gen), {1, 1, 1, 1, 1});
  CHECK(bernoulli({3}, 0.5, gen, Dtype::uint8).dtype() == Dtype::uint8);
}

TEST_CASE("randint: every value from low to high - 1, about equally often") {
  Generator gen(8);
  const Tensor r = randint({14000}, -3, 4, gen);
  CHECK(r.dtype() == Dtype::int64);
  std::array<int, 7> counts{};
  const auto values = r.to_vector<int64_t>();
  CHECK(*std::min_element(values.begin(), values.end()) == -3);
  CHECK(*std::max_element(values.begin(), values.end()) == 3);
  for (int64_t x : values) ++counts[static_cast<size_t>(x + 3)];
  for (int c : counts) CHECK(std::abs(c - 2000) < 200);  // sd: 41
  check_equal(randint({3}, 5, 6, gen), {5, 5, 5});
  const auto bytes = randint({2000}, 0, 256, gen, Dtype::uint8).to_vector<uint8_t>();
  CHECK(*std::max_element(bytes.begin(), bytes.end()) == 255);
  CHECK(*std::min_element(bytes.begin(), bytes.end()) == 0);
  const auto big = randint({1000}, 0, int64_t{1} << 40, gen).to_vector<int64_t>();
  CHECK(*std::max_element(big.begin(), big.end()) > (int64_t{1} << 39));
}

TEST_CASE("random factories reject bad arguments") {
  Generator gen(0);
  check_error([&] { (void)uniform({2}, 1, 1, gen); }, {"[uniform] needs low < high, got 1 and 1"});
  check_error([&] { (void)uniform({2}, 0, 1, gen, Dtype::int64); }, {"[uniform] dtype int64 is not supported"});
  check_error([&] { (void)normal({2}, 0, -1, gen); }, {"[normal] the standard deviation must be 0 or more, got -1"});
  check_error([&] { (void)normal({2}, 0, 1, gen, Dtype::uint8); }, {"[normal] dtype uint8 is not supported"});
  check_error([&] { (void)bernoulli({2}, 1.5, gen); }, {"[bernoulli] p must be in [0, 1], got 1.5"});
  check_error([&] { (void)randint({2}, 3, 3, gen); }, {"[randint] needs low < high", "got 3 and 3"});
  check_error([&] { (void)randint({2}, 0, 1000, gen, Dtype::uint8); },
              {"[randint] values from 0 to 999 do not fit dtype uint8 (0 to 255)"});
  check_error([&] { (void)randint({2}, -1, 10, gen, Dtype::uint8); }, {"[randint] values from -1 to 9 do not fit"});
  CHECK(gen.offset() == 0);  // nothing was drawn
}

TEST_CASE("BatchShare: each share of a batch draws the whole batch's values for its examples") {
  // One process draws for a batch of 6 (channels [6], then masks [6, 2, 3]); three shares of 2
  // examples draw the same values between them, and every generator ends at the same offset.
  Generator whole(5);
  const Tensor channels = randint({6}, 0, 3, whole);
  const Tensor masks = bernoulli({6, 2, 3}, 0.5, whole);
  for (int64_t first = 0; first < 6; first += 2) {
    Generator gen(5);
    Tensor share_channels, share_masks;
    {
      const BatchShare share(gen, first, 2, 6);
      share_channels = randint({2}, 0, 3, gen);
      share_masks = bernoulli({2, 2, 3}, 0.5, gen);
    }
    CHECK(values_of(share_channels) == values_of(channels.narrow(0, first, 2)));
    CHECK(values_of(share_masks) == values_of(masks.narrow(0, first, 2)));
    CHECK(gen.offset() == whole.offset());
    Generator after = whole;  // after the share, draws go on as usual
    CHECK(values_of(rand({4}, gen)) == values_of(rand({4}, after)));
  }
}

TEST_CASE("BatchShare: draws that are not per example, and bad shares, are Errors") {
  Generator gen(1);
  check_error([&] { BatchShare(gen, 4, 3, 6); }, {"[BatchShare] examples [4, 7) are not a share of a batch of 6"});
  check_error([&] { BatchShare(gen, 0, 0, 6); }, {"are not a share of a batch of 6"});
  const BatchShare share(gen, 0, 2, 4);
  check_error([&] { rand({3}, gen); },
              {"a draw of 3 values within a share of 2 examples must have the batch as its first axis"});
  check_error([&] { BatchShare(gen, 0, 1, 4); }, {"already draws for a share"});
}
