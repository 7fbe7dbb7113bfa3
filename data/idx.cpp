// The IDX reader: header -> checked sizes -> one allocation -> the elements -> nothing after them.
#include "data/idx.h"

#include <algorithm>
#include <filesystem>
#include <limits>

#include "core/error.h"
#include "core/factory.h"
#include "data/byte_stream.h"
#include "autograd/internal.h"

namespace axiom::data {

namespace {

constexpr uint8_t kTypeUint8 = 0x08;
constexpr int kMaxRank = 8;
constexpr uint64_t kMaxBytes = uint64_t{1} << 30;  // 1 GiB: far above MNIST's 47 MB

// A readable name for an IDX element type code.
const char* type_name(int code) {
  switch (code) {
    case 0x08: return "uint8";
    case 0x09: return "int8";
    case 0x0B: return "int16";
    case 0x0C: return "int32";
    case 0x0D: return "float32";
    case 0x0E: return "float64";
    default: return "unknown";
  }
}

// The first existing file of `names` in `dir`, or an Error listing what was looked for.
std::string find_one(const std::filesystem::path& dir, const std::vector<std::string>& names, const char* op,
                     const char* hint) {
  std::error_code ec;  // (a directory name too long: none is found, not an exception)
  for (const auto& name : names) {
    if (std::filesystem::is_regular_file(dir / name, ec)) return (dir / name).string();
  }
  std::string looked;
  for (const auto& name : names) looked += (looked.empty() ? "" : ", ") + name;
  throw Error(op, "none of ", looked, " is in '", dir.string(), "' (", hint, ")");
}

}  // namespace

Tensor read_idx(const std::string& path) {
  auto stream = open_file(path, "idx");
  const std::string& origin = stream->origin();

  unsigned char magic[4];
  stream->read(magic, 4, "idx", "magic number (bytes 0-3)");
  if (magic[0] != 0 || magic[1] != 0) {
    throw Error("idx", origin, ": bad magic number at byte 0: ", big_endian(magic, 4),
                " (an IDX file starts with two zero bytes, a type code and the rank, e.g. 0x00000803)");
  }
  if (magic[2] != kTypeUint8) {
    throw Error("idx", origin, ": element type 0x", std::hex, int{magic[2]}, std::dec, " (", type_name(magic[2]),
                ") at byte 2 is not supported; only 0x08 (uint8) is");
  }
  const int rank = magic[3];
  if (rank < 1 || rank > kMaxRank) throw Error("idx", origin, ": rank ", rank, " at byte 3 is not in 1..", kMaxRank);

  // The sizes: R big-endian uint32; their product (the element count) is checked as it grows.
  // A size of 0 makes the count 0 but not the other sizes harmless (they still multiply into the
  // strides), so the limit applies to the product with zeros counted as ones.
  core::Shape shape;
  uint64_t count = 1, extent = 1;
  for (int axis = 0; axis < rank; ++axis) {
    unsigned char bytes[4];
    const uint64_t at = stream->position();
    stream->read(bytes, 4, "idx", "size of axis " + std::to_string(axis));
    const uint64_t size = big_endian(bytes, 4);
    if (size != 0 && extent > kMaxBytes / size) {
      throw Error("idx", origin, ": the sizes (axis ", axis, " = ", size, " at byte ", at, ") declare more than the ",
                  kMaxBytes, "-byte limit of elements");
    }
    count *= size, extent *= std::max<uint64_t>(size, 1);
    shape.push_back(static_cast<int64_t>(size));
  }
  stream->check_available(count, "idx", "elements");

  core::Tensor out = core::empty(shape, Dtype::uint8);  // [d0, ..., dR-1]
  stream->read(out.data<uint8_t>(), count, "idx", "elements");
  stream->expect_end("idx");
  return Tensor(out);
}

ImageDataset read_idx_dataset(const std::string& images_path, const std::string& labels_path, int64_t classes) {
  core::Tensor images = core_tensor(read_idx(images_path));  // uint8 [N, H, W]
  core::Tensor labels = core_tensor(read_idx(labels_path));  // uint8 [N]
  if (images.dim() != 3)
    throw Error("idx", quoted(images_path), ": images must have rank 3 [N, H, W], got ", images.shape());
  if (labels.dim() != 1) throw Error("idx", quoted(labels_path), ": labels must have rank 1 [N], got ", labels.shape());
  if (images.size(0) != labels.size(0)) {
    throw Error("idx", quoted(images_path), " holds ", images.size(0), " images but ", quoted(labels_path), " holds ",
                labels.size(0), " labels");
  }
  const uint8_t* raw = labels.data<uint8_t>();
  for (int64_t i = 0; i < labels.numel(); ++i) {
    if (raw[i] >= classes) {
      throw Error("idx", quoted(labels_path), ": label ", int{raw[i]}, " of example ", i, " (byte ", 8 + i,
                  ") is not below the ", classes, " classes");
    }
  }
  return {Tensor(images), Tensor(labels.to(Dtype::int64))};
}

// MNIST and Fashion-MNIST share their file names: {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz].
static ImageDataset mnist_format(const std::string& split, const std::string& root, const char* op,
                                 const char* package) {
  if (split != "train" && split != "test") throw Error(op, "split must be \"train\" or \"test\", got \"", split, "\"");
  const std::string prefix = split == "train" ? "train" : "t10k";
  const std::string images = prefix + "-images-idx3-ubyte", labels = prefix + "-labels-idx1-ubyte";
  const std::filesystem::path dir(root);
  const std::string images_path = find_one(dir, {images, images + ".gz"}, op, package);
  const std::string labels_path = find_one(dir, {labels, labels + ".gz"}, op, package);
  return read_idx_dataset(images_path, labels_path, 10);
}

ImageDataset fashion_mnist(const std::string& split, const std::string& root) {
  return mnist_format(split, root, "fashion_mnist", "on Debian: apt-get install dataset-fashion-mnist");
}

ImageDataset mnist(const std::string& split, const std::string& root) {
  return mnist_format(split, root, "mnist", "MNIST's four files from http://yann.lecun.com/exdb/mnist/");
}

}  // namespace axiom::data
