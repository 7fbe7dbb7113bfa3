// Datasets by name (data/datasets.h): the .npy split, the video set's shape, and the errors.
#include <doctest/doctest.h>

#include <filesystem>

#include "autograd/factory.h"
#include "autograd/ops.h"
#include "core/factory.h"
#include "core/launch.h"
#include "core/random.h"
#include "data/datasets.h"
#include "data/idx.h"
#include "data/npy.h"
#include "tests/support/files.h"

using namespace axiom;

TEST_CASE("load_images: a .npy file holds out its last tenth as the test split") {
  test::ScratchDir dir;
  const std::string path = dir.file("images.npy");
  Generator gen(1);
  const Tensor all(core::randint({25, 2, 3, 4}, 0, 256, gen, Dtype::uint8));
  data::write_npy(path, all);
  const Tensor train = data::load_images(path, "train"), test = data::load_images(path, "test");
  CHECK(train.shape() == core::Shape{23, 2, 3, 4});
  CHECK(test.shape() == core::Shape{2, 2, 3, 4});
  CHECK(concat({train, test}, 0).to_vector<int64_t>() == all.to_vector<int64_t>());

  data::write_npy(path, axiom::zeros({25, 3}, Dtype::float32));
  CHECK(test::error_of([&] { data::load_images(path, "train"); }) ==
        "[dataset] '" + path + "' must hold uint8 images [N, H, W] or [N, C, H, W], got float32 [25, 3]");
}

TEST_CASE("load_images: unknown names, splits and missing directories are named") {
  CHECK(test::error_of([] { data::load_images("imagenet", "train"); }) ==
        "[dataset] unknown dataset \"imagenet\" (fashion-mnist, mnist, cifar10, moving-fashion-mnist, or a .npy file)");
  CHECK(test::error_of([] { data::load_images("mnist", "valid"); }) ==
        "[dataset] split must be \"train\" or \"test\", got \"valid\"");
  CHECK(test::error_of([] { data::load_images("mnist", "train"); }) ==
        "[dataset] mnist needs the directory of its files (--data-dir)");
  const std::string missing =
      test::error_of([] { data::load_images("cifar10", "test", {.root = "/nonexistent-dir"}); });
  CHECK(missing.find("/nonexistent-dir/test_batch.bin") != std::string::npos);
}

TEST_CASE("load_images: moving-fashion-mnist makes videos of the asked frames and canvas") {
  if (!std::filesystem::is_directory(data::kFashionMnistRoot)) {
    MESSAGE("skipped: ", data::kFashionMnistRoot, " is absent (apt-get install dataset-fashion-mnist)");
    return;
  }
  const Tensor videos = data::load_images("moving-fashion-mnist", "test", {.root = "", .frames = 3, .canvas = 30});
  CHECK(videos.shape() == core::Shape{1000, 3, 30, 30});
  CHECK(videos.dtype() == Dtype::uint8);
}

TEST_CASE("load_images: a split without images is an error, not an empty dataset") {
  // (an empty test split would give "nan bits/dim over 0 images"; an empty train split, no batches)
  test::ScratchDir dir;
  for (const char* prefix : {"train", "t10k"}) {
    test::Bytes images = {0, 0, 8, 3}, labels = {0, 0, 8, 1};
    test::append_be32(images, 0), test::append_be32(images, 28), test::append_be32(images, 28);
    test::append_be32(labels, 0);
    test::write_bytes(dir.file(std::string(prefix) + "-images-idx3-ubyte"), images);
    test::write_bytes(dir.file(std::string(prefix) + "-labels-idx1-ubyte"), labels);
  }
  CHECK(test::error_of([&] { data::load_images("mnist", "test", {.root = dir.file("")}); }) ==
        "[dataset] the test split of mnist in '" + dir.file("") + "' holds no images");
}
