// moving_objects: see video.h for the rules.
#include "data/video.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "core/factory.h"
#include "core/random.h"
#include "autograd/internal.h"

namespace axiom::data {

namespace {

// p folded into [0, limit]: 0, 1, ..., limit, limit - 1, ..., 0, 1, ... (period 2 * limit).
int64_t bounce(int64_t p, int64_t limit) {
  if (limit == 0) return 0;
  const int64_t period = 2 * limit;
  const int64_t m = ((p % period) + period) % period;
  return m <= limit ? m : period - m;
}

// A velocity component from 16 random bits: one of -max_speed..-1, 1..max_speed.
int64_t velocity(uint32_t bits, int64_t max_speed) {
  const int64_t v = static_cast<int64_t>(bits % static_cast<uint32_t>(2 * max_speed));  // 0 .. 2*max_speed - 1
  return v < max_speed ? v - max_speed : v - max_speed + 1;
}

}  // namespace

Tensor moving_objects(const Tensor& images, int64_t count, int64_t frames, int64_t canvas, int64_t objects_per_video,
                      uint64_t seed, int64_t max_speed) {
  const char* op = "moving_objects";
  if (!images.defined()) throw Error(op, "images is undefined");
  if (images.dtype() != Dtype::uint8 || images.dim() != 3 || images.size(0) == 0) {
    throw Error(op, "images must be a non-empty uint8 [N, h, w] tensor, got ", images.shape(), " ", images.dtype());
  }
  const int64_t n = images.size(0), h = images.size(1), w = images.size(2);
  if (count < 0 || frames < 1 || objects_per_video < 1) {
    throw Error(op, "need count >= 0, frames >= 1 and objects_per_video >= 1, got count ", count, ", frames ", frames,
                ", objects_per_video ", objects_per_video);
  }
  if (canvas < h || canvas < w)
    throw Error(op, "the canvas (", canvas, ") is smaller than the images (", h, " x ", w, ")");
  if (max_speed < 1 || max_speed > 1000) throw Error(op, "max_speed must be in 1..1000, got ", max_speed);

  const core::Tensor source = core_tensor(images).contiguous();
  const uint8_t* pixels = source.data<uint8_t>();  // [N, h, w]
  core::Tensor out = core::zeros({count, frames, canvas, canvas}, Dtype::uint8);
  uint8_t* video = out.data<uint8_t>();  // [count, frames, canvas, canvas]
  const int64_t limit_x = canvas - w, limit_y = canvas - h;

  for (int64_t v = 0; v < count; ++v) {
    for (int64_t k = 0; k < objects_per_video; ++k) {
      const auto r = core::philox4x32(seed, static_cast<uint64_t>(v * objects_per_video + k));
      const uint8_t* image = pixels + static_cast<int64_t>(r[0] % static_cast<uint64_t>(n)) * h * w;
      const int64_t x0 = r[1] % static_cast<uint64_t>(limit_x + 1), y0 = r[2] % static_cast<uint64_t>(limit_y + 1);
      const int64_t vx = velocity(r[3] & 0xffff, max_speed), vy = velocity(r[3] >> 16, max_speed);
      for (int64_t t = 0; t < frames; ++t) {
        const int64_t x = bounce(x0 + t * vx, limit_x), y = bounce(y0 + t * vy, limit_y);
        uint8_t* frame = video + (v * frames + t) * canvas * canvas;
        for (int64_t i = 0; i < h; ++i) {
          uint8_t* row = frame + (y + i) * canvas + x;
          for (int64_t j = 0; j < w; ++j) row[j] = std::max(row[j], image[i * w + j]);
        }
      }
    }
  }
  return Tensor(out);
}

}  // namespace axiom::data
