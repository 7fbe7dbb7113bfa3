// IDX files: the format of MNIST and Fashion-MNIST (http://yann.lecun.com/exdb/mnist/).
//
//   bytes 0-1   zero
//   byte  2     element type: 0x08 = uint8 (the only one read here)
//   byte  3     rank R (images: 3, labels: 1)
//   4 x R bytes the sizes, big-endian uint32 (images: N, 28, 28; labels: N)
//   ...         the elements, row-major
//
// The file may be gzip-compressed (as distributed: *.gz); it is recognised by its first bytes,
// whatever its name. The declared sizes are checked (product without overflow, at most 1 GiB, and
// no more than the file can hold) before anything is allocated, and the data must end exactly
// where the header says. Errors name the file, the field and the byte offset (in the decompressed
// data for .gz files).
#pragma once

#include <string>

#include "../autograd/tensor.h"
#include "image_dataset.h"

namespace axiom::data {

// uint8 tensor of the declared shape: [N, 28, 28] for MNIST images, [N] for labels.
Tensor read_idx(const std::string& path);

// Images [N, H, W] and labels (read as uint8, returned as int64 [N]) from two IDX files; the counts
// must agree and every label must be below `classes`.
ImageDataset read_idx_dataset(const std::string& images_path, const std::string& labels_path, int64_t classes = 10);

// Fashion-MNIST (Xiao et al., 2017) from `root`, where Debian's dataset-fashion-mnist package puts it:
//   split "train": train-images-idx3-ubyte(.gz) + train-labels-idx1-ubyte(.gz)  -> 60000 images
//   split "test":  t10k-images-idx3-ubyte(.gz)  + t10k-labels-idx1-ubyte(.gz)   -> 10000 images
// images uint8 [N, 28, 28], labels int64 [N] in 0..9. The plain file wins over the .gz one when
// both are there. A missing file is an Error naming the directory and the names it looked for.
inline constexpr const char* kFashionMnistRoot = "/usr/share/datasets/fashion-mnist";
ImageDataset fashion_mnist(const std::string& split, const std::string& root = kFashionMnistRoot);
// MNIST (LeCun et al., 1998): the same four file names, in `root` (no Debian package ships it).
ImageDataset mnist(const std::string& split, const std::string& root);

}  // namespace axiom::data
