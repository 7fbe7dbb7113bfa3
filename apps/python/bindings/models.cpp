// axiom.models and axiom.data: the image models (the Axial Transformer first), their samplers, the
// trainer with its checkpoints, and the datasets.
//
//   config = axiom.models.preset("tiny")                 # an ImageModelConfig, fields editable
//   model = axiom.models.AxialTransformer(config, seed=0)
//   loss = model.loss(images)                            # bits/dim, differentiable
//   trainer = axiom.models.Trainer(config, images, batch_size=8, lr=1e-3)
//   losses = trainer.train(100)                          # Ctrl-C stops it between two steps
#include <csignal>

#include "apps/python/bindings/bindings.h"

namespace axiom::python {

namespace {

using models::ImageModel;
using models::ImageModelConfig;

// A model that owns the generator it points at (its dropout draws from it).
std::shared_ptr<ImageModel> owned_model(const ImageModelConfig& config, uint64_t seed) {
  auto gen = std::make_shared<Generator>(seed);
  std::unique_ptr<ImageModel> model = models::make_image_model(config, *gen);
  return std::shared_ptr<ImageModel>(model.release(), [gen](ImageModel* m) { delete m; });
}

void bind_config(py::module_& models) {
  py::class_<ImageModelConfig>(models, "ImageModelConfig",
                               "An image model's shape and options (models/config.h); presets by name.")
      .def_readwrite("height", &ImageModelConfig::height)
      .def_readwrite("width", &ImageModelConfig::width)
      .def_readwrite("channels", &ImageModelConfig::channels)
      .def_readwrite("features", &ImageModelConfig::features)
      .def_readwrite("heads", &ImageModelConfig::heads)
      .def_readwrite("upper_layers", &ImageModelConfig::upper_layers)
      .def_readwrite("row_layers", &ImageModelConfig::row_layers)
      .def_readwrite("encoder_layers", &ImageModelConfig::encoder_layers)
      .def_readwrite("ff_multiple", &ImageModelConfig::ff_multiple)
      .def_readwrite("dropout", &ImageModelConfig::dropout)
      .def_readwrite("relative", &ImageModelConfig::relative)
      .def_property_readonly("attention", [](const ImageModelConfig& c) { return models::name_of(c.attention); })
      .def("validate", by_reference(&ImageModelConfig::validate))
      .def("to_json", by_reference(&ImageModelConfig::to_json))
      .def("__repr__", [](const ImageModelConfig& c) { return "ImageModelConfig(" + c.to_json() + ")"; });
  models.def(
      "preset", [](const std::string& name) { return models::preset(name); }, py::arg("name"),
      "a named config: tiny, small, medium, ...");
  models.def(
      "load_config", [](const std::string& path) { return models::load_config(checked_path(path, "load_config")); },
      py::arg("name_or_path"), "a preset's name, or a JSON file of one");
  models.def(
      "config_from_json", [](const std::string& text) { return models::config_from_json(text, "config_from_json"); },
      py::arg("text"));
}

void bind_image_model(py::module_& models) {
  py::class_<models::Likelihood>(models, "Likelihood", "-log p of every value of a batch: nats, count, bits_per_dim")
      .def_readonly("nats", &models::Likelihood::nats)
      .def_readonly("count", &models::Likelihood::count)
      .def_property_readonly("bits_per_dim", by_reference(&models::Likelihood::bits_per_dim));
  py::class_<ImageModel, nn::Module, std::shared_ptr<ImageModel>>(
      models, "ImageModel", "An autoregressive model of images of 256 values a pixel and channel")
      .def(py::init(&owned_model), py::arg("config"), py::arg("seed") = 0,
           "the model the config names (config.attention)")
      .def_property_readonly("config", by_reference(&ImageModel::config))
      .def("logits", by_reference(&ImageModel::logits), py::arg("images"), py::arg("channel"), release_gil(),
           "images uint8 or int64 [B, H, W] or [B, C, H, W], channel int64 [B] -> that channel's logits [B, H, W, 256]")
      .def(
          "loss",
          [](const ImageModel& m, const Tensor& images, Generator* gen) {
            return m.loss(images, generator_or_default(gen));
          },
          py::arg("images"), py::arg("generator") = nullptr, release_gil(),
          "the training loss in bits/dim (one random channel per example)")
      .def("evaluate", by_reference(&ImageModel::evaluate), py::arg("images"), release_gil(),
           "the exact likelihood of every pixel and channel")
      .def(
          "sample",
          [](const ImageModel& m, int64_t count, double temperature, uint64_t seed, const std::string& method) {
            const models::SampleOptions options{.count = count, .temperature = temperature, .seed = seed};
            if (method == "fast") return models::sample_fast(m, options);
            if (method == "naive") return models::sample_naive(m, options);
            throw py::value_error("[sample] method must be \"fast\" or \"naive\", got \"" + method + "\"");
          },
          py::arg("count") = 1, py::arg("temperature") = 1.0, py::arg("seed") = 0, py::arg("method") = "fast",
          release_gil(), "uint8 [count, H, W] (or [count, C, H, W]): the semi-parallel sampler, or the naive one");
  models.def(
      "AxialTransformer",
      [](const ImageModelConfig& config, uint64_t seed) {
        if (!config.axial())
          throw py::value_error("[AxialTransformer] the config's attention must be \"axial\", got \"" +
                                std::string(models::name_of(config.attention)) + "\"");
        return owned_model(config, seed);
      },
      py::arg("config"), py::arg("seed") = 0, "the Axial Transformer (Ho et al., 2019) the config describes");
  models.def(
      "load_model",
      [](const std::string& path) {
        return std::shared_ptr<ImageModel>(models::load_model(checked_path(path, "load_model")));
      },
      py::arg("path"), release_gil(), "an image model from a checkpoint directory or a model-*.safetensors file");
}

// Trains for `steps` steps, or until Ctrl-C: the signal is looked at between two steps, so the
// model and the optimizer are never left halfway through an update.
py::list train(models::Trainer& trainer, int64_t steps, const py::object& callback) {
  py::list losses;
  for (int64_t i = 0; i < steps; ++i) {
    double loss = 0;
    {
      const GraphLock locked;
      loss = trainer.step();
    }
    losses.append(loss);
    if (!callback.is_none()) callback(trainer.steps_done(), loss);
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();  // KeyboardInterrupt, between steps
  }
  return losses;
}

void bind_trainer(py::module_& models) {
  py::class_<models::Trainer>(models, "Trainer",
                              "Adam on an image model: step() trains on the next batch; save() writes a checkpoint")
      .def(py::init([](const ImageModelConfig& config, const Tensor& images, int64_t batch_size, double lr,
                       int64_t warmup_steps, uint64_t seed, const Device& device) {
             if (device.type ==
                 DeviceType::meta) {  // (C++ measures a step's memory there: models/training/memory_budget.h)
               throw Error("Trainer",
                           "cannot train on the meta device: it holds shapes, not numbers (every loss would read 0); "
                           "use cpu or cuda");
             }
             models::TrainingOptions options;
             options.batch_size = batch_size, options.lr = lr, options.warmup_steps = warmup_steps, options.seed = seed;
             return std::make_unique<models::Trainer>(config, options, images, device);
           }),
           py::arg("config"), py::arg("images"), py::arg("batch_size") = 32, py::arg("lr") = 1e-3,
           py::arg("warmup_steps") = 200, py::arg("seed") = 0, py::arg("device") = Device::cpu())
      .def("step", by_reference(&models::Trainer::step), graph_lock(), "one batch, one update; its loss in bits/dim")
      .def("train", &train, py::arg("steps"), py::arg("callback") = py::none(),
           "steps() steps, calling callback(step, loss) after each; Ctrl-C stops between two steps. The losses.")
      .def(
          "save", [](const models::Trainer& t, const std::string& dir) { t.save(checked_path(dir, "save")); },
          py::arg("dir"), release_gil(), "a checkpoint directory, written atomically")
      .def_property_readonly("steps_done", by_reference(&models::Trainer::steps_done))
      .def_property_readonly(
          "model", [](models::Trainer& t) -> ImageModel& { return t.image_model(); },
          py::return_value_policy::reference_internal);
}

}  // namespace

void bind_data(py::module_& data) {
  data.def(
      "load_images",
      [](const std::string& name, const std::string& split, const std::string& root) {
        return data::load_images(checked_path(name, "load_images"), split, {.root = checked_path(root, "load_images")});
      },
      py::arg("name") = "fashion-mnist", py::arg("split") = "train", py::arg("root") = "", release_gil(),
      "uint8 images [N, H, W] (or [N, C, H, W]): fashion-mnist, mnist, cifar10, moving-fashion-mnist, or a .npy file");
  data.def(
      "load_labelled",
      [](const std::string& name, const std::string& split, const std::string& root) {
        const data::ImageDataset set = data::load_labelled(name, split, {.root = checked_path(root, "load_labelled")});
        return py::make_tuple(set.images, set.labels);
      },
      py::arg("name") = "fashion-mnist", py::arg("split") = "train", py::arg("root") = "", release_gil(),
      "(images, int64 labels)");
}

void bind_models(py::module_& models) {
  bind_config(models);
  bind_image_model(models);
  bind_trainer(models);
}

}  // namespace axiom::python
