#include "models/sampler.h"

#include <cmath>

#include "autograd/factory.h"
#include "core/error.h"

namespace axiom::models {

namespace {

constexpr int64_t kValues = 256;

// Standard Gumbel noise, -log(-log U), for row i of channel c of every image: [N, W, 256] in the
// logits' dtype. Value v of pixel (c, i, j) of image n is drawn from counter
//   (((n C + c) H + i) W + j) 256 + v
// of the seed's stream (core/random.h): the same for any batch size and in any order, so image n is
// the same whether it is drawn alone or in a batch, by either sampler. The uniforms are drawn on the
// CPU, one image at a time, and moved at once: the same seed gives the same noise on every device.
Tensor gumbel_noise_row(const ImageModelConfig& c, const SampleOptions& options, int64_t channel, int64_t row,
                        Dtype dtype, Device device) {
  const int64_t per_row = c.width * kValues;
  std::vector<Tensor> images;
  for (int64_t n = 0; n < options.count; ++n) {
    Generator gen(options.seed);
    gen.set_state(options.seed, static_cast<uint64_t>(((n * c.channels + channel) * c.height + row) * per_row));
    images.push_back(axiom::uniform({c.width, kValues}, 0, 1, gen, dtype));
  }
  const Tensor u = stack(images, 0).to(device);  // [N, W, 256]
  return neg(log(neg(log(u))));
}

// argmax_v (logits / T + noise) for a [N, 256] slice of logits and noise.
Tensor pick(const Tensor& logits, const Tensor& noise, double temperature) {
  return argmax(add(div(logits, temperature), noise), -1);
}

// What both samplers share: the options, the noise of the row being drawn, and the images being
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

  // Samples pixel (c, i, j) of every image from that pixel's logits [N, 256], and writes it in.
  // Pixels come in raster order, so the noise is drawn once per row.
  void draw(const Tensor& logits, int64_t c, int64_t i, int64_t j) {
    if (c != noise_channel || i != noise_row) {
      noise = gumbel_noise_row(config, options, c, i, logits.dtype(), logits.device());
      noise_channel = c, noise_row = i;
    }
    const Tensor value = pick(logits, noise.select(1, j), options.temperature);  // [N]
    copy_into(value, images.select(1, c).select(1, i).select(1, j));
  }

  Tensor result() const {
    const Tensor pixels = images.to(Dtype::uint8).to(Device::cpu());
    return config.channels == 1 ? pixels.squeeze(1) : pixels;
  }

  const ImageModelConfig& config;
  SampleOptions options;
  Tensor images;
  Tensor noise;  // [N, W, 256], in the logits' dtype: row noise_row of channel noise_channel
  int64_t noise_channel = -1, noise_row = -1;
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
