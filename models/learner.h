// What models::Trainer trains and scores (training/training.h), whatever the model: a module with a loss on
// a batch of examples, and a score of examples that adds up over batches and processes. A
// dataset's examples are the rows of its columns (data::TensorDataset): images alone for an image
// model (image_model.h), images and their labels for a classifier (classifiers.h).
#pragma once

#include <cstdint>
#include <vector>

#include "../nn/nn.h"

namespace axiom::models {

// A batch's (or a dataset's) score as sums, which add up over batches and processes.
struct Score {
  double loss = 0;       // the loss summed over its terms, in the training loss's unit
  int64_t count = 0;     // the terms: every value of every image, or every example
  int64_t examples = 0;  // how many examples were scored
  int64_t correct = 0;   // a classifier's: examples whose most likely class is their label
  double mean_loss() const { return loss / static_cast<double>(count); }  // bits/dim, or nats an example
  double accuracy() const { return static_cast<double>(correct) / static_cast<double>(examples); }
};

class Learner : public nn::Module {
 public:
  virtual const char* name() const = 0;  // the class's name, which errors begin with: "AxialTransformer"
  // Where the parameters are (Module::to moves them). The columns given to batch_loss and
  // batch_score may be on the CPU or on this device: they are moved here.
  virtual Device device() const = 0;
  virtual int64_t columns() const = 0;  // a batch's columns: 1 (images) or 2 (images, labels)
  // columns: [B, ...] each. The loss to minimise: a scalar, the mean over the batch's terms, in
  // the unit Score::loss counts. Random draws (dropout, an image model's channels) come from gen.
  virtual Tensor batch_loss(const std::vector<Tensor>& columns, Generator& gen) const = 0;
  // The batch's sums, without a graph, in the mode (train or eval) the model is in.
  virtual Score batch_score(const std::vector<Tensor>& columns) const = 0;
  // Activation checkpointing of the first `blocks` transformer blocks (image_model.h); a model
  // without it refuses blocks > 0.
  virtual void set_checkpoint_blocks(int64_t blocks);
};

}  // namespace axiom::models
