// Reading JSON strictly, for every JSON file axiom reads (configs, checkpoint.json, the training
// options, the optimizer state, safetensors headers). On top of nlohmann's syntax check:
//   - a key twice in one object is an error (a parser silently keeps one of the two, so a config
//     with "features" twice would train the model of whichever value won);
//   - nesting deeper than 128 is an error, found without building the deep values (no stack overflow);
//   - a NUL byte is an error (nlohmann would stop there, as if the text ended).
//
//   const nlohmann::json j = core::parse_json(text, "runs/a/checkpoint.json", "checkpoint");
//   // [checkpoint] runs/a/checkpoint.json: not valid JSON: the key 'step' appears twice in one object
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace axiom::core {

struct StrictJson {
  nlohmann::json value;      // the parsed value, when every check passed
  std::string syntax_error;  // nlohmann's message (at most 300 characters), or ""
  std::string duplicate_key;  // the first key seen twice in one object, or ""
  bool too_deep = false;     // nested deeper than kMaxJsonDepth
  int64_t nul_at = -1;       // the byte offset of a NUL byte, or -1

  static constexpr int kMaxJsonDepth = 128;  // serde_json's default limit (and so the safetensors reference's)
  bool ok() const { return syntax_error.empty() && duplicate_key.empty() && !too_deep && nul_at < 0; }
  std::string problem() const;  // what is wrong, in words ("" when ok)
};
StrictJson read_json(std::string_view text);

// read_json's value, or Error(op, origin, ": not valid JSON: ", problem).
nlohmann::json parse_json(std::string_view text, const std::string& origin, const char* op);

// parse_json of the file at `path`, which must be a regular file (a FIFO would wait forever,
// /dev/zero never ends, a directory has no text) of at most max_bytes; every Error names the file.
constexpr uintmax_t kMaxJsonFileBytes = 16 << 20;
nlohmann::json read_json_file(const std::string& path, const char* op, uintmax_t max_bytes = kMaxJsonFileBytes);

}  // namespace axiom::core
