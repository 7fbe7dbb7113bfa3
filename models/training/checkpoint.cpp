// Checkpoints: Trainer::save, read_checkpoint and load_model (the layout is in training.h).
#include <algorithm>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/formats/atomic_file.h"
#include "core/error.h"
#include "core/formats/json.h"
#include "core/factory.h"
#include "core/formats/safetensors.h"
#include "models/training/memory_budget.h"
#include "models/training/training.h"

namespace axiom::models {

namespace fs = std::filesystem;

namespace {

constexpr const char* kFormat = "axiom-checkpoint";
constexpr int kVersion = 1;

// "model-000500.safetensors": zero-padded so that a directory listing sorts by step.
std::string file_name(const char* kind, int64_t step) {
  char digits[32];
  std::snprintf(digits, sizeof digits, "%06lld", static_cast<long long>(step));
  return std::string(kind) + "-" + digits + ".safetensors";
}

constexpr const char* kPending = "checkpoint.pending.json";

// Whether `j` is an object whose "format" is axiom's (j.value("format", "") would throw on a number
// there: found by fuzz_checkpoint).
bool is_axiom_checkpoint(const nlohmann::json& j) {
  if (!j.is_object()) return false;
  const auto format = j.find("format");
  return format != j.end() && format->is_string() && format->get<std::string>() == kFormat;
}

// Whether a name from a JSON file is a plain file name of a checkpoint (no directory in it).
bool plain_checkpoint_name(const nlohmann::json& value) {
  return value.is_string() && is_checkpoint_file_name(value.get<std::string>());
}

// The JSON file at `path`, or null if it is missing or does not read (a FIFO, a directory, not JSON).
nlohmann::json json_if_readable(const fs::path& path) {
  try {
    return core::read_json_file(path.string(), "checkpoint");
  } catch (const Error&) {
    return nullptr;
  }
}

// The names recorded under `key` (a string or an array of strings) in the JSON file `path`, if it reads.
std::vector<std::string> names_in(const fs::path& path, const char* key) {
  const nlohmann::json j = json_if_readable(path);
  if (!j.is_object() || !j.contains(key)) return {};
  std::vector<std::string> names;
  for (const nlohmann::json& value : j[key].is_array() ? j[key] : nlohmann::json::array({j[key]})) {
    if (plain_checkpoint_name(value)) names.push_back(value.get<std::string>());
  }
  return names;
}

// The model and optimizer files that the checkpoint.json in `dir` names: the only files a new
// checkpoint may remove. None when there is no readable checkpoint (axiom never deletes a file that
// its own checkpoint did not record: a user's model-best.safetensors beside a run stays).
std::vector<std::string> recorded_files(const fs::path& dir) {
  if (!is_axiom_checkpoint(json_if_readable(dir / "checkpoint.json"))) return {};
  std::vector<std::string> names;
  for (const char* key : {"model", "optimizer"}) {
    for (const std::string& name : names_in(dir / "checkpoint.json", key)) names.push_back(name);
  }
  return names;
}

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// Removes the files the previous checkpoint recorded, unless the new one uses them too.
void remove_files(const fs::path& dir, const std::vector<std::string>& names, const std::string& model,
                  const std::string& optimizer) {
  std::error_code ignored;  // a file already gone, or one we cannot remove, is left to the user
  for (const std::string& name : names) {
    if (name != model && name != optimizer) fs::remove(dir / name, ignored);
  }
}

// j[key], which must exist and be of the kind `is` tests; an Error names the file and the key.
const nlohmann::json& field(const nlohmann::json& j, const char* key, bool (nlohmann::json::*is)() const noexcept,
                            const char* kind, const std::string& origin) {
  if (!j.contains(key)) throw Error("checkpoint", origin, ": the key \"", key, "\" is missing");
  const nlohmann::json& value = j.at(key);
  if (!(value.*is)()) throw Error("checkpoint", origin, ": \"", key, "\" must be ", kind, ", got ", value.dump());
  return value;
}

// A file named by checkpoint.json: a plain name inside the directory, which must exist.
std::string member_file(const fs::path& dir, const nlohmann::json& j, const char* key, const std::string& origin) {
  const std::string name = field(j, key, &nlohmann::json::is_string, "a file name", origin).get<std::string>();
  if (name.empty() || name.find('/') != std::string::npos || name.find('\0') != std::string::npos) {
    throw Error("checkpoint", origin, ": \"", key, "\" must name a file in the checkpoint's directory, got \"", name,
                "\"");
  }
  const fs::path path = dir / name;
  std::error_code
      ec;  // (a name too long for the file system is an error code, not an exception: found by fuzz_checkpoint)
  if (!fs::is_regular_file(path, ec))
    throw Error("checkpoint", origin, ": the ", key, " file '", path.string(), "' is missing");
  return path.string();
}

}  // namespace

void Trainer::save(const std::string& dir) const {
  // Rank 0 writes; then it tells every rank whether that worked, so that all go on or all throw.
  check_weights_finite(step_);  // the same weights on every rank: all refuse together
  std::exception_ptr failure;
  if (comm_.rank() == 0) {
    try {
      write_checkpoint(dir);
    } catch (...) {
      failure = std::current_exception();
    }
  }
  const core::Tensor written = core::from_vector<int64_t>({failure ? 0 : 1});
  comm_.broadcast(written, 0);
  if (failure) std::rethrow_exception(failure);
  if (written.item() == 0)
    throw Error("checkpoint", "rank 0 could not write the checkpoint in '", dir, "' (its error says why)");
}

void Trainer::write_checkpoint(const std::string& dir) const {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error("checkpoint", "cannot create the directory '", dir, "': ", ec.message());
  const std::string model = file_name("model", step_), optimizer = file_name("optimizer", step_);
  const std::string config = to_json(config_);
  const std::vector<std::string> previous = recorded_files(dir);
  // Before any tensor file: the record of what this save will write, so that files of a save that
  // never commits (the process killed halfway) are known as axiom's and removed at the next start.
  const nlohmann::json pending = {{"files", {model, optimizer}}};
  core::write_file_atomically((fs::path(dir) / kPending).string(), pending.dump() + "\n", "checkpoint");
  try {
    model_->save((fs::path(dir) / model).string(),
                 {{"format", "axiom-model"}, {"config", config}, {"step", std::to_string(step_)}});
    optimizer_->save((fs::path(dir) / optimizer).string());
    write_checkpoint_json(dir, model, optimizer, config);
  } catch (...) {
    // Not committed (a full disk, say): the tensor files this save wrote are removed, so that no
    // file outside a checkpoint is left behind; those of the previous checkpoint stay.
    remove_uncommitted_checkpoint_files(dir);
    throw;
  }
  remove_files(dir, previous, model, optimizer);
  std::error_code ignored;
  fs::remove(fs::path(dir) / kPending, ignored);  // (if this fails, the next start removes it)
}

bool is_checkpoint_file_name(const std::string& name) {
  static const std::regex pattern(R"((model|optimizer)-[0-9]{6,}\.safetensors)");
  return std::regex_match(name, pattern);
}

std::vector<std::string> uncommitted_checkpoint_files(const std::string& dir) {
  const std::vector<std::string> recorded = recorded_files(dir);
  std::vector<std::string> uncommitted;
  for (const std::string& name : names_in(fs::path(dir) / kPending, "files")) {
    if (!contains(recorded, name)) uncommitted.push_back(name);
  }
  return uncommitted;
}

void remove_uncommitted_checkpoint_files(const std::string& dir) {
  std::error_code ignored;  // a file already gone is fine
  for (const std::string& name : uncommitted_checkpoint_files(dir)) fs::remove(fs::path(dir) / name, ignored);
  fs::remove(fs::path(dir) / kPending, ignored);
}

void Trainer::write_checkpoint_json(const std::string& dir, const std::string& model, const std::string& optimizer,
                                    const std::string& config) const {
  const nlohmann::ordered_json j = {{"format", kFormat},
                                    {"version", kVersion},
                                    {"step", step_},
                                    {"model", model},
                                    {"optimizer", optimizer},
                                    {"config", nlohmann::ordered_json::parse(config)},
                                    {"training", nlohmann::ordered_json::parse(options_.to_json())},
                                    {"rng", {{"seed", gen_.seed()}, {"offset", gen_.offset()}}}};
  core::write_file_atomically((fs::path(dir) / "checkpoint.json").string(), j.dump(2) + "\n", "checkpoint");
}

Checkpoint read_checkpoint(const std::string& dir) {
  const fs::path path = fs::path(dir) / "checkpoint.json";
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec))) {
    throw Error("checkpoint", "'", dir, "' holds no checkpoint.json (is it a run's --out directory?)");
  }
  const std::string origin = path.string();
  const nlohmann::json j = core::read_json_file(origin, "checkpoint");
  if (!is_axiom_checkpoint(j))
    throw Error("checkpoint", origin, ": not an axiom checkpoint (\"format\" must be \"", kFormat, "\")");
  if (field(j, "version", &nlohmann::json::is_number_integer, "an integer", origin).get<int64_t>() != kVersion) {
    throw Error("checkpoint", origin, ": version ", j.at("version").dump(), " is not supported (only ", kVersion, ")");
  }
  Checkpoint c;
  c.dir = dir;
  const uint64_t step =
      field(j, "step", &nlohmann::json::is_number_unsigned, "an integer >= 0", origin).get<uint64_t>();
  if (step > (uint64_t{1} << 62)) throw Error("checkpoint", origin, ": \"step\" ", step, " is beyond any run");
  c.step = static_cast<int64_t>(step);
  c.model_file = member_file(dir, j, "model", origin);
  c.optimizer_file = member_file(dir, j, "optimizer", origin);
  c.config = model_config_from_json(field(j, "config", &nlohmann::json::is_object, "an object", origin).dump(),
                                    origin + " \"config\"");
  c.options = training_options_from_json(field(j, "training", &nlohmann::json::is_object, "an object", origin).dump(),
                                         origin + " \"training\"");
  const nlohmann::json& rng = field(j, "rng", &nlohmann::json::is_object, "an object", origin);
  c.rng_seed = field(rng, "seed", &nlohmann::json::is_number_unsigned, "an integer >= 0", origin).get<uint64_t>();
  c.rng_offset = field(rng, "offset", &nlohmann::json::is_number_unsigned, "an integer >= 0", origin).get<uint64_t>();
  return c;
}

namespace {

// The model's config and weights file of a checkpoint directory or of a model file.
struct ModelFile {
  ModelConfig config;
  std::string weights;
};

ModelFile model_file(const std::string& path) {
  std::error_code ec;  // (a name too long, a loop of links: the Error below)
  const fs::file_status status = fs::status(path, ec);
  if (fs::is_directory(status)) {
    Checkpoint checkpoint = read_checkpoint(path);
    return {std::move(checkpoint.config), checkpoint.model_file};
  }
  if (!fs::is_regular_file(status)) {
    throw Error("checkpoint", "'", path, "' is neither a checkpoint directory nor a file",
                ec ? " (" + ec.message() + ")" : "");
  }
  const Metadata metadata = core::load_safetensors(path).metadata;  // its errors name the file
  if (!metadata.count("config"))
    throw Error("checkpoint", "'", path, "' has no \"config\" in its metadata (not an axiom model file)");
  return {model_config_from_json(metadata.at("config"), path + " \"config\""), path};
}

}  // namespace

namespace {

// The model that `file` describes, with its weights, in eval mode.
std::unique_ptr<Learner> made_and_loaded(const ModelFile& file, const std::string& path) {
  const double weights = static_cast<double>(measured_parameter_count(file.config)) * 4;  // float32
  check_fits({.weights = weights}, "checkpoint", "the model of '" + path + "'",
             "its config asks for more than this machine has");
  // The generator only fills the weights that load() replaces; the model keeps a pointer to it
  // for dropout, which is off in eval mode. The process-wide generator outlives every model.
  std::unique_ptr<Learner> model = make_model(file.config, default_generator());
  model->load(file.weights);
  model->eval();
  return model;
}

}  // namespace

LoadedModel load_learner(const std::string& path) {
  const ModelFile file = model_file(path);  // (a model file is read once for its config, once for its weights)
  return {file.config, made_and_loaded(file, path)};
}

std::unique_ptr<ImageModel> load_model(const std::string& path) {
  const ModelFile file = model_file(path);
  if (!std::holds_alternative<ImageModelConfig>(file.config)) {
    const char* kind = std::holds_alternative<ClassifierConfig>(file.config) ? "a classifier" : "a translator";
    throw Error("checkpoint", "'", path, "' holds ", kind,
                ", not an image model (axiom eval scores classifiers; only image models sample)");
  }
  return std::unique_ptr<ImageModel>(static_cast<ImageModel*>(made_and_loaded(file, path).release()));
}

}  // namespace axiom::models
