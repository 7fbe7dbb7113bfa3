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
// Both take images as float [B, H, W] in [0, 1] (`pixels_to_unit`). As Learners (learner.h) they
// train on examples of two columns, uint8 images [B, H, W] and int64 labels [B], with the
// cross-entropy of the labels in nats, and score the share of examples they classify right.
// A ClassifierConfig says which classifier and its sizes; make_classifier makes it.
#pragma once

#include <memory>
#include <string>

#include "learner.h"

namespace axiom::models {

// uint8 [B, H, W] (0..255) -> float32 [B, H, W] in [0, 1]
Tensor pixels_to_unit(const Tensor& images);

// Which classifier, written by its name in a config: a Vision Transformer, or a GRU or an LSTM
// reading rows.
enum class ClassifierKind { vit, gru, lstm };
const char* name_of(ClassifierKind kind);

// A classifier's config, as checkpoints record it:
//   {"classifier": "vit", "height": 28, "width": 28, "classes": 10, "features": 64,
//    "heads": 4, "layers": 4, "ff_multiple": 2, "patch": 4}
struct ClassifierConfig {
  ClassifierKind classifier = ClassifierKind::vit;
  int64_t height = 28, width = 28;  // the images'
  int64_t classes = 10;
  int64_t features = 64;    // the ViT's D, or the RNN's hidden size
  int64_t heads = 4;        // the ViT's attention heads (they divide features)
  int64_t layers = 4;       // the ViT's transformer blocks
  int64_t ff_multiple = 2;  // the ViT's feed-forward width, ff_multiple * D
  int64_t patch = 4;        // the ViT's patch side P (it divides height and width)

  void validate() const;  // throws axiom::Error("[config] ...") naming the bad key and value
  std::string to_json() const;
};
ClassifierConfig classifier_config_from_json(const std::string& text, const std::string& origin);

class Classifier : public Learner {
 public:
  virtual Tensor forward(const Tensor& images) const = 0;  // [B, H, W] in [0, 1] -> logits [B, classes]
  Device device() const override;
  int64_t columns() const override { return 2; }
  // columns: uint8 images [B, H, W], int64 labels [B]. The mean cross-entropy, in nats.
  Tensor batch_loss(const std::vector<Tensor>& columns, Generator& gen) const override;
  // The cross-entropy summed over the examples, and how many have their label as the most likely class.
  Score batch_score(const std::vector<Tensor>& columns) const override;

 private:
  Tensor logits_of(const std::vector<Tensor>& columns, Tensor& labels) const;  // checks, moves, runs forward
};

std::unique_ptr<Classifier> make_classifier(const ClassifierConfig& config, Generator& gen);

struct VisionTransformerOptions {
  int64_t patch = 4;      // P: the image is cut into P x P squares
  int64_t features = 64;  // D
  int64_t heads = 4;
  int64_t layers = 4;       // transformer blocks
  int64_t ff_multiple = 2;  // feed-forward width ff_multiple * D
  int64_t classes = 10;
};

class VisionTransformer : public Classifier {
 public:
  VisionTransformer(int64_t height, int64_t width, const VisionTransformerOptions& options, Generator& gen);
  const char* name() const override { return "VisionTransformer"; }
  Tensor forward(const Tensor& images) const override;

  // [B, H, W] -> [B, N, P*P]: patch (i, j) is row i * (W/P) + j, its pixels in raster order.
  Tensor patches(const Tensor& images) const;

 private:
  int64_t height_, width_, patch_;
  std::shared_ptr<nn::Dense> embed_;  // P*P -> D
  Tensor class_token_;                // [1, 1, D]
  Tensor positions_;                  // [N + 1, D]
  std::shared_ptr<nn::ModuleList<nn::TransformerBlock>> blocks_;
  std::shared_ptr<nn::LayerNorm> norm_;
  std::shared_ptr<nn::Dense> head_;  // D -> classes
};

class RowReader : public Classifier {
 public:
  // cell: gru or lstm
  RowReader(ClassifierKind cell, int64_t width, int64_t hidden, int64_t classes, Generator& gen);
  const char* name() const override { return "RowReader"; }
  Tensor forward(const Tensor& images) const override;

 private:
  std::shared_ptr<nn::GRU> gru_;  // one of the two
  std::shared_ptr<nn::LSTM> lstm_;
  std::shared_ptr<nn::Dense> head_;  // hidden -> classes
};

}  // namespace axiom::models
