// DataLoader: batches of a dataset, shuffled reproducibly, built one batch ahead on a thread.
//
//   data::DataLoader loader(data::fashion_mnist("train"), {.batch_size = 32, .seed = 1});
//   for (const data::Batch& batch : loader) {   // each `for` is one epoch
//     const Tensor& images = batch[0];       // uint8 [32, 28, 28]
//     const Tensor& labels = batch[1];       // int64 [32]
//   }
//
// Rules:
// - A TensorDataset is a list of columns that share their first axis, the example index
//   (images [N, ...], labels [N], ...). A Batch holds the same columns, rows gathered.
// - Each begin() starts the next epoch (0, 1, 2, ...). With shuffle, epoch e visits the examples
//   in the order of a Fisher-Yates shuffle driven by Philox(seed, counters e*N ...), so a run is
//   reproducible from the seed alone and each epoch has its own order; without shuffle, in order.
// - Batches are consecutive slices of that order; the last, shorter one is dropped with drop_last.
//   size() is the number of batches per epoch.
// - With prefetch, a background thread (std::async) builds batch i+1 while batch i is used. The
//   batches are identical with and without it. An exception in the thread reaches the consumer
//   when it asks for that batch; leaving the loop early waits for the thread (no dangling work).
// - The loader must outlive the loop (a temporary in the `for` header does).
#pragma once

#include <cstdint>
#include <future>
#include <memory>
#include <mutex>
#include <vector>

#include "../autograd/tensor.h"
#include "image_dataset.h"

namespace axiom::data {

struct TensorDataset {
  std::vector<Tensor> columns;  // each [N, ...], one N
};

struct Batch {
  std::vector<Tensor> columns;  // each [B, ...]: rows of the dataset's columns
  const Tensor& operator[](size_t column) const { return columns.at(column); }
  int64_t size() const { return columns.empty() ? 0 : columns[0].size(0); }  // B
};

struct LoaderOptions {
  int64_t batch_size = 32;
  bool shuffle = true;
  bool drop_last = true;
  uint64_t seed = 0;
  bool prefetch = true;
};

class DataLoader {
 public:
  DataLoader(TensorDataset dataset, LoaderOptions options = {});
  DataLoader(const ImageDataset& dataset, LoaderOptions options = {})  // columns: images, labels
      : DataLoader(TensorDataset{{dataset.images, dataset.labels}}, options) {}

  int64_t size() const;                           // batches per epoch
  int64_t examples() const { return examples_; }  // N
  int64_t epochs_started() const { return epoch_; }
  const LoaderOptions& options() const { return options_; }

  std::vector<int64_t> order(int64_t epoch) const;  // the example order of an epoch: a permutation of 0..N-1
  // Batch `index` of epoch `epoch`, built on this thread. The epoch's order is kept for the next
  // call (a trainer takes an epoch's batches in turn): O(B) a call, not O(N).
  Batch batch(int64_t epoch, int64_t index) const;

  class Iterator;
  struct End {};
  Iterator begin();  // starts the next epoch
  End end() const { return {}; }

 private:
  Batch gather(const Tensor& order /* int64 [N] */, int64_t index) const;  // batch `index` in that order

  TensorDataset dataset_;
  LoaderOptions options_;
  int64_t examples_ = 0;
  int64_t epoch_ = 0;
  // batch()'s last epoch and its order (int64 [N]), under the mutex: batch() is const and may be
  // called from several threads.
  mutable std::mutex last_order_mutex_;
  mutable int64_t last_epoch_ = -1;
  mutable Tensor last_order_;
};

// One pass over an epoch. Holds the current batch and, with prefetch, the future of the next.
class DataLoader::Iterator {
 public:
  const Batch& operator*() const { return current_; }
  const Batch* operator->() const { return &current_; }
  Iterator& operator++();
  bool operator==(End) const { return index_ >= count_; }

 private:
  friend class DataLoader;
  Iterator(const DataLoader* loader, int64_t epoch);
  void start_prefetch(int64_t index);
  Batch take(int64_t index);  // batch `index`: from the prefetch, or built now

  const DataLoader* loader_;
  std::shared_ptr<const Tensor> order_;  // int64 [N], read by both threads, never written
  int64_t index_ = 0, count_;
  Batch current_;
  std::future<Batch> next_;  // batch index_ + 1 when prefetching (its destructor waits for it)
};

}  // namespace axiom::data
