// `axiom sample`: draws images from a trained model and writes them as a PNG grid, with the raw
// values beside it as NPY (grid.png -> grid.npy: uint8 [N, H, W] or [N, C, H, W]).
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

}  // namespace

int sample(const SampleCommand& c) {
  if (c.count <= 0) throw Error("sample", "--n must be positive, got ", c.count);
  if (c.method != "fast" && c.method != "naive") throw Error("sample", "--method must be fast or naive, got \"", c.method, "\"");
  if (!(c.temperature > 0)) throw Error("sample", "--temperature must be > 0, got ", c.temperature);
  if (c.columns < 0) throw Error("sample", "--columns must be >= 0, got ", c.columns);
  const std::filesystem::path out(c.out);
  if (out.extension() != ".png") throw Error("sample", "--out must name a .png file, got '", c.out, "'");
  if (!out.parent_path().empty() && !std::filesystem::is_directory(out.parent_path())) {
    throw Error("sample", "cannot write '", c.out, "': the directory '", out.parent_path().string(), "' does not exist");
  }
  if (c.zoom < 1 || c.zoom > 16) throw Error("sample", "--zoom must be in 1..16, got ", c.zoom);

  const core::Device device = device_of("sample", c.device);
  const std::unique_ptr<models::AxialTransformer> model = models::load_model(c.checkpoint);
  model->to(device);
  models::check_fits(models::sampling_memory(model->config(), c.count), "sample", "drawing " + std::to_string(c.count) + " images",
                     "draw fewer at a time (--n) and run sample again with another --seed", 1, device);
  std::fprintf(stderr, "axiom: sampling %lld images (%s sampler, temperature %g, seed %llu)...\n", static_cast<long long>(c.count),
               c.method.c_str(), c.temperature, static_cast<unsigned long long>(c.seed));
  Stopwatch clock;
  const models::SampleOptions options{.count = c.count, .temperature = c.temperature, .seed = c.seed};
  const Tensor samples = c.method == "fast" ? models::sample_fast(*model, options) : models::sample_naive(*model, options);
  const double seconds = clock.seconds();

  const int64_t columns = c.columns > 0 ? c.columns : static_cast<int64_t>(std::ceil(std::sqrt(static_cast<double>(c.count))));
  write_png(c.out, zoomed(image_grid(samples, columns), c.zoom));
  std::filesystem::path npy = out;
  npy.replace_extension(".npy");
  data::write_npy(npy.string(), samples);
  std::printf("%lld samples in %s: %s (grid), %s (values)\n", static_cast<long long>(c.count), format_duration(seconds).c_str(),
              c.out.c_str(), npy.string().c_str());
  return 0;
}

}  // namespace axiom::apps
