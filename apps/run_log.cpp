#include "apps/run_log.h"

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "apps/pictures.h"
#include "core/formats/atomic_file.h"
#include "core/error.h"

namespace axiom::apps {

namespace {

// Whether `j` is a whole metrics line of a step up to `last_step`: a step, and numbers only.
bool usable(const nlohmann::json& j, int64_t last_step) {
  if (!j.is_object()) return false;
  const auto step = j.find("step");
  if (step == j.end() || !step->is_number_integer() || step->get<int64_t>() < 0 || step->get<int64_t>() > last_step)
    return false;
  return std::all_of(j.begin(), j.end(), [](const nlohmann::json& value) { return value.is_number(); });
}

// Seconds since 1970, TensorBoard's wall_time.
double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

RunLog::RunLog(const std::string& dir, int64_t step, const std::string& loss_key, const std::string& unit,
               int64_t batch_size)
    : path_((std::filesystem::path(dir) / "metrics.jsonl").string()),
      curve_((std::filesystem::path(dir) / "loss.png").string()),
      loss_key_(loss_key),
      train_key_("train_" + loss_key),
      held_out_key_("held_out_" + loss_key),
      unit_(unit),
      batch_size_(batch_size),
      events_((std::filesystem::path(dir) / "events.out.tfevents.axiom").string(), step) {
  std::error_code ec;
  const std::filesystem::file_status status = std::filesystem::status(path_, ec);
  if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status)) {
    throw Error("train", "'", path_, "' is not a regular file (a FIFO would wait forever); move it away to resume");
  }
  std::string kept;
  std::ifstream old(path_);
  for (std::string line; std::getline(old, line);) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!usable(j, step)) continue;
    const double x = j["step"].get<double>();
    if (j.contains(train_key_)) train_.x.push_back(x), train_.y.push_back(j[train_key_].get<double>());
    if (j.contains(held_out_key_)) held_out_.x.push_back(x), held_out_.y.push_back(j[held_out_key_].get<double>());
    if (j.contains("wall_seconds")) seconds_before_ = std::max(seconds_before_, j["wall_seconds"].get<double>());
    kept += line + "\n";
  }
  core::write_file_atomically(path_, kept, "train");
  file_.reset(std::fopen(path_.c_str(), "a"));
  if (!file_) throw Error("train", "cannot append to '", path_, "': ", std::strerror(errno));
}

void RunLog::train_step(int64_t step, double loss, double lr, double grad_norm, double seconds, double wall_seconds) {
  train_.x.push_back(static_cast<double>(step)), train_.y.push_back(loss);
  const nlohmann::ordered_json j = {{"step", step},           {train_key_, loss},   {"lr", lr},
                                    {"grad_norm", grad_norm}, {"seconds", seconds}, {"wall_seconds", wall_seconds}};
  write(j.dump());
  const double now = unix_seconds();
  events_.scalar("train/" + loss_key_, step, loss, now);
  events_.scalar("train/lr", step, lr, now);
  events_.scalar("train/gradient_norm", step, grad_norm, now);
  if (batch_size_ > 0 && seconds > 0)
    events_.scalar("train/images_per_second", step, static_cast<double>(batch_size_) / seconds, now);
}

void RunLog::held_out(int64_t step, double loss, std::optional<double> accuracy, double wall_seconds) {
  held_out_.x.push_back(static_cast<double>(step)), held_out_.y.push_back(loss);
  nlohmann::ordered_json j = {{"step", step}, {held_out_key_, loss}};
  if (accuracy) j["held_out_accuracy"] = *accuracy;
  j["wall_seconds"] = wall_seconds;
  write(j.dump());
  const double now = unix_seconds();
  events_.scalar("held_out/" + loss_key_, step, loss, now);
  if (accuracy) events_.scalar("held_out/accuracy", step, *accuracy, now);
}

void RunLog::image(const std::string& tag, int64_t step, const Tensor& picture) {
  const EncodedImage image{.png = encode_png(picture, "the TensorBoard image '" + tag + "'"),
                           .height = picture.size(0),
                           .width = picture.size(1),
                           .channels = picture.dim() == 3 ? picture.size(2) : 1};
  events_.image(tag, step, image, unix_seconds());
}

void RunLog::plot(const std::string& title) const {
  std::vector<Series> series;
  if (!train_.x.empty()) series.push_back(train_);
  if (!held_out_.x.empty()) series.push_back(held_out_);
  if (!series.empty()) plot_curves(curve_, series, title, "step", unit_);
}

void RunLog::write(const std::string& line) {
  if (std::fputs((line + "\n").c_str(), file_.get()) == EOF || std::fflush(file_.get()) != 0) {
    throw Error("train", "cannot write '", path_, "': ", std::strerror(errno));
  }
}

}  // namespace axiom::apps
