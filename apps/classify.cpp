// `axiom classify`: trains a classifier of Fashion-MNIST's (or MNIST's) labels, a Vision
// Transformer or a recurrent network reading rows (models/classifiers.h), then prints its accuracy
// on the test images. AdamW, a linear warmup and a linear decay to 0 at the last step, one seed.
#include <cmath>
#include <cstdio>
#include <memory>

#include "apps/commands.h"
#include "apps/progress.h"
#include "core/error.h"
#include "core/ops.h"
#include "data/idx.h"
#include "data/loader.h"
#include "models/classifiers.h"
#include "optim/optim.h"

namespace axiom::apps {

namespace {

data::ImageDataset labelled(const ClassifyCommand& c, const std::string& split) {
  if (c.data == "fashion-mnist") return c.data_dir.empty() ? data::fashion_mnist(split) : data::fashion_mnist(split, c.data_dir);
  if (c.data == "mnist") {
    if (c.data_dir.empty()) throw Error("classify", "mnist needs --data-dir (no Debian package ships it)");
    return data::mnist(split, c.data_dir);
  }
  throw Error("classify", "--data must be fashion-mnist or mnist (datasets with labels), got \"", c.data, "\"");
}

std::unique_ptr<models::Classifier> classifier(const ClassifyCommand& c, int64_t height, int64_t width, Generator& gen) {
  if (c.model == "vit") {
    const models::VisionTransformerOptions options{.patch = c.patch, .features = c.width, .heads = c.heads, .layers = c.layers};
    return std::make_unique<models::VisionTransformer>(height, width, options, gen);
  }
  return std::make_unique<models::RowReader>(c.model, width, c.width, 10, gen);
}

// How many rows of logits [n, classes] have their largest value at their label (labels: int64 [n]).
int64_t correct(const Tensor& logits, const Tensor& labels) {
  return static_cast<int64_t>(sum(eq(argmax(logits, 1), labels).to(Dtype::int64)).item());
}

// The share of the first `count` test images whose most likely class is their label, in batches, without a graph.
double accuracy(const models::Classifier& model, const data::ImageDataset& test, int64_t count) {
  NoGrad no_grad;
  int64_t right = 0;
  for (int64_t start = 0; start < count; start += 500) {
    const int64_t n = std::min<int64_t>(500, count - start);
    const Tensor logits = model.forward(models::pixels_to_unit(test.images.narrow(0, start, n)));  // [n, 10]
    right += correct(logits, test.labels.narrow(0, start, n));
  }
  return static_cast<double>(right) / static_cast<double>(count);
}

}  // namespace

int classify(const ClassifyCommand& c) {
  if (c.model != "vit" && c.model != "gru" && c.model != "lstm") {
    throw Error("classify", "--model must be vit, gru or lstm, got \"", c.model, "\"");
  }
  const data::ImageDataset train = labelled(c, "train"), test = labelled(c, "test");
  if (c.warmup_steps >= c.steps) {
    throw Error("classify", "--warmup (", c.warmup_steps, ") must be shorter than --steps (", c.steps, "): the rate decays after it");
  }
  if (test.size() == 0) throw Error("classify", "the test split of ", c.data, " holds no images");
  if (c.batch_size > train.size()) {  // (the loader drops a short last batch: an epoch would have none)
    throw Error("classify", "--batch ", c.batch_size, " is larger than the ", train.size(), " training images");
  }
  const int64_t height = train.images.size(1), width = train.images.size(2);
  core::Generator gen(c.seed);
  const std::unique_ptr<models::Classifier> model = classifier(c, height, width, gen);
  optim::AdamW optimizer(model->named_parameters(), {.lr = c.lr, .betas = {0.9, 0.98}, .weight_decay = c.weight_decay});
  // the warmup's steps, then a decay that reaches 0 at the last step
  const optim::Schedule schedule = optim::Schedule::linear(c.lr, {.steps = c.warmup_steps}, c.steps - c.warmup_steps);
  data::DataLoader loader(train, {.batch_size = c.batch_size, .seed = c.seed});

  StatusLine line;
  Stopwatch clock;
  int64_t step = 0, seen = 0, right = 0;  // right answers among the training images seen since the last report
  while (step < c.steps) {
    for (const data::Batch& batch : loader) {
      if (step >= c.steps) break;
      optimizer.set_lr(schedule.lr(step));
      const Tensor logits = model->forward(models::pixels_to_unit(batch[0]));  // [B, 10]
      const Tensor labels(batch[1]);                                         // [B]
      const Tensor loss = cross_entropy(logits, labels);
      optimizer.zero_grad();
      loss.backward();
      optimizer.step();
      ++step, seen += batch.size();
      right += correct(logits, batch[1]);
      if (step % 50 == 0 || step == c.steps) {
        const double eta = clock.seconds() / static_cast<double>(step) * static_cast<double>(c.steps - step);
        char text[160];
        std::snprintf(text, sizeof text, "step %lld/%lld %s loss %.3f  train accuracy %.1f%%  %s, ETA %s",
                      static_cast<long long>(step), static_cast<long long>(c.steps), progress_bar(step, c.steps).c_str(),
                      loss.item(), 100.0 * static_cast<double>(right) / static_cast<double>(seen),
                      format_duration(clock.seconds()).c_str(), format_duration(eta).c_str());
        line.show(text, step % 500 == 0 || step == c.steps);
        seen = right = 0;
      }
    }
  }
  line.finish();
  const double trained = clock.seconds();
  const int64_t count = c.limit > 0 ? std::min(c.limit, test.size()) : test.size();
  const double test_accuracy = accuracy(*model, test, count);
  std::printf("%s test: %.2f%% accuracy over %lld images (%s, %lld steps of %lld images, trained in %s)\n", c.data.c_str(),
              100 * test_accuracy, static_cast<long long>(count), c.model.c_str(), static_cast<long long>(c.steps),
              static_cast<long long>(c.batch_size), format_duration(trained).c_str());
  return 0;
}

}  // namespace axiom::apps
