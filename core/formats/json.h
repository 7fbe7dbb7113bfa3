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

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace axiom::core {

struct StrictJson {
  nlohmann::json value;       // the parsed value, when every check passed
  std::string syntax_error;   // nlohmann's message (at most 300 characters), or ""
  std::string duplicate_key;  // the first key seen twice in one object, or ""
  bool too_deep = false;      // nested deeper than kMaxJsonDepth
  int64_t nul_at = -1;        // the byte offset of a NUL byte, or -1

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

// --- a struct as a JSON object, through a table of its fields ------------------------------------
//
//   const std::array<JsonField<Options>, 2> kFields{{{"lr", &Options::lr}, {"data", &Options::data}}};
//   read_fields(j, kFields, options, "train", "x.json", "training option");  // every key checked
//   write_fields(options, kFields).dump();                                  // {"lr": 0.001, "data": ...}
//
// A member's type sets the JSON value it takes: int64_t an integer within int64, uint64_t an
// integer >= 0, double any number, std::string a string, an enum one of its names (enum_field).

// An enum's names, one per value: {{Schedule::constant, "constant"}, {Schedule::linear, "linear"}}.
template <typename Enum, size_t N>
using EnumNames = std::array<std::pair<Enum, const char*>, N>;

template <typename Enum, size_t N>
const char* name_of(const EnumNames<Enum, N>& names, Enum value) {
  for (const auto& [v, name] : names) {
    if (v == value) return name;
  }
  return "?";
}

// The value called `name`, or false.
template <typename Enum, size_t N>
bool value_named(const EnumNames<Enum, N>& names, std::string_view name, Enum& value) {
  for (const auto& [v, n] : names) {
    if (name == n) return value = v, true;
  }
  return false;
}

// "\"constant\", \"linear\" or \"cosine\"": the names, for an error.
template <typename Enum, size_t N>
std::string quoted_names(const EnumNames<Enum, N>& names) {
  std::string text;
  for (size_t i = 0; i < N; ++i) {
    if (i > 0) text += i + 1 == N ? " or " : ", ";
    text += "\"" + std::string(names[i].second) + "\"";
  }
  return text;
}

// A field that holds an enum, read and written as one of its names: enum_field<&Options::schedule, kNames>().
template <typename Struct>
struct JsonEnumField {
  const char* (*write)(const Struct& in);
  bool (*read)(Struct& out, const std::string& name);  // false when `name` is none of the enum's
  std::string (*names)();                              // for the error
};

template <typename MemberPointer>
struct MemberOf;
template <typename Struct, typename Member>
struct MemberOf<Member Struct::*> {
  using Owner = Struct;
};

template <auto member, const auto& names>
JsonEnumField<typename MemberOf<decltype(member)>::Owner> enum_field() {
  using Struct = typename MemberOf<decltype(member)>::Owner;
  return {[](const Struct& in) { return name_of(names, in.*member); },
          [](Struct& out, const std::string& name) { return value_named(names, name, out.*member); },
          [] { return quoted_names(names); }};
}

template <typename Struct>
struct JsonField {
  const char* key;
  std::variant<int64_t Struct::*, uint64_t Struct::*, double Struct::*, std::string Struct::*, JsonEnumField<Struct>>
      member;
};

// One value of a JSON object, checked to be of the member's kind, or Error(op, origin, ": ", key,
// " must be an integer, got \"64\"") and the like.
struct JsonValueReader {
  const char* op;
  const std::string& origin;
  int64_t int64(const nlohmann::json& value, const std::string& key) const;
  uint64_t uint64(const nlohmann::json& value, const std::string& key) const;
  double number(const nlohmann::json& value, const std::string& key) const;
  std::string string(const nlohmann::json& value, const std::string& key) const;
};

// Reads the JSON object `j` into `out`: each key must be one of the table's ("unknown <what> \"k\""
// otherwise) with a value of its member's kind; the keys `j` leaves out keep out's values.
template <typename Struct, size_t N>
void read_fields(const nlohmann::json& j, const std::array<JsonField<Struct>, N>& fields, Struct& out, const char* op,
                 const std::string& origin, const char* what) {
  if (!j.is_object()) throw Error(op, origin, ": expected a JSON object, got a JSON ", j.type_name());
  const JsonValueReader read{op, origin};
  for (auto item = j.begin(); item != j.end(); ++item) {
    const std::string& key = item.key();  // (named, not structured bindings: clang 14's lambdas cannot capture those)
    const nlohmann::json& value = item.value();
    const auto field =
        std::find_if(fields.begin(), fields.end(), [&](const JsonField<Struct>& f) { return key == f.key; });
    if (field == fields.end()) throw Error(op, origin, ": unknown ", what, " \"", key, "\"");
    std::visit(
        [&](auto member) {
          if constexpr (std::is_same_v<decltype(member), JsonEnumField<Struct>>) {
            const std::string name = read.string(value, key);
            if (!member.read(out, name))
              throw Error(op, origin, ": ", key, " must be ", member.names(), ", got \"", name, "\"");
          } else {
            auto& target = out.*member;
            using Member = std::remove_reference_t<decltype(target)>;
            if constexpr (std::is_same_v<Member, int64_t>) target = read.int64(value, key);
            if constexpr (std::is_same_v<Member, uint64_t>) target = read.uint64(value, key);
            if constexpr (std::is_same_v<Member, double>) target = read.number(value, key);
            if constexpr (std::is_same_v<Member, std::string>) target = read.string(value, key);
          }
        },
        field->member);
  }
}

// The table's fields of `in`, as a JSON object in the table's order.
template <typename Struct, size_t N>
nlohmann::ordered_json write_fields(const Struct& in, const std::array<JsonField<Struct>, N>& fields) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const JsonField<Struct>& field : fields) {
    std::visit(
        [&](auto member) {
          if constexpr (std::is_same_v<decltype(member), JsonEnumField<Struct>>) {
            j[field.key] = member.write(in);
          } else {
            j[field.key] = in.*member;
          }
        },
        field.member);
  }
  return j;
}

// The Struct a JSON text describes: its keys read through `fields` (read_fields), then
// Struct::validate(), whose Error names the origin too: "[op] origin: message".
template <typename Struct, size_t N>
Struct read_validated(const std::string& text, const std::array<JsonField<Struct>, N>& fields, const char* op,
                      const std::string& origin, const char* what) {
  Struct out;
  read_fields(parse_json(text, origin, op), fields, out, op, origin, what);
  try {
    out.validate();
  } catch (const Error& e) {
    const std::string message = e.what();  // "[op] ...": the op said once
    throw Error(op, origin, ": ", message.substr(message.find("] ") + 2));
  }
  return out;
}

}  // namespace axiom::core
