#include "core/formats/json.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <vector>

#include "core/error.h"

namespace axiom::core {

std::string StrictJson::problem() const {
  if (nul_at >= 0) return "it has a NUL byte at byte " + std::to_string(nul_at);
  if (!syntax_error.empty()) return syntax_error;
  if (too_deep) return "it nests arrays or objects more than " + std::to_string(kMaxJsonDepth) + " deep";
  if (!duplicate_key.empty()) return "the key '" + duplicate_key + "' appears twice in one object";
  return "";
}

StrictJson read_json(std::string_view text) {
  StrictJson result;
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos) {
    result.nul_at = static_cast<int64_t>(nul);
    return result;
  }
  std::vector<std::set<std::string>> open_objects;  // the keys seen so far in each enclosing object
  const nlohmann::json::parser_callback_t watch = [&](int depth, nlohmann::json::parse_event_t event,
                                                      nlohmann::json& parsed) {
    using Event = nlohmann::json::parse_event_t;
    if (event == Event::object_start || event == Event::array_start) {
      if (depth >= StrictJson::kMaxJsonDepth) result.too_deep = true;
      if (result.too_deep) return false;  // discard: from here on the parse only checks the syntax
      if (event == Event::object_start) open_objects.emplace_back();
    } else if (event == Event::object_end) {
      open_objects.pop_back();
    } else if (event == Event::key && !result.too_deep && !open_objects.empty()) {
      const std::string& key = parsed.get_ref<const std::string&>();
      if (!open_objects.back().insert(key).second && result.duplicate_key.empty()) result.duplicate_key = key;
    }
    return true;
  };
  try {
    result.value = nlohmann::json::parse(text.begin(), text.end(), watch);
  } catch (const nlohmann::json::exception& e) {
    result.syntax_error = e.what();
    if (result.syntax_error.size() > 300) result.syntax_error = result.syntax_error.substr(0, 300) + "...";
  }
  if (!result.ok()) result.value = nullptr;
  return result;
}

nlohmann::json parse_json(std::string_view text, const std::string& origin, const char* op) {
  StrictJson json = read_json(text);
  if (!json.ok()) throw Error(op, origin, ": not valid JSON: ", json.problem());
  return std::move(json.value);
}

nlohmann::json read_json_file(const std::string& path, const char* op, uintmax_t max_bytes) {
  namespace fs = std::filesystem;
  std::error_code ec;  // (a name too long, a loop of links: an Error below, not an exception)
  const fs::file_status status = fs::status(path, ec);
  if (!fs::exists(status)) throw Error(op, "cannot read '", path, "': ", ec ? ec.message() : "no such file");
  if (!fs::is_regular_file(status)) throw Error(op, "'", path, "' is not a regular file");
  const uintmax_t bytes = fs::file_size(path, ec);
  if (ec) throw Error(op, "cannot read '", path, "': ", ec.message());
  if (bytes > max_bytes) throw Error(op, "'", path, "' has ", bytes, " bytes; at most ", max_bytes, " are read");
  std::string text(bytes, '\0');
  std::ifstream file(path, std::ios::binary);
  if (!file.read(text.data(), static_cast<std::streamsize>(bytes))) throw Error(op, "cannot read '", path, "'");
  return parse_json(text, path, op);
}

int64_t JsonValueReader::int64(const nlohmann::json& value, const std::string& key) const {
  if (!value.is_number_integer()) throw Error(op, origin, ": ", key, " must be an integer, got ", value.dump());
  if (value.is_number_unsigned() && value.get<uint64_t>() > uint64_t{INT64_MAX}) {  // (get<int64_t> would wrap)
    throw Error(op, origin, ": ", key, " is far beyond its range, got ", value.dump());
  }
  return value.get<int64_t>();
}

uint64_t JsonValueReader::uint64(const nlohmann::json& value, const std::string& key) const {
  if (!value.is_number_integer() || (!value.is_number_unsigned() && value.get<int64_t>() < 0)) {
    throw Error(op, origin, ": ", key, " must be an integer >= 0, got ", value.dump());
  }
  return value.get<uint64_t>();
}

double JsonValueReader::number(const nlohmann::json& value, const std::string& key) const {
  if (!value.is_number()) throw Error(op, origin, ": ", key, " must be a number, got ", value.dump());
  return value.get<double>();
}

std::string JsonValueReader::string(const nlohmann::json& value, const std::string& key) const {
  if (!value.is_string()) throw Error(op, origin, ": ", key, " must be a string, got ", value.dump());
  return value.get<std::string>();
}

}  // namespace axiom::core
