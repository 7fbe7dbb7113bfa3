// Image classifiers for `axiom classify`: which of 10 kinds of garment a Fashion-MNIST image shows.
// Two ways of reading an image that the lectures compare:
//
// VisionTransformer (Dosovitskiy et al., 2020): cut the image into P x P patches, embed each one,
// put a learned class token in front, add learned positions, run unmasked transformer blocks over
// the sequence, and classify from the class token's final vector:
//   patches = image as [B, N, P*P]               N = (H/P)(W/P) patches, raster order
//   x       = [cls; patches W_e] + positions     [B, N + 1, D]
//   x       = TransformerBlock(x) x layers       attention over all N + 1 tokens, unmasked
//   logits  = Dense(LayerNorm(x[:, 0]))          [B, classes]
//
// RowReader: a recurrent network (GRU or LSTM) reads the image one row at a time, each row a
// W-vector, and classifies from its last output:
//   h_H     = RNN(rows 0 .. H-1)                 [B, hidden]
//   logits  = Dense(h_H)                         [B, classes]
//
// Both take images as float [B, H, W] in [0, 1] (`pixels_to_unit`).
#pragma once

#include <memory>
#include <string>

#include "../nn/nn.h"

namespace axiom::models {

// uint8 [B, H, W] (0..255) -> float32 [B, H, W] in [0, 1]
Tensor pixels_to_unit(const Tensor& images);

class Classifier : public nn::Module {
 public:
  virtual Tensor forward(const Tensor& images) const = 0;  // [B, H, W] in [0, 1] -> logits [B, classes]
};

struct VisionTransformerOptions {
  int64_t patch = 4;        // P: the image is cut into P x P squares
  int64_t features = 64;    // D
  int64_t heads = 4;
  int64_t layers = 4;       // transformer blocks
  int64_t ff_multiple = 2;  // feed-forward width ff_multiple * D
  int64_t classes = 10;
};

class VisionTransformer : public Classifier {
 public:
  VisionTransformer(int64_t height, int64_t width, const VisionTransformerOptions& options, Generator& gen);
  Tensor forward(const Tensor& images) const override;

  // [B, H, W] -> [B, N, P*P]: patch (i, j) is row i * (W/P) + j, its pixels in raster order.
  Tensor patches(const Tensor& images) const;

 private:
  int64_t height_, width_, patch_;
  std::shared_ptr<nn::Dense> embed_;      // P*P -> D
  Tensor class_token_;                    // [1, 1, D]
  Tensor positions_;                      // [N + 1, D]
  std::shared_ptr<nn::ModuleList<nn::TransformerBlock>> blocks_;
  std::shared_ptr<nn::LayerNorm> norm_;
  std::shared_ptr<nn::Dense> head_;       // D -> classes
};

class RowReader : public Classifier {
 public:
  // cell: "gru" or "lstm"
  RowReader(const std::string& cell, int64_t width, int64_t hidden, int64_t classes, Generator& gen);
  Tensor forward(const Tensor& images) const override;

 private:
  std::shared_ptr<nn::GRU> gru_;    // one of the two
  std::shared_ptr<nn::LSTM> lstm_;
  std::shared_ptr<nn::Dense> head_;  // hidden -> classes
};

}  // namespace axiom::models
