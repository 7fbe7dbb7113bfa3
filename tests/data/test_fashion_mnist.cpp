// The real Fashion-MNIST, as Debian's dataset-fashion-mnist installs it (skipped when absent).
#include <doctest/doctest.h>

#include <filesystem>

#include "data/idx.h"
#include "tests/support/files.h"

using namespace axiom;

TEST_CASE("fashion_mnist reads the real train and test splits") {
  if (!std::filesystem::is_directory(data::kFashionMnistRoot)) {
    MESSAGE("skipped: ", data::kFashionMnistRoot, " is absent (apt-get install dataset-fashion-mnist)");
    return;
  }
  for (const auto& [split, n] : {std::pair<std::string, int64_t>{"train", 60000}, {"test", 10000}}) {
    CAPTURE(split);
    const data::ImageDataset set = data::fashion_mnist(split);
    CHECK(set.images.shape() == core::Shape{n, 28, 28});
    CHECK(set.labels.shape() == core::Shape{n});
    // Fashion-MNIST is balanced: every class has a tenth of the images.
    std::vector<int64_t> per_class(10, 0);
    for (int64_t label : set.labels.to_vector<int64_t>()) {
      REQUIRE(label >= 0);
      REQUIRE(label < 10);
      ++per_class[label];
    }
    CHECK(per_class == std::vector<int64_t>(10, n / 10));
    // Real photos: dark backgrounds, bright garments.
    const auto pixels = set.images.to_vector<int64_t>();
    int64_t zero = 0, max = 0;
    for (int64_t p : pixels) zero += p == 0, max = std::max(max, p);
    CHECK(max == 255);
    CHECK(zero > static_cast<int64_t>(pixels.size()) / 4);
  }
}

TEST_CASE("fashion_mnist names the directory and the files it looked for") {
  const std::string message = test::error_of([] { data::fashion_mnist("train", "/nonexistent-dir"); });
  CHECK(message.find("train-images-idx3-ubyte, train-images-idx3-ubyte.gz") != std::string::npos);
  CHECK(message.find("'/nonexistent-dir'") != std::string::npos);
  CHECK(test::error_of([] { data::fashion_mnist("valid"); }).find("split must be") != std::string::npos);
}
