// moving_objects: shape, determinism, objects stay on the canvas, and they move.
#include <doctest/doctest.h>

#include "autograd/factory.h"
#include "core/factory.h"
#include "data/video.h"
#include "tests/support/files.h"
#include "autograd/internal.h"

using namespace axiom;
using test::error_of;

namespace {

// n solid squares of size s x s: image i is filled with the value 10 + i (nonzero everywhere).
Tensor squares(int64_t n, int64_t s) {
  std::vector<uint8_t> pixels;
  for (int64_t i = 0; i < n; ++i) pixels.insert(pixels.end(), s * s, static_cast<uint8_t>(10 + i));
  return axiom::from_vector(pixels, {n, s, s});
}

// The bounding box [top, left, bottom, right] of the nonzero pixels of frame t of video v.
std::array<int64_t, 4> box(const Tensor& videos, int64_t v, int64_t t) {
  const core::Tensor frame = core_tensor(videos).select(0, v).select(0, t).contiguous();
  const int64_t c = frame.size(0);
  const uint8_t* p = frame.data<uint8_t>();
  std::array<int64_t, 4> b{c, c, -1, -1};
  for (int64_t y = 0; y < c; ++y) {
    for (int64_t x = 0; x < c; ++x) {
      if (p[y * c + x]) b = {std::min(b[0], y), std::min(b[1], x), std::max(b[2], y), std::max(b[3], x)};
    }
  }
  return b;
}

}  // namespace

TEST_CASE("moving_objects has the declared shape and is deterministic from the seed") {
  const Tensor images = squares(5, 6);
  const Tensor a = data::moving_objects(images, 4, 8, 20, 2, 7);
  CHECK(a.shape() == core::Shape{4, 8, 20, 20});
  CHECK(a.dtype() == Dtype::uint8);
  CHECK(a.to_vector<int64_t>() == data::moving_objects(images, 4, 8, 20, 2, 7).to_vector<int64_t>());
  CHECK(a.to_vector<int64_t>() != data::moving_objects(images, 4, 8, 20, 2, 8).to_vector<int64_t>());
  // Video v does not depend on how many videos are made.
  const Tensor fewer = data::moving_objects(images, 2, 8, 20, 2, 7);
  CHECK(fewer.to_vector<int64_t>() == a.narrow(0, 0, 2).to_vector<int64_t>());
}

TEST_CASE("moving_objects: one object stays whole on the canvas, moves, and bounces") {
  // One 6x6 square on a 16x16 canvas: L = 10, so over 30 frames at speed >= 1 it must reach an edge.
  const int64_t frames = 30, canvas = 16, size = 6;
  const Tensor videos = data::moving_objects(squares(3, size), 10, frames, canvas, 1, 42);
  for (int64_t v = 0; v < 10; ++v) {
    CAPTURE(v);
    bool touched_edge = false;
    int64_t moves = 0;
    for (int64_t t = 0; t < frames; ++t) {
      const auto b = box(videos, v, t);
      // The whole square is there (not clipped): its box is exactly size x size, inside the canvas.
      CHECK(b[2] - b[0] + 1 == size);
      CHECK(b[3] - b[1] + 1 == size);
      touched_edge = touched_edge || b[0] == 0 || b[1] == 0 || b[2] == canvas - 1 || b[3] == canvas - 1;
      if (t > 0) {
        const auto before = box(videos, v, t - 1);
        moves += before != b;  // speed is never 0; it may pause for a frame when it bounces
        CHECK(std::abs(before[0] - b[0]) <= 3);
        CHECK(std::abs(before[1] - b[1]) <= 3);
      }
    }
    CHECK(touched_edge);
    CHECK(moves >= frames / 2);
  }
}

TEST_CASE("moving_objects combines overlapping objects with max") {
  // Two objects on a canvas the size of the image: both sit at (0, 0); the brighter one wins.
  const Tensor videos = data::moving_objects(squares(2, 4), 6, 2, 4, 2, 5);
  for (int64_t v = 0; v < 6; ++v) {
    const auto values = videos.select(0, v).to_vector<int64_t>();
    for (int64_t value : values) CHECK((value == 10 || value == 11));
  }
}

TEST_CASE("moving_objects on real-looking data: a Fashion-MNIST-sized input") {
  const Tensor images = axiom::full({3, 28, 28}, 200, Dtype::uint8);
  const Tensor videos = data::moving_objects(images, 2, 10, 64, 3, 1);
  CHECK(videos.shape() == core::Shape{2, 10, 64, 64});
}

TEST_CASE("moving_objects rejects bad arguments") {
  const Tensor images = squares(2, 4);
  CHECK(error_of([&] {
          data::moving_objects(images, 1, 2, 3, 1, 0);
        }).find("the canvas (3) is smaller than the images (4 x 4)") != std::string::npos);
  CHECK(error_of([&] { data::moving_objects(images, 1, 0, 8, 1, 0); }).find("frames >= 1") != std::string::npos);
  CHECK(error_of([&] {
          data::moving_objects(axiom::zeros({2, 4, 4}), 1, 2, 8, 1, 0);
        }).find("uint8 [N, h, w]") != std::string::npos);
}
