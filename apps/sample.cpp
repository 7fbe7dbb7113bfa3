// `axiom sample`: draws images from a trained model and writes them as a PNG grid (--out) and, when
// --values names a file, their raw values as NPY (uint8 [N, H, W] or [N, C, H, W]). It writes only
// the files it is named: a grid.npy beside grid.png that --values does not name is left alone.
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "apps/commands.h"
#include "apps/pictures.h"
#include "apps/progress.h"
#include "core/error.h"
#include "data/npy.h"
#include "models/models.h"

namespace axiom::apps {

namespace {

// Each pixel becomes a zoom x zoom square: [GH, GW(, 3)] -> [GH * zoom, GW * zoom(, 3)].
Tensor zoomed(const Tensor& grid, int64_t zoom) {
  const int64_t h = grid.size(0), w = grid.size(1), c = grid.dim() == 3 ? grid.size(2) : 1;
  const Tensor squares = grid.reshape({h, 1, w, 1, c}).expand({h, zoom, w, zoom, c});
  const Tensor big = squares.contiguous().reshape({h * zoom, w * zoom, c});
  return grid.dim() == 3 ? big : big.squeeze(2);
}

// A file sample writes: `path` (given as `flag`) must end in `extension`, must not be a directory or
// a name longer than a file system allows, and its directory must exist. Checked before sampling,
// so that a bad name costs no minutes of drawing.
void check_output_file(const char* flag, const std::string& path, const char* extension) {
  const std::filesystem::path file(path);
  if (file.extension() != extension) throw Error("sample", flag, " must name a ", extension, " file, got '", path, "'");
  constexpr size_t kLongestName = 255;  // NAME_MAX of Linux's file systems
  if (file.filename().string().size() > kLongestName) {
    throw Error("sample", "cannot write '", path, "': its name is longer than ", kLongestName, " bytes");
  }
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec)) throw Error("sample", "cannot write '", path, "': it is a directory");
  if (!file.parent_path().empty() && !std::filesystem::is_directory(file.parent_path())) {
    throw Error("sample", "cannot write '", path, "': the directory '", file.parent_path().string(),
                "' does not exist");
  }
}

}  // namespace

int sample(const SampleCommand& c) {
  if (c.count <= 0) throw Error("sample", "--n must be positive, got ", c.count);
  if (c.method != "fast" && c.method != "naive")
    throw Error("sample", "--method must be fast or naive, got \"", c.method, "\"");
  if (!(c.temperature > 0)) throw Error("sample", "--temperature must be > 0, got ", c.temperature);
  if (c.columns < 0) throw Error("sample", "--columns must be >= 0, got ", c.columns);
  check_output_file("--out", c.out, ".png");
  if (!c.values.empty()) check_output_file("--values", c.values, ".npy");
  if (c.zoom < 1 || c.zoom > 16) throw Error("sample", "--zoom must be in 1..16, got ", c.zoom);

  const Device device = device_of("sample", c.device);
  const std::unique_ptr<models::ImageModel> model = models::load_model(c.checkpoint);
  model->to(device);
  models::check_fits(
      models::sampling_memory(model->config(), c.count,
                              c.method == "fast" ? models::Sampler::fast : models::Sampler::naive, {.device = device}),
      "sample", "drawing " + std::to_string(c.count) + " images",
      "draw fewer at a time (--n) and run sample again with another --seed", 1, device);
  std::fprintf(stderr, "axiom: sampling %lld images (%s sampler, temperature %g, seed %llu)...\n",
               static_cast<long long>(c.count), c.method.c_str(), c.temperature,
               static_cast<unsigned long long>(c.seed));
  Stopwatch clock;
  const models::SampleOptions options{.count = c.count, .temperature = c.temperature, .seed = c.seed};
  const Tensor samples =
      c.method == "fast" ? models::sample_fast(*model, options) : models::sample_naive(*model, options);
  const double seconds = clock.seconds();

  const int64_t columns =
      c.columns > 0 ? c.columns : static_cast<int64_t>(std::ceil(std::sqrt(static_cast<double>(c.count))));
  write_png(c.out, zoomed(image_grid(samples, columns), c.zoom));
  if (!c.values.empty()) data::write_npy(c.values, samples);
  const std::string values = c.values.empty() ? "" : ", " + c.values + " (values)";
  std::printf("%lld samples in %s: %s (grid)%s\n", static_cast<long long>(c.count), format_duration(seconds).c_str(),
              c.out.c_str(), values.c_str());
  return 0;
}

}  // namespace axiom::apps
