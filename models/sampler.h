// Drawing images from an image model (image_model.h), in raster order, channel after channel.
//
// Both samplers draw each pixel by inverse-CDF sampling (categorical, core/categorical.h): the
// value of pixel (c, i, j) of image n is the first v whose cumulative softmax(logits / T) passes
// the uniform U[n, c, i, j], a pure function of the seed and (n, c, i, j), drawn a row at a time.
// Given the same seed they therefore make the same images, whatever order they compute in and
// whatever the batch size.
//
// naive:          the whole model once per pixel: O(C H W) full evaluations.
// fast:           each pixel through the model's PixelDecoder (ImageModel::start_decoding), which
//                 keeps what it needs of the pixels already drawn. The Axial Transformer's is the
//                 semi-parallel sampler (section 3.2.1): the channel encoder once per channel, the
//                 outer decoder once per row, on that row alone, with a key/value cache of the
//                 rows above it, and the inner decoder once per pixel, on that pixel alone, with a
//                 key/value cache of the pixels to its left. A RasterTransformer has no rows to
//                 share: its blocks run once per pixel, with a key/value cache of the pixels before it.
#pragma once

#include "image_model.h"

namespace axiom::models {

struct SampleOptions {
  int64_t count = 1;
  double temperature = 1.0;
  uint64_t seed = 0;
};

// uint8 [count, H, W] for one channel, [count, C, H, W] for more.
Tensor sample_naive(const ImageModel& model, const SampleOptions& options);
Tensor sample_fast(const ImageModel& model, const SampleOptions& options);

}  // namespace axiom::models
