#include "data/datasets.h"

#include <filesystem>

#include "core/error.h"
#include "data/cifar.h"
#include "data/idx.h"
#include "data/npy.h"
#include "data/video.h"

namespace axiom::data {

namespace {

std::string in_root(const DatasetOptions& options, const std::string& file) {
  return (std::filesystem::path(options.root) / file).string();
}

std::string required_root(const std::string& name, const DatasetOptions& options) {
  if (options.root.empty()) throw Error("dataset", name, " needs the directory of its files (--data-dir)");
  return options.root;
}

Tensor cifar10(const std::string& split, const DatasetOptions& options) {
  required_root("cifar10", options);
  std::vector<std::string> files;
  if (split == "train") {
    for (int i = 1; i <= 5; ++i) files.push_back(in_root(options, "data_batch_" + std::to_string(i) + ".bin"));
  } else {
    files.push_back(in_root(options, "test_batch.bin"));
  }
  return read_cifar(files, 1).images;
}

// Videos of items from the same split of Fashion-MNIST, so that test videos show unseen items.
Tensor moving_fashion_mnist(const std::string& split, const DatasetOptions& options) {
  const std::string root = options.root.empty() ? kFashionMnistRoot : options.root;
  const Tensor items = fashion_mnist(split, root).images;
  const bool train = split == "train";
  return moving_objects(items, train ? 20000 : 1000, options.frames, options.canvas, 2, train ? 1 : 2);
}

// The first nine tenths of the array are "train", the last tenth "test".
Tensor npy_images(const std::string& path, const std::string& split) {
  const Tensor all = read_npy(path);
  if (all.dtype() != Dtype::uint8 || (all.dim() != 3 && all.dim() != 4)) {
    throw Error("dataset", "'", path, "' must hold uint8 images [N, H, W] or [N, C, H, W], got ", all.dtype(), " ",
                all.shape());
  }
  const int64_t held_out = all.size(0) / 10;
  if (held_out == 0) throw Error("dataset", "'", path, "' has ", all.size(0), " images; at least 10 are needed");
  const int64_t train = all.size(0) - held_out;
  return split == "train" ? all.narrow(0, 0, train) : all.narrow(0, train, held_out);
}

}  // namespace

const char* dataset_names() { return "fashion-mnist, mnist, cifar10, moving-fashion-mnist, or a .npy file"; }
const char* labelled_dataset_names() { return "fashion-mnist and mnist"; }

namespace {
Tensor images_of(const std::string& name, const std::string& split, const DatasetOptions& options) {
  if (name == "fashion-mnist")
    return fashion_mnist(split, options.root.empty() ? kFashionMnistRoot : options.root).images;
  if (name == "mnist") return mnist(split, required_root(name, options)).images;
  if (name == "cifar10") return cifar10(split, options);
  if (name == "moving-fashion-mnist") return moving_fashion_mnist(split, options);
  if (name.ends_with(".npy")) return npy_images(name, split);
  throw Error("dataset", "unknown dataset \"", name, "\" (", dataset_names(), ")");
}
}  // namespace

Tensor load_images(const std::string& name, const std::string& split, const DatasetOptions& options) {
  if (split != "train" && split != "test")
    throw Error("dataset", "split must be \"train\" or \"test\", got \"", split, "\"");
  const Tensor images = images_of(name, split, options);
  if (images.size(0) == 0) {
    throw Error("dataset", "the ", split, " split of ", name, options.root.empty() ? "" : " in '" + options.root + "'",
                " holds no images");
  }
  return images;
}

ImageDataset load_labelled(const std::string& name, const std::string& split, const DatasetOptions& options) {
  if (split != "train" && split != "test")
    throw Error("dataset", "split must be \"train\" or \"test\", got \"", split, "\"");
  ImageDataset labelled;
  if (name == "fashion-mnist") {
    labelled = fashion_mnist(split, options.root.empty() ? kFashionMnistRoot : options.root);
  } else if (name == "mnist") {
    labelled = mnist(split, required_root(name, options));
  } else {
    throw Error("dataset", "\"", name, "\" has no labels to classify (", labelled_dataset_names(), " have)");
  }
  if (labelled.size() == 0) {
    throw Error("dataset", "the ", split, " split of ", name, options.root.empty() ? "" : " in '" + options.root + "'",
                " holds no images");
  }
  return labelled;
}

}  // namespace axiom::data
