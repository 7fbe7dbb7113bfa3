// Pictures the `axiom` command writes: PNG files and grids of sampled images (loss curves: plot.h).
//
//   Tensor grid = image_grid(samples, 8);            // uint8 [N, 28, 28] -> [GH, GW], 8 per row
//   write_png("run/samples.png", grid);
//
// PNG files are encoded by stb_image_write (Debian's libstb-dev) and written to a temporary name
// beside the target and renamed over it, so a crash never leaves half a picture. Errors are
// axiom::Error starting with "[png]" or "[image_grid]" and naming the file or the values at fault.
#pragma once

#include <cstdint>
#include <string>

#include "autograd/tensor.h"

namespace axiom::apps {

// Writes `image` as an 8-bit PNG file: uint8 [H, W] is a grey picture, uint8 [H, W, 3] an RGB one
// (row 0 at the top). Any strides and device; the target's directory must exist.
void write_png(const std::string& path, const Tensor& image);

// The bytes of that PNG file; `what` names the picture in an Error ("'run/samples.png'").
std::string encode_png(const Tensor& image, const std::string& what);

// Lays images out as tiles of a grid, row by row, with `padding` pixels of value `pad_value`
// between the tiles and around the border (the layout of torchvision's make_grid):
//
//   images uint8 [N, H, W] or [N, 1, H, W]   grey tiles, `columns` per row       -> uint8 [GH, GW]
//   images uint8 [N, 3, H, W]                RGB tiles, `columns` per row        -> uint8 [GH, GW, 3]
//   images uint8 [N, C, H, W], other C       each sample's C channels (video frames) side by side
//                                            as one grid row; `columns` is not used -> uint8 [GH, GW]
//
//   columns  = min(columns, N),  rows = ceil(N / columns)
//   GH = rows * (H + padding) + padding,  GW = columns * (W + padding) + padding
//   tile i: top-left pixel at (padding + (i / columns) * (H + padding), padding + (i % columns) * (W + padding))
//
// Cells after the last image (when N is not a multiple of `columns`) stay `pad_value`.
Tensor image_grid(const Tensor& images, int64_t columns, int64_t padding = 2, uint8_t pad_value = 255);

}  // namespace axiom::apps
