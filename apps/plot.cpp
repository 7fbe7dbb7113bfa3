// Line plots with giza (plot.h): the checks, the axes, the lines, the legend, and the PNG file.
#include "apps/plot.h"

#include <unistd.h>  // getpid

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <mutex>
#include <system_error>

extern "C" {
#include <giza.h>  // giza-dev: a C header without its own extern "C"
}

#include "core/error.h"

namespace axiom::apps {

// giza follows PGPLOT: one global drawing state, a *viewport* (the axes' rectangle, in fractions of
// the picture) and a *window* (the data coordinates mapped onto it), colours chosen by index.

namespace {

struct Range {
  double low = std::numeric_limits<double>::infinity();
  double high = -std::numeric_limits<double>::infinity();
};

void check_series(const std::vector<Series>& series) {
  if (series.empty()) throw Error("plot", "no series to plot");
  for (const Series& s : series) {
    if (s.x.empty() || s.x.size() != s.y.size()) {
      throw Error("plot", "series \"", s.name, "\" has ", s.x.size(), " x values and ", s.y.size(),
                  " y values; it needs the same number, at least 1");
    }
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) {
        throw Error("plot", "series \"", s.name, "\" point ", i, " is (", s.x[i], ", ", s.y[i], "): not finite");
      }
    }
  }
}

// The smallest and largest of one coordinate (x or y) over every series, widened when they are
// equal so that the axis still has a length.
Range data_range(const std::vector<Series>& series, std::vector<double> Series::*coordinate) {
  Range range;
  for (const Series& s : series) {
    const auto [low, high] = std::minmax_element((s.*coordinate).begin(), (s.*coordinate).end());
    range.low = std::min(range.low, *low), range.high = std::max(range.high, *high);
  }
  if (range.high - range.low < 1e-12 * std::max(1.0, std::abs(range.high))) {
    range.low -= std::max(0.5, std::abs(range.low) * 0.05), range.high += std::max(0.5, std::abs(range.high) * 0.05);
  }
  return range;
}

Range widened(Range range, double fraction) {
  const double margin = (range.high - range.low) * fraction;
  return {range.low - margin, range.high + margin};
}

// giza reads some characters of a text as markup: _ and ^ start a subscript and a superscript,
// { } group, \ escapes (\alpha, \u, ...); and Debian's giza 1.3.2 passes the bytes of a multi-byte
// UTF-8 letter to cairo one by one, which stops all drawing after it. So that any text can be
// drawn: \ { } are quoted the giza way (\\, Hershey glyphs 1225 and 1226), _ and ^ become spaces
// (there is no way to quote them), and each non-ASCII letter becomes a '?'.
std::string literal(const std::string& text) {
  std::string shown;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\\')
      shown += "\\\\";
    else if (c == '{')
      shown += "\\(1225)";
    else if (c == '}')
      shown += "\\(1226)";
    else if (c == '_' || c == '^')
      shown += ' ';
    else if (byte < 0x80)
      shown += c;
    else if ((byte & 0xC0) != 0x80)
      shown += '?';  // the first byte of a UTF-8 letter; the others are dropped
  }
  return shown;
}

// Text and symbol sizes, in giza's character heights (1.1: numbers 11 pixels high on 800 x 500).
constexpr double kTextHeight = 1.1, kTitleHeight = 1.3, kDotHeight = 2.2;

// Colour indices: the line colours are matplotlib's "tab10" palette, easy to tell apart.
constexpr int kBlack = 1, kGridGrey = 20, kFrameGrey = 21, kFirstLineColour = 22;
constexpr std::array<std::array<int, 3>, 10> kLineColours = {{{31, 119, 180},
                                                              {255, 127, 14},
                                                              {44, 160, 44},
                                                              {214, 39, 40},
                                                              {148, 103, 189},
                                                              {140, 86, 75},
                                                              {227, 119, 194},
                                                              {127, 127, 127},
                                                              {188, 189, 34},
                                                              {23, 190, 207}}};

int line_colour(size_t i) { return kFirstLineColour + static_cast<int>(i % kLineColours.size()); }

void define_colours() {
  giza_set_colour_representation_rgb(kGridGrey, 200, 200, 200);  // antialiased to about 230
  giza_set_colour_representation_rgb(kFrameGrey, 170, 170, 170);
  for (size_t i = 0; i < kLineColours.size(); ++i) {
    const auto& [r, g, b] = kLineColours[i];
    giza_set_colour_representation_rgb(line_colour(i), r, g, b);
  }
}

// A tick spacing of 1, 2 or 5 times a power of ten that cuts `span` into about `ticks` pieces.
double tick_step(double span, double ticks) {
  const double raw = span / ticks, power = std::pow(10.0, std::floor(std::log10(raw)));
  for (const double multiple : {1.0, 2.0, 5.0}) {
    if (multiple * power >= raw) return multiple * power;
  }
  return 10 * power;
}

// Grid lines first (under everything), then the frame with ticks and numbers, then the labels.
// Box options (PGPLOT's): B/C bottom/top (left/right) edge, G grid, N numbers, T major ticks,
// S minor ticks, V numbers on the y axis written horizontally. giza draws the grid only along
// with edges and ticks, so the grey pass draws a grey frame and ticks too; the black pass covers them.
void draw_axes(Range x, Range y, const std::string& title, const std::string& xlabel, const std::string& ylabel) {
  const double x_step = tick_step(x.high - x.low, 6), y_step = tick_step(y.high - y.low, 6);
  giza_set_window(x.low, x.high, y.low, y.high);
  giza_set_line_width(1);
  giza_set_colour_index(kGridGrey);
  giza_box("BCGT", x_step, 0, "BCGT", y_step, 0);
  giza_set_colour_index(kBlack);
  giza_box("BCNST", x_step, 0, "BCNSTV", y_step, 0);
  giza_label(literal(xlabel).c_str(), literal(ylabel).c_str(), "");
  giza_set_character_height(kTitleHeight);
  giza_annotate("T", 1.0, 0.5, 0.5, literal(title).c_str());  // 1 character height above the frame, centred
  giza_set_character_height(kTextHeight);
}

// Each series is a line through its points; a sparse one (an evaluation every few thousand steps,
// say) also gets a dot on each point, so that one can see where it was measured.
constexpr int kDot = 17;  // giza's (PGPLOT's) filled circle

bool dotted(const Series& s) { return s.x.size() <= 40; }

void draw_dots(int n, const double* x, const double* y) {
  giza_set_character_height(kDotHeight);  // symbols are sized like text
  giza_points(n, x, y, kDot);
  giza_set_character_height(kTextHeight);
}

void draw_series(const std::vector<Series>& series) {
  giza_set_line_width(2.5);
  for (size_t i = 0; i < series.size(); ++i) {
    const Series& s = series[i];
    const int n = static_cast<int>(s.x.size());
    giza_set_colour_index(line_colour(i));
    if (n > 1) giza_line(n, s.x.data(), s.y.data());
    if (dotted(s)) draw_dots(n, s.x.data(), s.y.data());
  }
}

// --- the legend: a framed white box, one row per series (a short stroke of its colour, then its
// name), in the corner of the axes where it hides the least of the lines. It is laid out in a unit
// window over the axes, so positions are fractions of the axes' width and height.

struct Box {
  double left, right, bottom, top;
  bool holds(double x, double y) const { return x >= left && x <= right && y >= bottom && y <= top; }
};

struct LegendLayout {
  double width, height;  // of the box
  double gap, stroke, row_step, text_height;
};

LegendLayout legend_layout(const std::vector<Series>& series) {
  double name_width = 0, text_height = 0;
  for (const Series& s : series) {
    double xbox[4], ybox[4];  // the corners of the text's box, in world coordinates
    giza_qtext(0, 0, 0, 0, s.name.empty() ? " " : literal(s.name).c_str(), xbox, ybox);
    name_width = std::max(name_width, xbox[2] - xbox[0]), text_height = std::max(text_height, ybox[1] - ybox[0]);
  }
  const double gap = 0.6 * text_height, stroke = 0.06, row_step = 1.6 * text_height;
  return {gap + stroke + gap + name_width + gap,
          static_cast<double>(series.size()) * row_step + gap,
          gap,
          stroke,
          row_step,
          text_height};
}

// How much of the lines a box would hide: points sampled along every segment (16 per segment),
// counted when they fall inside. Coordinates are fractions of the axes.
int hidden_samples(const Box& box, const std::vector<Series>& series, Range x, Range y) {
  int hidden = 0;
  for (const Series& s : series) {
    for (size_t i = 0; i < s.x.size(); ++i) {
      const size_t next = std::min(i + 1, s.x.size() - 1);
      for (int k = 0; k < 16; ++k) {
        const double t = k / 16.0;
        const double px = s.x[i] + t * (s.x[next] - s.x[i]), py = s.y[i] + t * (s.y[next] - s.y[i]);
        hidden += box.holds((px - x.low) / (x.high - x.low), (py - y.low) / (y.high - y.low));
      }
    }
  }
  return hidden;
}

// Top right first (where falling loss curves leave room), then top left, bottom right, bottom left.
Box legend_box(const LegendLayout& layout, const std::vector<Series>& series, Range x, Range y) {
  const double margin = 0.015, w = layout.width, h = layout.height;
  const Box corners[4] = {{1 - margin - w, 1 - margin, 1 - margin - h, 1 - margin},
                          {margin, margin + w, 1 - margin - h, 1 - margin},
                          {1 - margin - w, 1 - margin, margin, margin + h},
                          {margin, margin + w, margin, margin + h}};
  Box best = corners[0];
  int least = hidden_samples(best, series, x, y);
  for (const Box& corner : corners) {
    const int hidden = hidden_samples(corner, series, x, y);
    if (hidden < least) best = corner, least = hidden;
  }
  return best;
}

void draw_legend(const std::vector<Series>& series, Range x, Range y) {
  giza_set_window(0, 1, 0, 1);
  const LegendLayout layout = legend_layout(series);
  const Box box = legend_box(layout, series, x, y);

  giza_set_fill(GIZA_FILL_SOLID);
  giza_set_colour_index(0);  // the background colour: white
  giza_rectangle(box.left, box.right, box.bottom, box.top);
  giza_set_fill(GIZA_FILL_HOLLOW);
  giza_set_line_width(1);
  giza_set_colour_index(kFrameGrey);
  giza_rectangle(box.left, box.right, box.bottom, box.top);

  for (size_t i = 0; i < series.size(); ++i) {
    const double middle = box.top - layout.gap / 2 - (static_cast<double>(i) + 0.5) * layout.row_step;
    const double xs[2] = {box.left + layout.gap, box.left + layout.gap + layout.stroke}, ys[2] = {middle, middle};
    giza_set_line_width(2.5);
    giza_set_colour_index(line_colour(i));
    giza_line(2, xs, ys);
    const double centre = (xs[0] + xs[1]) / 2;
    if (dotted(series[i])) draw_dots(1, &centre, &middle);
    giza_set_colour_index(kBlack);
    // The text's baseline sits a third of its height below the row's middle; left-aligned.
    giza_ptext(xs[1] + layout.gap, middle - 0.35 * layout.text_height, 0, 0, literal(series[i].name).c_str());
  }
}

// giza picks the file name from the prefix it is given, adding ".png" unless the name holds one.
std::string temporary_png_name(const std::string& path) { return path + ".tmp-" + std::to_string(::getpid()) + ".png"; }

void open_png(const std::string& path, const std::string& temp, int width, int height) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path directory = fs::path(path).parent_path();
  if (!directory.empty() && !fs::is_directory(directory, ec)) {
    throw Error("plot", "cannot write '", path, "': the directory '", directory.string(), "' does not exist");
  }
  fs::remove(temp, ec);
  if (giza_open_device_size("/png", temp.c_str(), width, height, GIZA_UNITS_PIXELS) <= 0) {
    throw Error("plot", "cannot write '", path, "': giza could not open a ", width, " x ", height, " PNG picture");
  }
}

// giza writes the file when the device closes; then the finished file is renamed over the target.
// Whether the file ends with a PNG's last chunk (IEND): cairo does not report a failed write, so
// a full disk would otherwise leave a truncated picture.
bool ends_like_a_png(const std::string& file) {
  static const unsigned char iend[12] = {0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xAE, 0x42, 0x60, 0x82};
  std::ifstream in(file, std::ios::binary | std::ios::ate);
  if (!in || in.tellg() < static_cast<std::streamoff>(sizeof iend)) return false;
  unsigned char tail[sizeof iend];
  in.seekg(-static_cast<std::streamoff>(sizeof iend), std::ios::end);
  in.read(reinterpret_cast<char*>(tail), sizeof tail);
  return in && std::equal(tail, tail + sizeof tail, iend);
}

void close_png(const std::string& path, const std::string& temp) {
  namespace fs = std::filesystem;
  giza_close_device();
  std::error_code ec;
  if (!fs::is_regular_file(temp, ec) || !ends_like_a_png(temp)) {
    fs::remove(temp, ec);
    throw Error("plot", "cannot write '", path, "': giza did not write all of '", temp, "' (is the disk full?)");
  }
  fs::rename(temp, path, ec);
  if (ec) {
    const std::string reason = ec.message();  // (before remove() sets ec again)
    fs::remove(temp, ec);
    throw Error("plot", "cannot write '", path, "': renaming '", temp, "' over it failed: ", reason);
  }
}

std::mutex giza_mutex;  // giza keeps one global drawing state: one plot at a time

}  // namespace

void plot_curves(const std::string& path, const std::vector<Series>& series, const std::string& title,
                 const std::string& xlabel, const std::string& ylabel, int width, int height) {
  check_series(series);
  if (width < 100 || height < 100 || width > 10000 || height > 10000) {
    throw Error("plot", "cannot write '", path, "': ", width, " x ", height, " pixels; each side must be 100 to 10000");
  }
  const std::lock_guard<std::mutex> lock(giza_mutex);
  const std::string temp = temporary_png_name(path);
  open_png(path, temp, width, height);
  giza_set_font("Sans");
  giza_set_character_height(kTextHeight);
  giza_set_number_format(GIZA_NUMBER_FORMAT_DEC);  // 20000, not 2x10^4
  define_colours();
  giza_set_viewport(0.09, 0.95, 0.12, 0.90);  // room for numbers and labels left and below, a title above
  const Range x = data_range(series, &Series::x), y = widened(data_range(series, &Series::y), 0.05);
  draw_axes(x, y, title, xlabel, ylabel);
  draw_series(series);
  draw_legend(series, x, y);
  close_png(path, temp);
}

}  // namespace axiom::apps
