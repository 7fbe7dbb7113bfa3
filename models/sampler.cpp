#include "models/sampler.h"

#include <vector>

#include "autograd/factory.h"
#include "core/error.h"

namespace axiom::models {

namespace {

// Uniforms in [0, 1) for row i of channel c of every image: [N, W] in the logits' dtype. Pixel
// (c, i, j) of image n is drawn with counter ((n C + c) H + i) W + j of the seed's stream
// (core/random.h): the same for any batch size and in any order, so image n is the same whether it
// is drawn alone or in a batch, by either sampler. The uniforms are drawn on the CPU, one image at a
// time, and moved at once: the same seed gives the same uniforms on every device.
Tensor uniforms_of_row(const ImageModelConfig& c, const SampleOptions& options, int64_t channel, int64_t row,
                       Dtype dtype, Device device) {
  std::vector<Tensor> images;
  for (int64_t n = 0; n < options.count; ++n) {
    Generator gen(options.seed);
    gen.set_state(options.seed, static_cast<uint64_t>(((n * c.channels + channel) * c.height + row) * c.width));
    images.push_back(axiom::uniform({c.width}, 0, 1, gen, dtype));
  }
  return stack(images, 0).to(device);  // [N, W]
}

// What both samplers share: the options, the uniforms of the row being drawn, and the images being
// filled in (int64 [N, C, H, W], zeros until drawn), all on the model's device.
struct Drawing {
  Drawing(const ImageModel& model, const SampleOptions& options) : config(model.config()), options(options) {
    if (options.count <= 0) throw Error("sample", "count must be positive, got ", options.count);
    if (!(options.temperature > 0)) throw Error("sample", "temperature must be > 0, got ", options.temperature);
    images = axiom::zeros({options.count, config.channels, config.height, config.width}, Dtype::int64, model.device());
  }

  // int64 [N]: every image generates `channel`
  Tensor channel_of_every_image(int64_t channel) const {
    return axiom::full({options.count}, static_cast<double>(channel), Dtype::int64, images.device());
  }

  // Draws pixel (c, i, j) of every image from that pixel's logits [N, 256], value v with probability
  // softmax(logits / T)_v (core/categorical.h), and writes it in. Pixels come in raster order, so
  // the uniforms are drawn once per row.
  void draw(const Tensor& logits, int64_t c, int64_t i, int64_t j) {
    if (c != uniforms_channel || i != uniforms_row) {
      uniforms = uniforms_of_row(config, options, c, i, logits.dtype(), logits.device());
      uniforms_channel = c, uniforms_row = i;
    }
    const Tensor value = categorical(logits, uniforms.select(1, j), options.temperature);  // [N]
    copy_into(value, images.select(1, c).select(1, i).select(1, j));
  }

  Tensor result() const {
    const Tensor pixels = images.to(Dtype::uint8).to(Device::cpu());
    return config.channels == 1 ? pixels.squeeze(1) : pixels;
  }

  const ImageModelConfig& config;
  SampleOptions options;
  Tensor images;
  Tensor uniforms;  // [N, W], in the logits' dtype: row uniforms_row of channel uniforms_channel
  int64_t uniforms_channel = -1, uniforms_row = -1;
};

}  // namespace

Tensor sample_naive(const ImageModel& model, const SampleOptions& options) {
  const ImageModelConfig& c = model.config();
  NoGrad no_grad;
  Drawing drawing(model, options);
  for (int64_t channel = 0; channel < c.channels; ++channel) {
    const Tensor which = drawing.channel_of_every_image(channel);
    for (int64_t i = 0; i < c.height; ++i) {
      for (int64_t j = 0; j < c.width; ++j) {
        const Tensor logits = model.logits(drawing.images, which);  // the whole model, every time
        drawing.draw(logits.select(1, i).select(1, j), channel, i, j);
      }
    }
  }
  return drawing.result();
}

Tensor sample_fast(const ImageModel& model, const SampleOptions& options) {
  const ImageModelConfig& c = model.config();
  NoGrad no_grad;
  Drawing drawing(model, options);
  for (int64_t channel = 0; channel < c.channels; ++channel) {
    const std::unique_ptr<PixelDecoder> decoder = model.start_decoding(drawing.images, channel);
    for (int64_t i = 0; i < c.height; ++i) {
      for (int64_t j = 0; j < c.width; ++j) drawing.draw(decoder->next(), channel, i, j);  // logits [N, 256]
    }
  }
  return drawing.result();
}

}  // namespace axiom::models
