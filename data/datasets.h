// Image datasets by name, as `axiom train --data NAME` names them. Every one gives uint8 images
// [N, H, W] (one channel) or [N, C, H, W] (channels, or the frames of a video), values 0..255.
//
//   name                   split "train" / "test"                          shape
//   fashion-mnist          Fashion-MNIST's IDX files in `root`              [60000 | 10000, 28, 28]
//                          (default /usr/share/datasets/fashion-mnist)
//   mnist                  MNIST's IDX files in `root` (same file names)    [60000 | 10000, 28, 28]
//   cifar10                CIFAR-10 binary: data_batch_1..5.bin |           [50000 | 10000, 3, 32, 32]
//                          test_batch.bin in `root`
//   moving-fashion-mnist   Fashion-MNIST items (from the same split)        [20000 | 1000, T, S, S]
//                          moving on an S x S canvas for T frames
//                          (data/video.h; 2 items per video, a fixed seed per split)
//   a path to a .npy file  a uint8 array [N, H, W] or [N, C, H, W]:          all but the last N/10 | the last N/10
//                          the last tenth is held out as "test"
#pragma once

#include <string>

#include "../autograd/tensor.h"
#include "image_dataset.h"

namespace axiom::data {

struct DatasetOptions {
  std::string root;     // where the files are; "" = the dataset's default place (fashion-mnist only)
  int64_t frames = 4;   // moving-fashion-mnist: T
  int64_t canvas = 32;  // moving-fashion-mnist: S
};

// uint8 [N, H, W] or [N, C, H, W]; an Error names the dataset, the split and what is missing.
Tensor load_images(const std::string& name, const std::string& split, const DatasetOptions& options = {});

// "fashion-mnist, mnist, cifar10, moving-fashion-mnist, or a .npy file": for help texts and errors.
const char* dataset_names();

// The images [N, H, W] and their labels (int64 [N], 0..9) of a dataset of grey images that has
// labels: fashion-mnist or mnist (what `axiom classify` learns); an Error for another name.
ImageDataset load_labelled(const std::string& name, const std::string& split, const DatasetOptions& options = {});
const char* labelled_dataset_names();  // "fashion-mnist and mnist"

}  // namespace axiom::data
