// The CIFAR binary reader on files written here.
#include <doctest/doctest.h>

#include "data/cifar.h"
#include "tests/support/files.h"

using namespace axiom;
using namespace axiom::test;

namespace {

// `count` records; record r has label(s) and pixels (r + p) % 256 for pixel byte p.
Bytes cifar_file(int count, int label_bytes, int first = 0) {
  Bytes bytes;
  for (int r = first; r < first + count; ++r) {
    if (label_bytes == 2) bytes.push_back(static_cast<uint8_t>(r % 20));
    bytes.push_back(static_cast<uint8_t>(r % 10));
    for (int p = 0; p < 3072; ++p) bytes.push_back(static_cast<uint8_t>((r + p) % 256));
  }
  return bytes;
}

}  // namespace

TEST_CASE("read_cifar reads CIFAR-10 and CIFAR-100 records across files") {
  ScratchDir dir;
  for (int label_bytes : {1, 2}) {
    CAPTURE(label_bytes);
    write_bytes(dir.file("a.bin"), cifar_file(3, label_bytes, 0));
    write_bytes(dir.file("b.bin"), cifar_file(2, label_bytes, 3));
    const data::ImageDataset set = data::read_cifar({dir.file("a.bin"), dir.file("b.bin")}, label_bytes);
    CHECK(set.images.shape() == core::Shape{5, 3, 32, 32});
    CHECK(set.labels.to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 3, 4});
    // Record 4, channel 2 (blue), row 1, column 5 is pixel byte 2*1024 + 32 + 5.
    CHECK(set.images.at({4, 2, 1, 5}) == (4 + 2 * 1024 + 32 + 5) % 256);
  }
}

TEST_CASE("read_cifar rejects bad files") {
  ScratchDir dir;
  const std::string path = dir.file("bad.bin");
  Bytes bytes = cifar_file(2, 1);
  bytes.pop_back();
  write_bytes(path, bytes);
  CHECK(error_of([&] {
          data::read_cifar({path}, 1);
        }).find("its size, 6145 bytes, is not a whole number of 3073-byte records") != std::string::npos);
  // A CIFAR-10 file read as CIFAR-100 has the wrong record length.
  write_bytes(path, cifar_file(2, 1));
  CHECK(error_of([&] { data::read_cifar({path}, 2); }).find("3074-byte records") != std::string::npos);
  bytes = cifar_file(2, 1);
  bytes[3073] = 12;  // record 1's label
  write_bytes(path, bytes);
  CHECK(error_of([&] { data::read_cifar({path}, 1); }).find("label 12 of record 1 at byte 3073 is not below 10") !=
        std::string::npos);
  CHECK(error_of([&] { data::read_cifar({path}, 3); }).find("label_bytes must be 1") != std::string::npos);
  CHECK(error_of([&] { data::read_cifar({dir.file("absent")}, 1); }).find("cannot open") != std::string::npos);
  // An empty batch file is not a batch of no records: it would silently drop a fifth of CIFAR-10.
  write_bytes(dir.file("empty.bin"), {});
  write_bytes(path, cifar_file(2, 1));
  CHECK(error_of([&] {
          data::read_cifar({path, dir.file("empty.bin")}, 1);
        }) == "[cifar] '" + dir.file("empty.bin") + "' is empty: a CIFAR batch file holds 3073-byte records");
}
