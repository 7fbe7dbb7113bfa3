// ImageDataset: images and their labels, as the readers return them.
#pragma once

#include "../autograd/tensor.h"

namespace axiom::data {

struct ImageDataset {
  Tensor images;  // uint8 [N, H, W] (grey) or [N, C, H, W]
  Tensor labels;  // int64 [N]
  int64_t size() const { return labels.defined() ? labels.size(0) : 0; }
};

}  // namespace axiom::data
