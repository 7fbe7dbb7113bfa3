// DataLoader: the epoch order (a seeded Fisher-Yates shuffle), batches as index_select of rows, and
// the prefetching iterator.
#include "data/loader.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "core/error.h"
#include "core/factory.h"
#include "core/launch.h"
#include "core/random.h"
#include "autograd/internal.h"

namespace axiom::data {

DataLoader::DataLoader(TensorDataset dataset, LoaderOptions options) : dataset_(std::move(dataset)), options_(options) {
  if (options_.batch_size <= 0) throw Error("DataLoader", "batch_size must be positive, got ", options_.batch_size);
  if (dataset_.columns.empty()) throw Error("DataLoader", "the dataset has no columns");
  for (size_t c = 0; c < dataset_.columns.size(); ++c) {
    if (!dataset_.columns[c].defined()) throw Error("DataLoader", "column ", c, " is undefined");
    const core::Tensor& column = core_tensor(dataset_.columns[c]);
    if (column.dim() == 0)
      throw Error("DataLoader", "column ", c, " is a scalar; columns need an example axis [N, ...]");
    if (column.size(0) != dataset_.columns[0].size(0)) {
      throw Error("DataLoader", "columns have different numbers of examples: column 0 has shape ",
                  dataset_.columns[0].shape(), ", column ", c, " has shape ", column.shape());
    }
  }
  examples_ = dataset_.columns[0].size(0);
}

int64_t DataLoader::size() const {
  return options_.drop_last ? examples_ / options_.batch_size
                            : (examples_ + options_.batch_size - 1) / options_.batch_size;
}

std::vector<int64_t> DataLoader::order(int64_t epoch) const {
  std::vector<int64_t> order(examples_);
  std::iota(order.begin(), order.end(), 0);
  if (!options_.shuffle) return order;
  // Fisher-Yates: swap position i with a uniform j in [0, i], from counter epoch*N + i. The modulo
  // bias of a 64-bit draw is below N / 2^64.
  const uint64_t first = static_cast<uint64_t>(epoch) * static_cast<uint64_t>(examples_);
  for (int64_t i = examples_ - 1; i > 0; --i) {
    const auto words = core::philox4x32(options_.seed, first + static_cast<uint64_t>(i));
    const uint64_t draw = (uint64_t{words[0]} << 32) | words[1];
    std::swap(order[i], order[draw % static_cast<uint64_t>(i + 1)]);
  }
  return order;
}

Batch DataLoader::gather(const Tensor& order, int64_t index) const {
  const int64_t begin = index * options_.batch_size;
  const core::Tensor rows =
      core_tensor(order).narrow(0, begin, std::min(options_.batch_size, examples_ - begin));  // int64 [B]
  Batch batch;
  for (const Tensor& column : dataset_.columns)
    batch.columns.emplace_back(core::index_select(core_tensor(column), 0, rows));
  return batch;
}

Batch DataLoader::batch(int64_t epoch, int64_t index) const {
  if (index < 0 || index >= size()) throw Error("DataLoader", "batch ", index, " is not in 0..", size() - 1);
  Tensor epoch_order;
  {
    const std::lock_guard<std::mutex> lock(last_order_mutex_);
    if (last_epoch_ != epoch) last_order_ = Tensor(core::from_vector(order(epoch))), last_epoch_ = epoch;
    epoch_order = last_order_;
  }
  return gather(epoch_order, index);
}

DataLoader::Iterator DataLoader::begin() { return Iterator(this, epoch_++); }

// --- the iterator ----------------------------------------------------------------------------------

DataLoader::Iterator::Iterator(const DataLoader* loader, int64_t epoch)
    : loader_(loader),
      order_(std::make_shared<const Tensor>(core::from_vector(loader->order(epoch)))),
      count_(loader->size()) {
  if (count_ == 0) return;
  current_ = take(0);
  start_prefetch(1);
}

void DataLoader::Iterator::start_prefetch(int64_t index) {
  if (!loader_->options_.prefetch || index >= count_) return;
  // The task reads the dataset and the order, which nobody writes while it runs, and returns a
  // fresh Batch: no state is shared with the consumer except through the future.
  next_ = std::async(std::launch::async,
                     [loader = loader_, order = order_, index] { return loader->gather(*order, index); });
}

Batch DataLoader::Iterator::take(int64_t index) {
  if (next_.valid()) return next_.get();  // rethrows the worker's exception, if any
  return loader_->gather(*order_, index);
}

DataLoader::Iterator& DataLoader::Iterator::operator++() {
  ++index_;
  if (index_ < count_) {
    current_ = take(index_);
    start_prefetch(index_ + 1);
  } else {
    current_ = Batch{};
  }
  return *this;
}

}  // namespace axiom::data
