#include "apps/pictures.h"

#include <algorithm>
#include <cmath>

#include <stb_image_write.h>  // libstb-dev: the header declares, Debian's libstb holds the code

#include "core/formats/atomic_file.h"
#include "core/error.h"
#include "core/factory.h"
#include "core/launch.h"
#include "autograd/internal.h"

namespace axiom::apps {

// --- PNG files -----------------------------------------------------------------------------------

namespace {

// stb hands the encoded file over in pieces; this appends each to a std::string.
void append_bytes(void* context, void* data, int size) {
  static_cast<std::string*>(context)->append(static_cast<const char*>(data), static_cast<size_t>(size));
}

// stb takes sizes as int, and a row of RGB pixels is 3 * width bytes.
constexpr int64_t kMaxSide = std::numeric_limits<int>::max() / 4;

}  // namespace

std::string encode_png(const Tensor& picture, const std::string& what) {
  if (!picture.defined()) throw Error("png", "cannot write ", what, ": the image is an undefined tensor");
  const core::Tensor& image = core_tensor(picture);
  const bool grey = image.dim() == 2, rgb = image.dim() == 3 && image.size(2) == 3;
  if (image.dtype() != Dtype::uint8 || !(grey || rgb)) {
    throw Error("png", "cannot write ", what, ": the image must be uint8 [H, W] or [H, W, 3], got ", image.dtype(), " ",
                image.shape());
  }
  const int64_t height = image.size(0), width = image.size(1), channels = grey ? 1 : 3;
  if (height < 1 || width < 1 || height > kMaxSide || width > kMaxSide) {
    throw Error("png", "cannot write ", what, ": the image is ", height, " x ", width,
                " pixels; each side must be 1 to ", kMaxSide);
  }
  const core::Tensor pixels = image.to(Device::cpu()).contiguous();  // rows one after another
  std::string bytes;
  const int ok =
      stbi_write_png_to_func(append_bytes, &bytes, static_cast<int>(width), static_cast<int>(height),
                             static_cast<int>(channels), pixels.data<uint8_t>(), static_cast<int>(width * channels));
  if (!ok) throw Error("png", "cannot write ", what, ": stb_image_write could not encode the image");
  return bytes;
}

void write_png(const std::string& path, const Tensor& image) {
  core::write_file_atomically(path, encode_png(image, "'" + path + "'"), "png");
}

// --- grids of images -----------------------------------------------------------------------------

namespace {

// The images as tiles: uint8 [N, H, W] (grey) or [N, H, W, 3] (RGB, channels last as in a PNG),
// and how many tiles go in one grid row.
struct Tiles {
  core::Tensor images;
  int64_t columns;
};

Tiles as_tiles(const core::Tensor& images, int64_t columns) {
  if (images.dtype() != Dtype::uint8 || (images.dim() != 3 && images.dim() != 4)) {
    throw Error("image_grid", "images must be uint8 [N, H, W] or [N, C, H, W], got ", images.dtype(), " ",
                images.shape());
  }
  if (images.numel() == 0) throw Error("image_grid", "no pixels to lay out: images ", images.shape());
  if (images.dim() == 3) return {images, columns};
  const int64_t count = images.size(0), channels = images.size(1);
  if (channels == 1) return {images.select(1, 0), columns};
  if (channels == 3) return {images.permute({0, 2, 3, 1}), columns};
  // Frames of a video (or channels of another kind): sample n's frames make grid row n.
  return {images.reshape({count * channels, images.size(2), images.size(3)}), channels};
}

}  // namespace

Tensor image_grid(const Tensor& images, int64_t columns, int64_t padding, uint8_t pad_value) {
  if (columns < 1 || padding < 0) {
    throw Error("image_grid", "columns must be at least 1 and padding at least 0, got columns = ", columns,
                ", padding = ", padding);
  }
  if (!images.defined()) throw Error("image_grid", "images is an undefined tensor");
  const Tiles tiles = as_tiles(core_tensor(images), columns);
  const int64_t count = tiles.images.size(0), height = tiles.images.size(1), width = tiles.images.size(2);
  const int64_t grid_columns = std::min(tiles.columns, count);
  const int64_t grid_rows = (count + grid_columns - 1) / grid_columns;

  core::Shape shape = {grid_rows * (height + padding) + padding, grid_columns * (width + padding) + padding};
  if (tiles.images.dim() == 4) shape.push_back(3);
  const core::Tensor grid = core::full(shape, pad_value, Dtype::uint8, tiles.images.device());
  for (int64_t i = 0; i < count; ++i) {
    const int64_t top = padding + (i / grid_columns) * (height + padding);
    const int64_t left = padding + (i % grid_columns) * (width + padding);
    core::copy_into(tiles.images.select(0, i), grid.narrow(0, top, height).narrow(1, left, width));
  }
  return Tensor(grid);
}

}  // namespace axiom::apps
