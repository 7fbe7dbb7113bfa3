// Moving objects: short videos of real images (Fashion-MNIST, say) moving and bouncing on a larger
// canvas, in the spirit of Moving MNIST (Srivastava et al., 2015), for training on video.
//
// Rules, for video v (0 <= v < count) and object k (0 <= k < objects_per_video):
// - Four random words r0..r3 = Philox-4x32(seed, counter v * objects_per_video + k) decide it all:
//     the image       images[r0 mod N],
//     the start       x0 = r1 mod (L + 1), y0 = r2 mod (L + 1), where L = canvas - image size,
//     the velocity    vx, vy = one of -max_speed..-1, 1..max_speed each (never 0), from r3's
//                     low and high 16 bits,
//   so the same seed gives the same videos, and video v does not depend on `count`.
// - At frame t the object's top-left corner is at x(t) = bounce(x0 + t * vx), y(t) likewise, where
//   bounce() folds the straight line back into [0, L] (a triangle wave of period 2L): the object
//   reflects off the canvas edges and never leaves it. (With L = 0 it stays put.)
// - Frames start black; each object is drawn with max(), so overlapping objects stay visible.
#pragma once

#include <cstdint>

#include "../autograd/tensor.h"

namespace axiom::data {

// images: uint8 [N, h, w]  ->  videos: uint8 [count, frames, canvas, canvas]   (canvas >= h, w)
Tensor moving_objects(const Tensor& images, int64_t count, int64_t frames, int64_t canvas, int64_t objects_per_video,
                      uint64_t seed, int64_t max_speed = 3);

}  // namespace axiom::data
