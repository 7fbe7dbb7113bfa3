// CIFAR-10 and CIFAR-100, binary version (https://www.cs.toronto.edu/~kriz/cifar.html).
//
// A file is a run of records, no header:
//   CIFAR-10:   1 label byte (0..9)                   + 3072 pixel bytes
//   CIFAR-100:  2 label bytes (coarse 0..19, fine 0..99) + 3072 pixel bytes
// The pixels are 1024 red, then 1024 green, then 1024 blue bytes, each a 32 x 32 image row-major.
// A file's size must be a whole number of records; labels must be in range (CIFAR-100: the fine
// label is returned). Errors name the file and the byte.
#pragma once

#include <string>
#include <vector>

#include "image_dataset.h"

namespace axiom::data {

// images uint8 [N, 3, 32, 32], labels int64 [N], from the files in order (e.g. data_batch_1.bin
// ... data_batch_5.bin). label_bytes: 1 for CIFAR-10, 2 for CIFAR-100.
ImageDataset read_cifar(const std::vector<std::string>& files, int label_bytes);

}  // namespace axiom::data
