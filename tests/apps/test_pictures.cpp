// Pictures: image grids against a plain-loop layout, PNG files read back by stb_image, plots of the
// asked size that are not blank, and the errors of each.
#include <doctest/doctest.h>
#include <stb_image.h>  // libstb-dev: decodes what write_png and plot_curves wrote
#include <unistd.h>     // getpid

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "apps/pictures.h"
#include "apps/plot.h"
#include "core/core.h"
#include "core/launch.h"

using namespace axiom;
namespace fs = std::filesystem;

namespace {

// uint8 [shape] holding 0, 1, 2, ... (mod 251: never the padding value 255).
Tensor counting(const Shape& shape) {
  std::vector<uint8_t> values(static_cast<size_t>(core::numel(shape)));
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<uint8_t>(i % 251);
  return Tensor(core::from_vector(values, shape));
}

// The grid written out by hand: every pixel starts as `pad`, then pixel (y, x) of channel c of
// image n goes to (top + y, left + x, c), with the tile's corner computed from n. images is read
// as [N, C, H, W]; the result is [GH, GW, C] (C = 1 for grey).
std::vector<uint8_t> reference_grid(const Tensor& images, int64_t columns, int64_t padding, uint8_t pad,
                                    int64_t* grid_height, int64_t* grid_width) {
  const int64_t n_images = images.size(0), channels = images.size(1), h = images.size(2), w = images.size(3);
  columns = std::min(columns, n_images);
  const int64_t rows = (n_images + columns - 1) / columns;
  *grid_height = rows * (h + padding) + padding, *grid_width = columns * (w + padding) + padding;
  std::vector<uint8_t> grid(static_cast<size_t>(*grid_height * *grid_width * channels), pad);
  for (int64_t n = 0; n < n_images; ++n) {
    const int64_t top = padding + (n / columns) * (h + padding), left = padding + (n % columns) * (w + padding);
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t y = 0; y < h; ++y)
        for (int64_t x = 0; x < w; ++x)
          grid[static_cast<size_t>(((top + y) * *grid_width + left + x) * channels + c)] =
              static_cast<uint8_t>(images.at({n, c, y, x}));
  }
  return grid;
}

std::vector<uint8_t> pixels_of(const Tensor& grid) { return grid.to_vector<uint8_t>(); }

// A fresh directory for this test process, removed at the end of the test case.
struct TempDir {
  fs::path path = fs::temp_directory_path() / ("axiom_apps_test_" + std::to_string(::getpid()));
  TempDir() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
  size_t count() const {
    return static_cast<size_t>(std::distance(fs::directory_iterator(path), fs::directory_iterator()));
  }
};

// A decoded PNG file: width, height, channels in the file, pixels row-major.
struct Decoded {
  int width = 0, height = 0, channels = 0;
  std::vector<uint8_t> pixels;
};

Decoded read_png(const std::string& path) {
  Decoded d;
  std::unique_ptr<stbi_uc, void (*)(void*)> data(stbi_load(path.c_str(), &d.width, &d.height, &d.channels, 0),
                                                 stbi_image_free);
  REQUIRE_MESSAGE(data != nullptr, "stb_image cannot read ", path, ": ", stbi_failure_reason());
  d.pixels.assign(data.get(), data.get() + static_cast<size_t>(d.width) * d.height * d.channels);
  return d;
}

// The distinct RGB colours of a decoded picture, and how many of its pixels are white.
struct Colours {
  std::set<std::vector<int>> seen;
  size_t white = 0;
  bool has(std::vector<int> rgb) const { return seen.count(rgb) == 1; }
};

Colours colours_of(const Decoded& d) {
  Colours c;
  for (size_t i = 0; i + 2 < d.pixels.size(); i += static_cast<size_t>(d.channels)) {
    const std::vector<int> rgb = {d.pixels[i], d.pixels[i + 1], d.pixels[i + 2]};
    c.seen.insert(rgb);
    c.white += rgb == std::vector<int>{255, 255, 255};
  }
  return c;
}

// Two falling curves, as a training run draws them: "train" every 50 steps, "held-out" every 200.
std::vector<apps::Series> loss_curves() {
  apps::Series train{"train", {}, {}}, held_out{"held-out", {}, {}};
  for (int step = 0; step <= 2000; step += 50) {
    train.x.push_back(step), train.y.push_back(3.0 + 5.0 / (1.0 + step / 100.0));
    if (step % 200 == 0) held_out.x.push_back(step), held_out.y.push_back(3.2 + 4.8 / (1.0 + step / 100.0));
  }
  return {train, held_out};
}

std::string first_bytes(const std::string& path, size_t count) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes(count, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(count));
  return bytes.substr(0, static_cast<size_t>(in.gcount()));
}

}  // namespace

// --- image_grid ----------------------------------------------------------------------------------

TEST_CASE("image_grid puts grey image n at row n / columns, column n % columns, inside pad-valued borders") {
  // 5 images of 3 x 4, laid out 2 per row: 3 rows, the last with one empty cell. The input is a
  // transposed view, so the tiles are read through strides.
  const Tensor images = counting({5, 4, 3}).transpose(1, 2);  // [5, 3, 4]
  const Tensor grid = apps::image_grid(images, 2, 2, 255);
  int64_t gh = 0, gw = 0;
  const std::vector<uint8_t> expected = reference_grid(images.unsqueeze(1), 2, 2, 255, &gh, &gw);
  CHECK(grid.shape() == Shape{3 * (3 + 2) + 2, 2 * (4 + 2) + 2});
  CHECK(gh == 17);
  CHECK(gw == 14);
  CHECK(grid.dtype() == Dtype::uint8);
  CHECK(pixels_of(grid) == expected);
  // Spot checks written out: image 0's first pixel at (2, 2), image 3's at (2 + 5, 2 + 6), the
  // border and the empty cell are padding.
  CHECK(grid.at({2, 2}) == images.at({0, 0, 0}));
  CHECK(grid.at({7, 8}) == images.at({3, 0, 0}));
  CHECK(grid.at({0, 0}) == 255);
  CHECK(grid.at({13, 9}) == 255);

  // [N, 1, H, W] is the same grey grid; other padding values and widths follow the same layout.
  CHECK(pixels_of(apps::image_grid(images.unsqueeze(1), 2, 2, 255)) == expected);
  CHECK(pixels_of(apps::image_grid(images, 3, 0, 7)) == reference_grid(images.unsqueeze(1), 3, 0, 7, &gh, &gw));
  CHECK(pixels_of(apps::image_grid(images, 1, 3, 0)) == reference_grid(images.unsqueeze(1), 1, 3, 0, &gh, &gw));
}

TEST_CASE("image_grid lays out RGB images N x 3 x H x W as one RGB picture, channels last") {
  const Tensor images = counting({4, 3, 2, 5});
  const Tensor grid = apps::image_grid(images, 3, 1, 255);
  int64_t gh = 0, gw = 0;
  const std::vector<uint8_t> expected = reference_grid(images, 3, 1, 255, &gh, &gw);
  CHECK(grid.shape() == Shape{gh, gw, 3});
  CHECK(grid.shape() == Shape{2 * (2 + 1) + 1, 3 * (5 + 1) + 1, 3});
  CHECK(pixels_of(grid) == expected);
  CHECK(grid.at({1 + 3, 1, 2}) == images.at({3, 2, 0, 0}));  // image 3 opens row 1; its blue channel
}

TEST_CASE("image_grid shows each sample's frames as one row and caps the columns at N") {
  // 2 videos of 4 frames: 2 rows of 4 tiles, whatever `columns` says.
  const Tensor videos = counting({2, 4, 3, 3});
  const Tensor grid = apps::image_grid(videos, 8, 1, 255);
  int64_t gh = 0, gw = 0;
  const std::vector<uint8_t> expected = reference_grid(videos.reshape({8, 1, 3, 3}), 4, 1, 255, &gh, &gw);
  CHECK(grid.shape() == Shape{2 * 4 + 1, 4 * 4 + 1});
  CHECK(pixels_of(grid) == expected);
  // Fewer images than columns: one row of N tiles, no empty cells.
  CHECK(apps::image_grid(counting({3, 2, 2}), 10, 1).shape() == Shape{4, 10});
}

TEST_CASE("image_grid errors name the values") {
  CHECK_THROWS_WITH_AS(apps::image_grid(Tensor(core::zeros({2, 3, 3})), 2), doctest::Contains("float32 [2, 3, 3]"),
                       Error);
  CHECK_THROWS_WITH_AS(apps::image_grid(counting({3, 3}), 2), doctest::Contains("uint8 [3, 3]"), Error);
  CHECK_THROWS_WITH_AS(apps::image_grid(counting({0, 3, 3}), 2), doctest::Contains("no pixels"), Error);
  CHECK_THROWS_WITH_AS(apps::image_grid(counting({2, 3, 3}), 0), doctest::Contains("columns = 0"), Error);
  CHECK_THROWS_WITH_AS(apps::image_grid(counting({2, 3, 3}), 2, -1), doctest::Contains("padding = -1"), Error);
}

// --- write_png -----------------------------------------------------------------------------------

TEST_CASE("write_png files read back pixel for pixel, grey and RGB") {
  const TempDir dir;
  // Grey: a transposed view, values 0..250.
  const Tensor grey = counting({13, 7}).transpose(0, 1);  // [7, 13]
  apps::write_png(dir.file("grey.png"), grey);
  const Decoded g = read_png(dir.file("grey.png"));
  CHECK(g.width == 13);
  CHECK(g.height == 7);
  CHECK(g.channels == 1);
  CHECK(g.pixels == grey.to_vector<uint8_t>());

  // RGB: channels last, from a channels-first tensor; every value 0..255 appears.
  std::vector<uint8_t> values(3 * 16 * 16);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<uint8_t>((i * 37) % 256);
  const Tensor rgb(core::from_vector(values, {3, 16, 16}).permute({1, 2, 0}));  // [16, 16, 3]
  apps::write_png(dir.file("rgb.png"), rgb);
  const Decoded c = read_png(dir.file("rgb.png"));
  CHECK(c.width == 16);
  CHECK(c.height == 16);
  CHECK(c.channels == 3);
  CHECK(c.pixels == rgb.to_vector<uint8_t>());

  // Written again over the old file: the new pixels, and no temporary file left behind.
  apps::write_png(dir.file("grey.png"), counting({2, 3}));
  CHECK(read_png(dir.file("grey.png")).pixels == counting({2, 3}).to_vector<uint8_t>());
  CHECK(dir.count() == 2);
}

TEST_CASE("write_png errors name the file and the values") {
  const TempDir dir;
  const std::string path = dir.file("bad.png");
  CHECK_THROWS_WITH_AS(apps::write_png(path, Tensor(core::zeros({4, 4}))), doctest::Contains("got float32 [4, 4]"),
                       Error);
  CHECK_THROWS_WITH_AS(apps::write_png(path, counting({4, 4, 2})), doctest::Contains("got uint8 [4, 4, 2]"), Error);
  CHECK_THROWS_WITH_AS(apps::write_png(path, counting({0, 4})), doctest::Contains("0 x 4 pixels"), Error);
  CHECK_THROWS_WITH_AS(apps::write_png(dir.file("no/such/dir/a.png"), counting({4, 4})),
                       doctest::Contains("no/such/dir/a.png"), Error);
  CHECK(dir.count() == 0);
}

// --- plot_curves ---------------------------------------------------------------------------------

TEST_CASE("plot_curves writes a PNG of the asked size with both lines on it") {
  const TempDir dir;
  const std::string path = dir.file("loss.png");
  apps::plot_curves(path, loss_curves(), "Fashion-MNIST", "step", "bits/dim", 640, 400);

  CHECK(first_bytes(path, 8) == std::string("\x89PNG\r\n\x1a\n", 8));
  const Decoded d = read_png(path);
  CHECK(d.width == 640);
  CHECK(d.height == 400);
  REQUIRE(d.channels >= 3);
  // Not blank: mostly white, but with black text and frame and pixels of both line colours
  // (matplotlib's blue and orange, the first two of the palette).
  const Colours c = colours_of(d);
  CHECK(c.white > static_cast<size_t>(d.width * d.height) / 2);
  CHECK(c.has({0, 0, 0}));
  CHECK(c.has({31, 119, 180}));
  CHECK(c.has({255, 127, 14}));
  CHECK(dir.count() == 1);  // no temporary file left behind
}

TEST_CASE("plot_curves draws texts with giza markup characters and non-ASCII letters") {
  // giza would read _ ^ { } and \ as markup, and a UTF-8 letter would stop all drawing after it: the
  // title comes before the lines, so the lines would be missing.
  const TempDir dir;
  const std::string path = dir.file("loss.png");
  std::vector<apps::Series> curves = loss_curves();
  curves[0].name = "train_{lr=3e-4}^2 \\alpha \xc2\xb5";
  apps::plot_curves(path, curves, "\xc2\xb5-law_run {x} \\u", "step_count", "bits^dim \\b", 640, 400);
  const Colours c = colours_of(read_png(path));
  CHECK(c.has({0, 0, 0}));
  CHECK(c.has({31, 119, 180}));
  CHECK(c.has({255, 127, 14}));
}

TEST_CASE("plot_curves errors name the series and the values") {
  const TempDir dir;
  const std::string path = dir.file("loss.png");
  const apps::Series good{"train", {0, 1, 2}, {8, 5, 3}};
  CHECK_THROWS_WITH_AS(apps::plot_curves(path, {}, "t", "x", "y"), doctest::Contains("no series"), Error);
  CHECK_THROWS_WITH_AS(apps::plot_curves(path, {good, {"test", {0, 1}, {8}}}, "t", "x", "y"),
                       doctest::Contains("series \"test\" has 2 x values and 1 y values"), Error);
  CHECK_THROWS_WITH_AS(apps::plot_curves(path, {{"empty", {}, {}}}, "t", "x", "y"),
                       doctest::Contains("series \"empty\" has 0 x values"), Error);
  CHECK_THROWS_WITH_AS(apps::plot_curves(path, {{"train", {0, 1}, {8, NAN}}}, "t", "x", "y"),
                       doctest::Contains("series \"train\" point 1 is (1, nan)"), Error);
  CHECK_THROWS_WITH_AS(apps::plot_curves(path, {good}, "t", "x", "y", 20, 500), doctest::Contains("20 x 500 pixels"),
                       Error);
  CHECK_THROWS_WITH_AS(apps::plot_curves(dir.file("no/such/dir/loss.png"), {good}, "t", "x", "y"),
                       doctest::Contains("no/such/dir"), Error);
  CHECK(dir.count() == 0);
  // A single point, or a flat line, still makes a picture.
  apps::plot_curves(path, {{"one", {5}, {4}}, {"flat", {0, 10}, {4, 4}}}, "t", "x", "y");
  CHECK(read_png(path).width == 800);
}
