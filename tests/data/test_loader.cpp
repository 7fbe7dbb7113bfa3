// DataLoader: epochs are permutations, batches are reproducible, prefetch changes nothing.
#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>

#include "autograd/factory.h"
#include "core/factory.h"
#include "data/loader.h"
#include "tests/support/files.h"

using namespace axiom;
using test::error_of;

namespace {

// Column 0: float32 [n, 2] with rows (i, -i); column 1: int64 [n] with i.
data::TensorDataset numbered(int64_t n) {
  std::vector<float> rows;
  for (int64_t i = 0; i < n; ++i) rows.push_back(static_cast<float>(i)), rows.push_back(static_cast<float>(-i));
  return {{axiom::from_vector(rows, {n, 2}), axiom::arange(n)}};
}

// The example ids of every batch of one epoch (one loop), checking that the columns agree.
std::vector<std::vector<int64_t>> one_epoch(data::DataLoader& loader) {
  std::vector<std::vector<int64_t>> batches;
  for (const data::Batch& batch : loader) {
    const auto ids = batch[1].to_vector<int64_t>();
    const auto rows = batch[0].to_vector<float>();
    REQUIRE(rows.size() == 2 * ids.size());
    for (size_t i = 0; i < ids.size(); ++i) {
      CHECK(rows[2 * i] == static_cast<float>(ids[i]));
      CHECK(rows[2 * i + 1] == static_cast<float>(-ids[i]));
    }
    batches.push_back(ids);
  }
  return batches;
}

}  // namespace

TEST_CASE("DataLoader visits every example exactly once per epoch") {
  for (bool prefetch : {false, true}) {
    CAPTURE(prefetch);
    data::DataLoader loader(numbered(10),
                            {.batch_size = 4, .shuffle = true, .drop_last = false, .seed = 3, .prefetch = prefetch});
    CHECK(loader.size() == 3);
    for (int epoch = 0; epoch < 3; ++epoch) {
      const auto batches = one_epoch(loader);
      REQUIRE(batches.size() == 3);
      CHECK(batches[0].size() == 4);
      CHECK(batches[2].size() == 2);
      std::vector<int64_t> all;
      for (const auto& batch : batches) all.insert(all.end(), batch.begin(), batch.end());
      std::sort(all.begin(), all.end());
      std::vector<int64_t> expected(10);
      std::iota(expected.begin(), expected.end(), 0);
      CHECK(all == expected);
    }
    CHECK(loader.epochs_started() == 3);
  }
}

TEST_CASE("DataLoader drop_last drops the short batch") {
  data::DataLoader loader(numbered(10), {.batch_size = 4, .drop_last = true});
  CHECK(loader.size() == 2);
  const auto batches = one_epoch(loader);
  CHECK(batches.size() == 2);
  for (const auto& batch : batches) CHECK(batch.size() == 4);
  data::DataLoader small(numbered(3), {.batch_size = 4, .drop_last = true});
  CHECK(small.size() == 0);
  CHECK(one_epoch(small).empty());
}

TEST_CASE("DataLoader order: seeded, different per epoch, unshuffled in order") {
  data::DataLoader a(numbered(50), {.batch_size = 7, .seed = 11});
  data::DataLoader b(numbered(50), {.batch_size = 7, .seed = 11});
  data::DataLoader c(numbered(50), {.batch_size = 7, .seed = 12});
  const auto a0 = one_epoch(a), a1 = one_epoch(a);
  CHECK(a0 == one_epoch(b));  // same seed, same epoch: same batches
  CHECK(a1 == one_epoch(b));
  CHECK(a0 != a1);            // the next epoch has its own order
  CHECK(a0 != one_epoch(c));  // another seed, another order
  CHECK(a.order(0) != a.order(1));

  data::DataLoader plain(numbered(5), {.batch_size = 2, .shuffle = false, .drop_last = false});
  CHECK(one_epoch(plain) == std::vector<std::vector<int64_t>>{{0, 1}, {2, 3}, {4}});
}

TEST_CASE("DataLoader gives identical batches with and without prefetch") {
  data::DataLoader with(numbered(37), {.batch_size = 5, .seed = 4, .prefetch = true});
  data::DataLoader without(numbered(37), {.batch_size = 5, .seed = 4, .prefetch = false});
  for (int epoch = 0; epoch < 2; ++epoch) CHECK(one_epoch(with) == one_epoch(without));
  // batch(epoch, i) builds the same batch directly.
  const auto third = one_epoch(with);  // epoch 2
  CHECK(without.batch(2, 3)[1].to_vector<int64_t>() == third[3]);
}

TEST_CASE("DataLoader can leave an epoch early and start another") {
  data::DataLoader loader(numbered(100), {.batch_size = 10, .seed = 1});
  int seen = 0;
  for (const data::Batch& batch : loader) {
    CHECK(batch.size() == 10);
    if (++seen == 2) break;  // the prefetch of batch 2 is still running: the iterator waits for it
  }
  CHECK(one_epoch(loader).size() == 10);
}

TEST_CASE("DataLoader takes an ImageDataset: images and labels") {
  data::ImageDataset set{axiom::zeros({6, 2, 2}, Dtype::uint8), axiom::arange(6)};
  data::DataLoader loader(set, {.batch_size = 3});
  for (const data::Batch& batch : loader) {
    CHECK(batch[0].shape() == core::Shape{3, 2, 2});
    CHECK(batch[1].shape() == core::Shape{3});
  }
}

TEST_CASE("DataLoader rejects bad options and mismatched columns") {
  CHECK(error_of([] { data::DataLoader(numbered(4), {.batch_size = 0}); }).find("batch_size must be positive, got 0") !=
        std::string::npos);
  CHECK(error_of([] { data::DataLoader(data::TensorDataset{}); }).find("no columns") != std::string::npos);
  data::TensorDataset mismatched{{axiom::zeros({4, 2}), axiom::arange(5)}};
  CHECK(error_of([&] {
          data::DataLoader loader(mismatched);
        }).find("column 0 has shape [4, 2], column 1 has shape [5]") != std::string::npos);
  data::DataLoader loader(numbered(4), {.batch_size = 2});
  CHECK(error_of([&] { loader.batch(0, 2); }).find("batch 2 is not in 0..1") != std::string::npos);
}
