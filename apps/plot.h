// Loss curves as PNG files, drawn by giza, a small scientific plotting library on cairo (giza-dev):
//
//   plot_curves("run/loss.png", {{"train", steps, train_bpd}, {"held-out", steps, test_bpd}},
//               "Fashion-MNIST", "step", "bits/dim");
//
// The file is drawn under a temporary name beside the target and renamed over it, so a crash never
// leaves half a picture. Errors are axiom::Error starting with "[plot]" and naming the file or the
// values at fault.
#pragma once

#include <string>
#include <vector>

namespace axiom::apps {

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
