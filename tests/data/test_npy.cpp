// NPY and NPZ on files written here: NumPy-format bytes built by hand, zip archives built with zlib,
// round trips through write_npy, and broken files.
#include <doctest/doctest.h>

#include "autograd/factory.h"
#include "core/factory.h"
#include "data/npy.h"
#include "tests/support/files.h"

using namespace axiom;
using namespace axiom::test;

namespace {

// An NPY file: magic, version, header length, the dict padded as NumPy pads it, then `data`.
Bytes npy_bytes(const std::string& dict, const Bytes& data, int major = 1) {
  const int length_bytes = major == 1 ? 2 : 4;
  std::string header = dict;
  header.append(63 - (8 + length_bytes + header.size()) % 64, ' ');
  header += '\n';
  Bytes bytes = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<uint8_t>(major), 0};
  append_le(bytes, header.size(), length_bytes);
  bytes.insert(bytes.end(), header.begin(), header.end());
  bytes.insert(bytes.end(), data.begin(), data.end());
  return bytes;
}

Bytes counting(size_t n) {
  Bytes data(n);
  for (size_t i = 0; i < n; ++i) data[i] = static_cast<uint8_t>(i);
  return data;
}

// A zip archive of (name, contents) members, each stored or deflated (raw deflate, as zip wants).
struct Member {
  std::string name;
  Bytes contents;
  bool deflate;
};
Bytes zip_bytes(const std::vector<Member>& members) {
  Bytes out, directory;
  for (const Member& m : members) {
    Bytes data = m.contents;
    if (m.deflate) {
      z_stream z{};
      REQUIRE(deflateInit2(&z, 9, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) == Z_OK);
      data.resize(deflateBound(&z, m.contents.size()));
      z.next_in = const_cast<Bytef*>(m.contents.data());
      z.avail_in = static_cast<uInt>(m.contents.size());
      z.next_out = data.data();
      z.avail_out = static_cast<uInt>(data.size());
      REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
      data.resize(z.total_out);
      deflateEnd(&z);
    }
    const uint32_t crc = static_cast<uint32_t>(crc32(0, m.contents.data(), static_cast<uInt>(m.contents.size())));
    const uint64_t offset = out.size();
    auto common = [&](Bytes& b) {  // version needed .. extra length, shared by both headers
      append_le(b, 20, 2), append_le(b, 0, 2), append_le(b, m.deflate ? 8 : 0, 2), append_le(b, 0, 4);
      append_le(b, crc, 4), append_le(b, data.size(), 4), append_le(b, m.contents.size(), 4);
      append_le(b, m.name.size(), 2), append_le(b, 0, 2);
    };
    append_le(out, 0x04034b50, 4), common(out);
    out.insert(out.end(), m.name.begin(), m.name.end());
    out.insert(out.end(), data.begin(), data.end());
    append_le(directory, 0x02014b50, 4), append_le(directory, 20, 2), common(directory);
    append_le(directory, 0, 2), append_le(directory, 0, 2), append_le(directory, 0, 2), append_le(directory, 0, 4);
    append_le(directory, offset, 4);
    directory.insert(directory.end(), m.name.begin(), m.name.end());
  }
  const uint64_t directory_at = out.size();
  out.insert(out.end(), directory.begin(), directory.end());
  append_le(out, 0x06054b50, 4), append_le(out, 0, 4);
  append_le(out, members.size(), 2), append_le(out, members.size(), 2);
  append_le(out, directory.size(), 4), append_le(out, directory_at, 4), append_le(out, 0, 2);
  return out;
}

bool has(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("read_npy reads versions 1, 2 and 3") {
  ScratchDir dir;
  for (int major : {1, 2, 3}) {
    CAPTURE(major);
    write_bytes(dir.file("a.npy"),
                npy_bytes("{'descr': '|u1', 'fortran_order': False, 'shape': (2, 3), }", counting(6), major));
    const Tensor x = data::read_npy(dir.file("a.npy"));
    CHECK(x.shape() == core::Shape{2, 3});
    CHECK(x.dtype() == Dtype::uint8);
    CHECK(x.to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 3, 4, 5});
  }
  // Keys in another order, double quotes, Python 2 longs, a 1-tuple, a scalar.
  write_bytes(dir.file("b.npy"),
              npy_bytes("{\"shape\": (4L,), \"fortran_order\": False, \"descr\": \"<u1\"}", counting(4)));
  CHECK(data::read_npy(dir.file("b.npy")).shape() == core::Shape{4});
  write_bytes(dir.file("c.npy"),
              npy_bytes("{'descr': '<i8', 'fortran_order': False, 'shape': (), }", {7, 0, 0, 0, 0, 0, 0, 0}));
  const Tensor c = data::read_npy(dir.file("c.npy"));
  CHECK(c.shape() == core::Shape{});
  CHECK(c.item() == 7);
}

TEST_CASE("write_npy round-trips uint8, float32, float64 and int64 in NumPy's layout") {
  ScratchDir dir;
  const std::string path = dir.file("x.npy");
  const Tensor u8(core::arange(0, 24, 1, Dtype::uint8).reshape({2, 3, 4}));
  data::write_npy(path, u8.transpose(0, 2));  // a non-contiguous view: written as its values
  const Bytes bytes = read_bytes(path);
  CHECK(bytes.size() == 128 + 24);  // 10 + header = 128 (a multiple of 64), as NumPy pads it
  const std::string header(bytes.begin() + 10, bytes.begin() + 128);
  CHECK(header.starts_with("{'descr': '|u1', 'fortran_order': False, 'shape': (4, 3, 2), }"));
  CHECK(header.back() == '\n');
  CHECK(data::read_npy(path).to_vector<int64_t>() == u8.transpose(0, 2).to_vector<int64_t>());
  for (Dtype dtype : {Dtype::float32, Dtype::float64, Dtype::int64}) {
    CAPTURE(dtype);
    const Tensor x(core::arange(-3, 2, 0.5, dtype == Dtype::int64 ? Dtype::float64 : dtype).to(dtype));
    data::write_npy(path, x);
    const Tensor y = data::read_npy(path);
    CHECK(y.dtype() == dtype);
    CHECK(y.shape() == x.shape());
    CHECK(y.to_vector<double>() == x.to_vector<double>());
  }
  data::write_npy(path, axiom::scalar(2.5));
  CHECK(data::read_npy(path).item() == 2.5);
  CHECK(!std::filesystem::exists(path + ".tmp"));
  CHECK(has(error_of([&] { data::write_npy(dir.file("no/such/dir/x.npy"), u8); }), "cannot write"));
}

TEST_CASE("read_npy rejects bad files naming the file, the field and the byte") {
  ScratchDir dir;
  const std::string path = dir.file("bad.npy");
  const std::string good = "{'descr': '|u1', 'fortran_order': False, 'shape': (2, 3), }";
  auto error_for = [&](const Bytes& bytes) {
    write_bytes(path, bytes);
    return error_of([&] { data::read_npy(path); });
  };
  Bytes bytes = npy_bytes(good, counting(6));
  bytes[1] = 'X';
  CHECK(has(error_for(bytes), "[npy] '" + path + "': bad magic at byte 0"));
  CHECK(has(error_for(npy_bytes(good, counting(6), 4)), "format version 4.0 at byte 6 is not 1, 2 or 3"));
  CHECK(has(error_for(npy_bytes("{'descr': '|u1', 'fortran_order': True, 'shape': (2, 3), }", counting(6))),
            "bad header at byte 44: fortran_order True is not supported"));
  CHECK(has(error_for(npy_bytes("{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }", counting(24))),
            "bad header at byte 20: unsupported dtype '<i4'"));
  CHECK(has(error_for(npy_bytes("{'descr': '|u1', 'shape': (2, 3), }", counting(6))), "needs the keys"));
  CHECK(has(error_for(npy_bytes("{'descr': '|u1', 'fortran_order': False, 'shape': (2, x), }", counting(6))),
            "bad header at byte 64: expected a size"));
  CHECK(has(error_for(npy_bytes("{'descr': '|u1', 'fortran_order': False, 'shape': (2, 3), 'x': 1}", counting(6))),
            "unexpected or repeated key 'x'"));
  CHECK(has(error_for(npy_bytes(good, counting(5))),
            "declares 6 bytes of array data from byte 128 but the file can hold at most 5 more"));
  CHECK(has(error_for(npy_bytes(good, counting(8))), "2 unexpected trailing bytes after byte 134"));
  // A header that declares 2^31 x 2^31 elements in a 100-byte file: an Error, not an allocation.
  CHECK(has(error_for(npy_bytes("{'descr': '|u1', 'fortran_order': False, 'shape': (2147483648, 2147483648), }",
                                counting(4))),
            "bytes of array data from byte 128 but the file can hold at most 4 more"));
  bytes = npy_bytes(good, counting(6));
  bytes.resize(30);  // cut inside the header
  CHECK(has(error_for(bytes), "declares 118 bytes of header from byte 10 but the file can hold at most 20 more"));
  bytes.resize(9);
  CHECK(has(error_for(bytes), "truncated header length: needs 2 bytes from byte 8, the data ends at byte 9"));
}

TEST_CASE("read_npz reads stored and deflated members") {
  ScratchDir dir;
  const std::string path = dir.file("pair.npz");
  Bytes big(5000, 0);  // compressible: the deflated member is much smaller
  for (size_t i = 0; i < big.size(); i += 7) big[i] = static_cast<uint8_t>(i);
  write_bytes(
      path,
      zip_bytes(
          {{"images.npy", npy_bytes("{'descr': '|u1', 'fortran_order': False, 'shape': (50, 10, 10), }", big), true},
           {"labels.npy",
            npy_bytes("{'descr': '<i8', 'fortran_order': False, 'shape': (1,), }", {9, 0, 0, 0, 0, 0, 0, 0}), false}}));
  const auto arrays = data::read_npz(path);
  REQUIRE(arrays.size() == 2);
  CHECK(arrays.at("images").shape() == core::Shape{50, 10, 10});
  const auto values = arrays.at("images").to_vector<int64_t>();
  CHECK(values == std::vector<int64_t>(big.begin(), big.end()));
  CHECK(arrays.at("labels").to_vector<int64_t>() == std::vector<int64_t>{9});
}

TEST_CASE("read_npz rejects bad archives") {
  ScratchDir dir;
  const std::string path = dir.file("bad.npz");
  const Bytes array = npy_bytes("{'descr': '|u1', 'fortran_order': False, 'shape': (100,), }", Bytes(100, 3));
  auto error_for = [&](const Bytes& bytes) {
    write_bytes(path, bytes);
    return error_of([&] { data::read_npz(path); });
  };
  CHECK(has(error_for(array), "[npz] '" + path + "': not a readable zip archive (libzip: Not a zip archive)"));
  CHECK(has(error_for({1, 2, 3}), "not a readable zip archive (libzip: Not a zip archive)"));

  Bytes zip = zip_bytes({{"a.npy", array, true}});
  // The deflated data cut short: keep the directory, drop bytes inside the member's data.
  Bytes cut = zip;
  cut[30 + 5 + 10] ^= 0x55;  // corrupt a byte of deflate data
  const std::string corrupt = error_for(cut);
  CHECK(has(corrupt, "'" + path + "' member 'a.npy'"));
  // A member whose declared size is huge, in its directory entry and its local header alike:
  // caught before any allocation.
  Bytes huge = zip;
  const size_t entry = zip.size() - 22 - (46 + 5);
  for (size_t size_at : {entry + 24, size_t{22}}) {  // the uncompressed size in both headers
    huge[size_at] = 0xff, huge[size_at + 1] = 0xff, huge[size_at + 2] = 0xff, huge[size_at + 3] = 0x7f;
  }
  CHECK(has(error_for(huge), "member 'a.npy': declares 2147483647 bytes from "));
  CHECK(has(error_for(huge), "deflated bytes, more than deflate can produce"));
  // The directory and the local header disagree: libzip's consistency check.
  Bytes inconsistent = zip;
  inconsistent[entry + 24] ^= 0x01;
  CHECK(has(error_for(inconsistent), "not a readable zip archive (libzip: "));
  // The directory pointing outside the file.
  Bytes outside = zip;
  outside[outside.size() - 22 + 16] = 0xff, outside[outside.size() - 22 + 17] = 0xff;
  CHECK(has(error_for(outside), "[npz] '" + path + "': not a readable zip archive (libzip: "));
  // Two members with one name, and two names for one array.
  CHECK(has(error_for(zip_bytes({{"a.npy", array, false}, {"a.npy", array, true}})), "(libzip: File already exists)"));
  CHECK(has(error_for(zip_bytes({{"a.npy", array, false}, {"a", array, true}})), "the array 'a' appears twice"));
  // A stored member that is one byte short of what its NPY header declares.
  const Bytes short_array = npy_bytes("{'descr': '|u1', 'fortran_order': False, 'shape': (101,), }", Bytes(100, 3));
  CHECK(has(error_for(zip_bytes({{"s.npy", short_array, false}})),
            "member 's.npy': the header declares 101 bytes of array data"));
}
