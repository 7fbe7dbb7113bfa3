// Pictures the `axiom` command writes: PNG files, grids of sampled images, loss curves.
//
//   core::Tensor grid = image_grid(samples, 8);      // uint8 [N, 28, 28] -> [GH, GW], 8 per row
//   write_png("run/samples.png", grid);
//   plot_curves("run/loss.png", {{"train", steps, train_bpd}, {"held-out", steps, test_bpd}},
//               "Fashion-MNIST", "step", "bits/dim");
//
// PNG files are encoded by stb_image_write (Debian's libstb-dev), plots drawn by giza, a small
// scientific plotting library on cairo (giza-dev). Every file is written to a temporary name beside
// the target and renamed over it, so a crash never leaves half a picture. Errors are axiom::Error
// starting with "[png]", "[image_grid]" or "[plot]" and naming the file or the values at fault.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace axiom::apps {

// Writes `image` as an 8-bit PNG file: uint8 [H, W] is a grey picture, uint8 [H, W, 3] an RGB one
// (row 0 at the top). Any strides and device; the target's directory must exist.
void write_png(const std::string& path, const core::Tensor& image);

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
core::Tensor image_grid(const core::Tensor& images, int64_t columns, int64_t padding = 2, uint8_t pad_value = 255);

// One line of a plot: y[i] against x[i], named in the legend.
struct Series {
  std::string name;
  std::vector<double> x, y;
};

// Draws the series as coloured lines on one pair of axes and writes a `width` x `height` PNG:
// title on top, grid lines, numbered ticks, axis labels, and a legend in the corner that hides the
// least of the lines (top right first, where falling loss curves leave room). A series of at most
// 40 points (held-out evaluations, say) also gets a dot on each point. Both axes are linear: a loss
// from 8 bits/dim down to 3 spans less than half a decade, where a log axis would carry one or two
// numbered ticks and show nearly the same shape. The y range is the data's with 5% to spare; the x
// range is exactly the data's. Texts are drawn as plain ASCII: '_' and '^' show as spaces and each
// non-ASCII letter as '?' (see literal() in pictures.cpp for why). Errors: no series, a series with
// no points or with x and y of different lengths, a value that is not finite (the series, the
// index and the value are named), a side outside 100..10000 pixels, a missing directory.
// Thread-safe: giza has one global drawing state, so plots are drawn one at a time.
void plot_curves(const std::string& path, const std::vector<Series>& series, const std::string& title,
                 const std::string& xlabel, const std::string& ylabel, int width = 800, int height = 500);

}  // namespace axiom::apps
