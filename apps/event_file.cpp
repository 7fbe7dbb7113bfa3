// TensorBoard event files (event_file.h): TFRecord framing, a few protobuf fields written by hand,
// and enough of a reader to keep a resumed run's records up to its checkpoint.
#include "apps/event_file.h"

#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>

#include "core/error.h"
#include "core/formats/atomic_file.h"

namespace axiom::apps {

namespace {

// --- CRC-32C: the reflected polynomial 0x82F63B78, a byte at a time from a 256-entry table ---------

std::array<uint32_t, 256> crc32c_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t byte = 0; byte < 256; ++byte) {
    uint32_t crc = byte;
    for (int bit = 0; bit < 8; ++bit) crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
    table[byte] = crc;
  }
  return table;
}

// --- protobuf: varints, and fields by number and wire type ---------------------------------------

void varint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out += static_cast<char>((value & 0x7F) | 0x80);
    value >>= 7;
  }
  out += static_cast<char>(value);
}

void little_endian(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((value >> (8 * i)) & 0xFF);
}

void key(std::string& out, int field, int wire_type) { varint(out, static_cast<uint64_t>(field) << 3 | wire_type); }

void bytes_field(std::string& out, int field, std::string_view bytes) {
  key(out, field, 2);
  varint(out, bytes.size());
  out += bytes;
}

void varint_field(std::string& out, int field, uint64_t value) {
  key(out, field, 0);
  varint(out, value);
}

void double_field(std::string& out, int field, double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  key(out, field, 1);
  little_endian(out, bits, 8);
}

void float_field(std::string& out, int field, float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  key(out, field, 5);
  little_endian(out, bits, 4);
}

uint64_t read_little_endian(std::string_view bytes) {
  uint64_t value = 0;
  for (size_t i = 0; i < bytes.size(); ++i) value |= static_cast<uint64_t>(static_cast<uint8_t>(bytes[i])) << (8 * i);
  return value;
}

std::optional<uint64_t> read_varint(std::string_view bytes, size_t& at) {
  uint64_t value = 0;
  for (int shift = 0; at < bytes.size() && shift < 64; shift += 7) {
    const auto byte = static_cast<uint8_t>(bytes[at++]);
    value |= static_cast<uint64_t>(byte & 0x7F) << shift;
    if (!(byte & 0x80)) return value;
  }
  return std::nullopt;
}

// The step of an Event (field 2), 0 where it has none (the file_version record); nullopt if the
// bytes are not an Event this file could have written.
std::optional<int64_t> step_of(std::string_view event) {
  int64_t step = 0;
  for (size_t at = 0; at < event.size();) {
    const std::optional<uint64_t> tag = read_varint(event, at);
    if (!tag) return std::nullopt;
    const int field = static_cast<int>(*tag >> 3), wire = static_cast<int>(*tag & 7);
    if (wire == 0) {
      const std::optional<uint64_t> value = read_varint(event, at);
      if (!value) return std::nullopt;
      if (field == 2) step = static_cast<int64_t>(*value);
    } else if (wire == 1 || wire == 5) {
      at += wire == 1 ? 8 : 4;
    } else if (wire == 2) {
      const std::optional<uint64_t> length = read_varint(event, at);
      if (!length || *length > event.size() - at) return std::nullopt;
      at += *length;
    } else {
      return std::nullopt;
    }
  }
  return step;
}

// The whole records of `text` whose steps are at most `last_step`, as they were; the rest, and
// anything after the first record that does not check out, dropped.
std::string records_up_to(const std::string& text, int64_t last_step) {
  std::string kept;
  for (size_t at = 0; at + 16 <= text.size();) {
    const std::string_view header(text.data() + at, 8);
    const uint64_t length = read_little_endian(header);
    if (read_little_endian({text.data() + at + 8, 4}) != masked_crc32c(header) || length > text.size() - at - 16) break;
    const std::string_view data(text.data() + at + 12, length);
    if (read_little_endian({text.data() + at + 12 + length, 4}) != masked_crc32c(data)) break;
    const std::optional<int64_t> step = step_of(data);
    if (!step) break;
    if (*step <= last_step) kept.append(text, at, 16 + length);
    at += 16 + length;
  }
  return kept;
}

// TensorBoard's first record: file_version "brain.Event:2", at time 0.
std::string version_event() {
  std::string event;
  double_field(event, 1, 0);
  bytes_field(event, 3, "brain.Event:2");
  return event;
}

}  // namespace

uint32_t crc32c(std::string_view bytes) {
  static const std::array<uint32_t, 256> table = crc32c_table();
  uint32_t crc = 0xFFFFFFFFu;
  for (const char c : bytes) crc = table[(crc ^ static_cast<uint8_t>(c)) & 0xFF] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

uint32_t masked_crc32c(std::string_view bytes) {
  const uint32_t crc = crc32c(bytes);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

std::string tf_record(std::string_view data) {
  std::string header;
  little_endian(header, data.size(), 8);
  std::string record = header;
  little_endian(record, masked_crc32c(header), 4);
  record += data;
  little_endian(record, masked_crc32c(data), 4);
  return record;
}

namespace {

// Whether `records` begin with the file_version record this file writes.
bool starts_with_version_record(const std::string& records) { return records.starts_with(tf_record(version_event())); }

// An Event of one Summary of one Value (its bytes).
std::string summary_event(std::string_view value_message, int64_t step, double wall_time) {
  std::string summary, event;
  bytes_field(summary, 1, value_message);
  double_field(event, 1, wall_time);
  varint_field(event, 2, static_cast<uint64_t>(step));
  bytes_field(event, 5, summary);
  return event;
}

}  // namespace

std::string scalar_event(const std::string& tag, int64_t step, double value, double wall_time) {
  std::string value_message;
  bytes_field(value_message, 1, tag);
  float_field(value_message, 2, static_cast<float>(value));
  return summary_event(value_message, step, wall_time);
}

std::string image_event(const std::string& tag, int64_t step, const EncodedImage& image, double wall_time) {
  std::string image_message, value_message;
  varint_field(image_message, 1, static_cast<uint64_t>(image.height));
  varint_field(image_message, 2, static_cast<uint64_t>(image.width));
  varint_field(image_message, 3, static_cast<uint64_t>(image.channels));
  bytes_field(image_message, 4, image.png);
  bytes_field(value_message, 1, tag);
  bytes_field(value_message, 4, image_message);
  return summary_event(value_message, step, wall_time);
}

EventFile::EventFile(const std::string& path, int64_t last_step) : path_(path) {
  std::error_code ec;
  const std::filesystem::file_status status = std::filesystem::status(path_, ec);
  if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status)) {
    throw Error("train", "'", path_, "' is not a regular file; move it away to resume");
  }
  std::ifstream old(path_, std::ios::binary);
  if (std::filesystem::exists(status) && !old) {
    throw Error("train", "cannot read '", path_, "': ", std::strerror(errno), "; axiom rewrites only what it can read");
  }
  const std::string text((std::istreambuf_iterator<char>(old)), std::istreambuf_iterator<char>());
  const std::string kept = records_up_to(text, last_step);
  if (!text.empty() && !starts_with_version_record(kept)) {
    throw Error("train", "'", path_, "' is not an event file axiom wrote (it does not start with a file_version ",
                "record); axiom rewrites only its own files: move it away to resume");
  }
  // rewritten only when records go (a copy of a file of many images needs room for two)
  if (kept.empty() || kept.size() != text.size())
    core::write_file_atomically(path_, kept.empty() ? tf_record(version_event()) : kept, "train");
  file_.reset(std::fopen(path_.c_str(), "ab"));
  if (!file_) throw Error("train", "cannot append to '", path_, "': ", std::strerror(errno));
}

void EventFile::scalar(const std::string& tag, int64_t step, double value, double wall_time) {
  write(tf_record(scalar_event(tag, step, value, wall_time)));
}

void EventFile::image(const std::string& tag, int64_t step, const EncodedImage& image, double wall_time) {
  write(tf_record(image_event(tag, step, image, wall_time)));
}

void EventFile::write(std::string_view record) {
  if (std::fwrite(record.data(), 1, record.size(), file_.get()) != record.size() || std::fflush(file_.get()) != 0) {
    throw Error("train", "cannot write '", path_, "': ", std::strerror(errno));
  }
}

}  // namespace axiom::apps
