// The CIFAR binary reader: sizes checked first, then one allocation, then records copied apart
// into images and labels.
#include "data/cifar.h"

#include <cstring>

#include "core/error.h"
#include "core/factory.h"
#include "data/byte_stream.h"

namespace axiom::data {

ImageDataset read_cifar(const std::vector<std::string>& files, int label_bytes) {
  constexpr int64_t kPixels = 3 * 32 * 32;
  if (label_bytes != 1 && label_bytes != 2)
    throw Error("cifar", "label_bytes must be 1 (CIFAR-10) or 2 (CIFAR-100), got ", label_bytes);
  if (files.empty()) throw Error("cifar", "no files given");
  const int64_t record = label_bytes + kPixels;
  const int64_t classes = label_bytes == 1 ? 10 : 100;

  // Sizes first: every file a whole number of records.
  int64_t total = 0;
  for (const std::string& path : files) {
    const uint64_t size = file_size(path, "cifar");
    if (size == 0) throw Error("cifar", quoted(path), " is empty: a CIFAR batch file holds ", record, "-byte records");
    if (size % record != 0) {
      throw Error("cifar", quoted(path), ": its size, ", size, " bytes, is not a whole number of ", record,
                  "-byte records (", size / record, " records and ", size % record, " bytes over)");
    }
    total += static_cast<int64_t>(size / record);
  }

  core::Tensor images = core::empty({total, 3, 32, 32}, Dtype::uint8);
  core::Tensor labels = core::empty({total}, Dtype::int64);
  uint8_t* pixels = images.data<uint8_t>();
  int64_t* label = labels.data<int64_t>();
  std::vector<unsigned char> buffer(record);
  int64_t n = 0;
  for (const std::string& path : files) {
    auto stream = open_file(path, "cifar");  // (a file that changed size since is caught as truncated)
    const int64_t count = static_cast<int64_t>(file_size(path, "cifar")) / record;
    for (int64_t i = 0; i < count && n < total; ++i, ++n) {
      stream->read(buffer.data(), record, "cifar", "record " + std::to_string(i));
      if (label_bytes == 2 && buffer[0] >= 20) {
        throw Error("cifar", stream->origin(), ": coarse label ", int{buffer[0]}, " of record ", i, " at byte ",
                    i * record, " is not below 20");
      }
      const int value = buffer[label_bytes - 1];  // CIFAR-100: the fine label, after the coarse one
      if (value >= classes) {
        throw Error("cifar", stream->origin(), ": label ", value, " of record ", i, " at byte ",
                    i * record + label_bytes - 1, " is not below ", classes);
      }
      label[n] = value;
      std::memcpy(pixels + n * kPixels, buffer.data() + label_bytes, kPixels);
    }
  }
  if (n != total) throw Error("cifar", "the files changed while being read (", n, " of ", total, " records)");
  return {Tensor(images), Tensor(labels)};
}

}  // namespace axiom::data
