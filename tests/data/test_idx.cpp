// The IDX reader on files written here: raw and gzip round trips, and every kind of broken file.
#include <doctest/doctest.h>

#include "core/factory.h"
#include "data/idx.h"
#include "tests/support/files.h"

using namespace axiom;
using namespace axiom::test;

namespace {

// An IDX file of uint8 elements 0, 1, 2, ... (mod 251) with the given sizes.
Bytes idx_file(const std::vector<uint32_t>& sizes, uint8_t type = 0x08) {
  Bytes bytes = {0, 0, type, static_cast<uint8_t>(sizes.size())};
  uint64_t count = 1;
  for (uint32_t size : sizes) append_be32(bytes, size), count *= size;
  for (uint64_t i = 0; i < count; ++i) bytes.push_back(static_cast<uint8_t>(i % 251));
  return bytes;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("read_idx reads images and labels, raw and gzip") {
  ScratchDir dir;
  const Bytes images = idx_file({3, 4, 5}), labels = idx_file({3});
  for (bool gzip : {false, true}) {
    CAPTURE(gzip);
    const std::string images_path = dir.file(gzip ? "images.gz" : "images"),
                      labels_path = dir.file(gzip ? "labels.gz" : "labels");
    (gzip ? write_gzip : write_bytes)(images_path, images);
    (gzip ? write_gzip : write_bytes)(labels_path, labels);
    const Tensor x = data::read_idx(images_path);
    CHECK(x.shape() == core::Shape{3, 4, 5});
    CHECK(x.dtype() == Dtype::uint8);
    const auto values = x.to_vector<int64_t>();
    for (size_t i = 0; i < values.size(); ++i) CHECK(values[i] == static_cast<int64_t>(i % 251));

    const data::ImageDataset set = data::read_idx_dataset(images_path, labels_path, 10);
    CHECK(set.labels.dtype() == Dtype::int64);
    CHECK(set.labels.to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2});
  }
}

TEST_CASE("read_idx reads any rank and empty arrays") {
  ScratchDir dir;
  write_bytes(dir.file("a"), idx_file({2, 1, 3, 2}));
  CHECK(data::read_idx(dir.file("a")).shape() == core::Shape{2, 1, 3, 2});
  write_bytes(dir.file("b"), idx_file({0, 28, 28}));
  CHECK(data::read_idx(dir.file("b")).shape() == core::Shape{0, 28, 28});
}

TEST_CASE("read_idx rejects bad files naming the file, the field and the byte") {
  ScratchDir dir;
  const std::string path = dir.file("bad");

  SUBCASE("missing file") {
    CHECK(contains(error_of([&] { data::read_idx(dir.file("absent")); }), "cannot open"));
  }
  SUBCASE("wrong magic") {
    Bytes bytes = idx_file({2, 2});
    bytes[0] = 0x12;
    write_bytes(path, bytes);
    const std::string message = error_of([&] { data::read_idx(path); });
    CHECK(contains(message, "[idx] '" + path + "'"));
    CHECK(contains(message, "bad magic number at byte 0"));
  }
  SUBCASE("unsupported element type") {
    write_bytes(path, idx_file({2}, 0x0D));
    CHECK(contains(error_of([&] { data::read_idx(path); }), "element type 0xd (float32) at byte 2 is not supported"));
  }
  SUBCASE("a size of 0 before huge sizes (found by fuzz_idx: their strides overflowed)") {
    write_bytes(path, idx_file({0, 0xFFFFFFFF, 0xFFFFFFFF}));
    CHECK(contains(error_of([&] { data::read_idx(path); }),
                   "the sizes (axis 1 = 4294967295 at byte 8) declare more than the"));
  }
  SUBCASE("rank zero") {
    write_bytes(path, {0, 0, 8, 0});
    CHECK(contains(error_of([&] { data::read_idx(path); }), "rank 0 at byte 3"));
  }
  SUBCASE("header cut inside the sizes") {
    Bytes bytes = idx_file({2, 3, 4});
    bytes.resize(10);
    write_bytes(path, bytes);
    CHECK(contains(error_of([&] { data::read_idx(path); }),
                   "truncated size of axis 1: needs 4 bytes from byte 8, the data ends at byte 10"));
  }
  SUBCASE("truncated elements") {
    Bytes bytes = idx_file({3, 4, 5});
    bytes.resize(bytes.size() - 7);
    write_bytes(path, bytes);
    CHECK(contains(error_of([&] { data::read_idx(path); }),
                   "declares 60 bytes of elements from byte 16 but the file can hold at most 53 more"));
  }
  SUBCASE("truncated gzip data") {
    Bytes bytes = idx_file({3, 4, 5});
    bytes.resize(bytes.size() - 7);
    write_gzip(path, bytes);
    CHECK(contains(error_of([&] { data::read_idx(path); }),
                   "truncated elements: needs 60 bytes from byte 16, the data ends at byte 69"));
  }
  SUBCASE("gzip file cut short") {
    write_gzip(path, idx_file({30, 4, 5}));
    Bytes gz = read_bytes(path);
    gz.resize(gz.size() - 12);
    write_bytes(path, gz);
    CHECK(contains(error_of([&] { data::read_idx(path); }), "the gzip stream is cut short"));
  }
  SUBCASE("corrupt gzip data") {
    write_gzip(path, idx_file({30, 4, 5}));
    Bytes gz = read_bytes(path);
    gz[gz.size() - 6] ^= 0xff;  // inside the CRC-32 / length trailer
    write_bytes(path, gz);
    CHECK(contains(error_of([&] { data::read_idx(path); }), "corrupt gzip data"));
  }
  SUBCASE("a huge header in a small file allocates nothing") {
    Bytes bytes = {0, 0, 8, 3};
    append_be32(bytes, 1u << 31), append_be32(bytes, 28), append_be32(bytes, 28);
    bytes.resize(100);
    write_bytes(path, bytes);
    CHECK(contains(error_of([&] { data::read_idx(path); }), "declare more than the 1073741824-byte limit"));
    Bytes small = {0, 0, 8, 1};
    append_be32(small, 1u << 29);
    small.resize(100);
    write_bytes(path, small);
    CHECK(contains(error_of([&] { data::read_idx(path); }),
                   "declares 536870912 bytes of elements from byte 8 but the file can hold at most 92 more"));
    write_gzip(path, small);  // the gzip bound: 1032 bytes out per byte in
    CHECK(contains(error_of([&] { data::read_idx(path); }), "declares 536870912 bytes of elements from byte 8"));
  }
  SUBCASE("trailing bytes") {
    Bytes bytes = idx_file({2, 2});
    bytes.push_back(7), bytes.push_back(7);
    write_bytes(path, bytes);
    CHECK(contains(error_of([&] { data::read_idx(path); }), "2 unexpected trailing bytes after byte 16"));
    write_gzip(path, bytes);
    CHECK(contains(error_of([&] { data::read_idx(path); }), "2 unexpected trailing bytes after byte 16"));
  }
}

TEST_CASE("read_idx_dataset checks that images and labels agree") {
  ScratchDir dir;
  write_bytes(dir.file("images"), idx_file({3, 2, 2}));
  write_bytes(dir.file("labels"), idx_file({4}));
  CHECK(contains(error_of([&] { data::read_idx_dataset(dir.file("images"), dir.file("labels")); }),
                 "holds 3 images but"));
  Bytes labels = idx_file({3});
  labels[9] = 10;  // example 1's label
  write_bytes(dir.file("labels"), labels);
  CHECK(contains(error_of([&] { data::read_idx_dataset(dir.file("images"), dir.file("labels")); }),
                 "label 10 of example 1 (byte 9) is not below the 10 classes"));
}
