// TensorBoard's event files, written by axiom (no TensorFlow, no protobuf library): `tensorboard
// --logdir runs/` shows a run's scalars beside its metrics.jsonl.
//
// The format is small. A file is a sequence of TFRecords:
//   uint64 length | uint32 masked CRC-32C of those 8 bytes | length bytes of data | uint32 masked CRC-32C of the data
// (little-endian; masked: ((crc >> 15) | (crc << 17)) + 0xa282ead8), each data a protobuf Event:
//   Event   { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5; }
//   Summary { repeated Value value = 1; }
//   Value   { string tag = 1; float simple_value = 2; Image image = 4; }
//   Image   { int32 height = 1; int32 width = 2; int32 colorspace = 3; bytes encoded_image_string = 4; }
// The first record says file_version "brain.Event:2"; each scalar or image is then one Event of
// one Value (an image's bytes are a PNG file; colorspace 1 is grey, 3 RGB).
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

namespace axiom::apps {

// CRC-32C (Castagnoli), and the masked form TFRecords store.
uint32_t crc32c(std::string_view bytes);
uint32_t masked_crc32c(std::string_view bytes);

// One TFRecord around `data`.
std::string tf_record(std::string_view data);

// One Event of one scalar, as protobuf bytes.
std::string scalar_event(const std::string& tag, int64_t step, double value, double wall_time);

// A PNG picture of height x width pixels of `channels` (1 grey, 3 RGB) values each.
struct EncodedImage {
  std::string png;
  int64_t height = 0, width = 0, channels = 1;
};

// One Event of one image, as protobuf bytes.
std::string image_event(const std::string& tag, int64_t step, const EncodedImage& image, double wall_time);

class EventFile {
 public:
  // Appends to `path`, keeping of what is there the records of steps up to `last_step` (a resumed
  // run redoes the steps after its checkpoint, as metrics.jsonl does) and dropping a torn last
  // record; a new file starts with the file_version record. A file that is there but does not
  // start with that record is not axiom's to rewrite: an Error names it, as for any other failure.
  EventFile(const std::string& path, int64_t last_step);

  // One scalar (TensorBoard plots a float32); each record is flushed as it is written.
  void scalar(const std::string& tag, int64_t step, double value, double wall_time);
  void image(const std::string& tag, int64_t step, const EncodedImage& image, double wall_time);
  const std::string& path() const { return path_; }

 private:
  void write(std::string_view record);
  struct Closer {
    void operator()(std::FILE* file) const { std::fclose(file); }
  };
  std::string path_;
  std::unique_ptr<std::FILE, Closer> file_;
};

}  // namespace axiom::apps
