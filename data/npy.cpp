// NPY: magic -> version -> header length -> the dict (a tiny parser for the three keys) -> data.
// NPZ: end of central directory (zip64 too) -> central directory entries -> local headers -> each
// member read as NPY through a ByteStream (stored or inflated).
#include "data/npy.h"


#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/factory.h"
#include "data/byte_stream.h"

namespace axiom::data {

static_assert(std::endian::native == std::endian::little, "NPY data is copied as little-endian bytes");

namespace {

constexpr uint64_t kMaxHeaderBytes = 1 << 16;  // far above any header of a plain array
constexpr uint64_t kMaxDeflateRatio = 1032;     // zlib's worst case: output bytes per input byte

// --- the header dict -------------------------------------------------------------------------------

struct NpyHeader {
  core::Dtype dtype = core::Dtype::uint8;
  core::Shape shape;
};

// A recursive-descent reader for exactly the dict NumPy writes. `base` is the byte offset of the
// text in the file, so that errors can say which byte is wrong.
class DictParser {
 public:
  DictParser(std::string_view text, uint64_t base, const std::string& origin) : text_(text), base_(base), origin_(origin) {}

  NpyHeader parse() {
    bool seen_descr = false, seen_order = false, seen_shape = false;
    NpyHeader header;
    expect('{');
    while (!eat('}')) {
      const size_t key_at = pos_;
      const std::string key = string_literal();
      expect(':');
      skip_space();
      if (key == "descr" && !seen_descr) {
        const size_t at = pos_;
        header.dtype = dtype_of_descr(string_literal(), at);
        seen_descr = true;
      } else if (key == "fortran_order" && !seen_order) {
        const size_t at = pos_;
        if (word("True")) fail_at(at, "fortran_order True is not supported (only C order)");
        if (!word("False")) fail_at(at, "fortran_order must be True or False");
        seen_order = true;
      } else if (key == "shape" && !seen_shape) {
        header.shape = shape_tuple();
        seen_shape = true;
      } else {
        fail_at(key_at, "unexpected or repeated key '" + key + "'");
      }
      if (!eat(',')) {
        expect('}');
        break;
      }
    }
    skip_space();
    if (pos_ != text_.size()) fail_at(pos_, "unexpected text after the dict");
    if (!seen_descr || !seen_order || !seen_shape) fail_at(0, "the dict needs the keys 'descr', 'fortran_order' and 'shape'");
    return header;
  }

 private:
  [[noreturn]] void fail_at(size_t at, const std::string& what) const {
    throw Error("npy", origin_, ": bad header at byte ", base_ + at, ": ", what, " (header: ",
                std::string(text_.substr(0, 200)), ")");
  }
  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' || text_[pos_] == '\t')) ++pos_;
  }
  bool eat(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) return ++pos_, true;
    return false;
  }
  void expect(char c) {
    if (!eat(c)) fail_at(pos_, std::string("expected '") + c + "'");
  }
  bool word(std::string_view w) {
    skip_space();
    if (text_.substr(pos_, w.size()) != w) return false;
    pos_ += w.size();
    return true;
  }
  std::string string_literal() {
    skip_space();
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"')) fail_at(pos_, "expected a quoted string");
    const char quote = text_[pos_];
    const size_t end = text_.find(quote, pos_ + 1);
    if (end == std::string_view::npos) fail_at(pos_, "unterminated string");
    std::string value(text_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return value;
  }
  core::Shape shape_tuple() {
    expect('(');
    core::Shape shape;
    while (!eat(')')) {
      skip_space();
      const size_t at = pos_;
      int64_t value = 0;
      bool digits = false;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
        if (value > (int64_t{1} << 48)) fail_at(at, "a size is too large");
        value = value * 10 + (text_[pos_++] - '0');
        digits = true;
      }
      if (!digits) fail_at(at, "expected a size (a non-negative integer)");
      if (pos_ < text_.size() && text_[pos_] == 'L') ++pos_;  // Python 2 wrote 3L
      shape.push_back(value);
      if (shape.size() > 32) fail_at(at, "more than 32 axes");
      if (!eat(',')) {
        expect(')');
        break;
      }
    }
    return shape;
  }
  core::Dtype dtype_of_descr(const std::string& descr, size_t at) const {
    if (descr == "|u1" || descr == "<u1" || descr == ">u1" || descr == "u1") return core::Dtype::uint8;
    if (descr == "<f4") return core::Dtype::float32;
    if (descr == "<f8") return core::Dtype::float64;
    if (descr == "<i8") return core::Dtype::int64;
    fail_at(at, "unsupported dtype '" + descr + "' (supported: '|u1', '<f4', '<f8', '<i8')");
  }

  std::string_view text_;
  uint64_t base_;
  const std::string& origin_;
  size_t pos_ = 0;
};

// One NPY array from a stream that holds exactly it.
core::Tensor read_npy_stream(ByteStream& stream) {
  const std::string& origin = stream.origin();
  unsigned char prefix[8];
  stream.read(prefix, 8, "npy", "magic and version (bytes 0-7)");
  if (std::memcmp(prefix, "\x93NUMPY", 6) != 0) throw Error("npy", origin, ": bad magic at byte 0 (an NPY file starts with \\x93NUMPY)");
  const int major = prefix[6];
  if (major < 1 || major > 3) throw Error("npy", origin, ": format version ", major, ".", int{prefix[7]}, " at byte 6 is not 1, 2 or 3");
  const int length_bytes = major == 1 ? 2 : 4;
  unsigned char length[4];
  stream.read(length, length_bytes, "npy", "header length");
  const uint64_t header_length = little_endian(length, length_bytes);
  if (header_length > kMaxHeaderBytes) {
    throw Error("npy", origin, ": the header length at byte 8 is ", header_length, " bytes, over the limit of ", kMaxHeaderBytes);
  }
  stream.check_available(header_length, "npy", "header");
  const uint64_t header_at = stream.position();
  std::string text(header_length, '\0');
  stream.read(text.data(), header_length, "npy", "header");
  const NpyHeader header = DictParser(text, header_at, origin).parse();

  uint64_t nbytes = core::dtype_size(header.dtype);
  for (int64_t size : header.shape) {
    if (size != 0 && nbytes > (uint64_t{1} << 62) / static_cast<uint64_t>(size)) {
      throw Error("npy", origin, ": the shape ", header.shape, " is too large");
    }
    nbytes *= static_cast<uint64_t>(size);
  }
  stream.check_available(nbytes, "npy", "array data");
  core::Tensor out = core::empty(header.shape, header.dtype);
  stream.read(out.raw_data(), nbytes, "npy", "array data");
  stream.expect_end("npy");
  return out;
}

// --- the zip directory ---------------------------------------------------------------------------

// Reads `n` bytes at `offset` of an open file (the caller has checked the range).
std::vector<unsigned char> read_at(std::FILE* file, uint64_t offset, uint64_t n, const std::string& origin, const char* what) {
  std::vector<unsigned char> bytes(n);
  if (std::fseek(file, static_cast<long>(offset), SEEK_SET) != 0 || std::fread(bytes.data(), 1, n, file) != n) {
    throw Error("npz", origin, ": cannot read the ", what, " (", n, " bytes at byte ", offset, ")");
  }
  return bytes;
}

struct ZipEntry {
  std::string name;
  int method = 0;
  uint64_t compressed = 0, size = 0, header_offset = 0, data_offset = 0;
};

struct ZipDirectory {
  uint64_t entries = 0, offset = 0, size = 0, end_at = 0;  // end_at: where the directory must end
};

// The end-of-central-directory record (and the zip64 one when sizes overflow 32 bits).
ZipDirectory find_directory(std::FILE* file, uint64_t file_size, const std::string& origin) {
  constexpr uint64_t kEnd = 22, kMaxComment = 65535;
  if (file_size < kEnd) throw Error("npz", origin, ": ", file_size, " bytes is too short for a zip file (at least 22)");
  const uint64_t tail_at = file_size - std::min(file_size, kEnd + kMaxComment);
  const auto tail = read_at(file, tail_at, file_size - tail_at, origin, "end of the zip file");
  for (uint64_t i = tail.size() - kEnd + 1; i-- > 0;) {
    const unsigned char* r = tail.data() + i;
    if (little_endian(r, 4) != 0x06054b50 || i + kEnd + little_endian(r + 20, 2) != tail.size()) continue;
    ZipDirectory dir{little_endian(r + 10, 2), little_endian(r + 16, 4), little_endian(r + 12, 4), tail_at + i};
    if (little_endian(r + 4, 2) != 0 || little_endian(r + 6, 2) != 0) throw Error("npz", origin, ": multi-disk zip files are not supported");
    if (dir.entries == 0xffff || dir.offset == 0xffffffff || dir.size == 0xffffffff) {
      // zip64: a 20-byte locator just before, pointing at a 56-byte zip64 end record.
      const uint64_t at = tail_at + i;
      if (at < 20) throw Error("npz", origin, ": the zip64 locator before byte ", at, " is missing");
      const auto locator = read_at(file, at - 20, 20, origin, "zip64 locator");
      const uint64_t record_at = little_endian(locator.data() + 8, 8);
      if (little_endian(locator.data(), 4) != 0x07064b50 || record_at > at - 20 || at - 20 - record_at < 56) {
        throw Error("npz", origin, ": bad zip64 locator at byte ", at - 20);
      }
      const auto record = read_at(file, record_at, 56, origin, "zip64 end record");
      if (little_endian(record.data(), 4) != 0x06064b50) throw Error("npz", origin, ": bad zip64 end record at byte ", record_at);
      dir = {little_endian(record.data() + 32, 8), little_endian(record.data() + 48, 8), little_endian(record.data() + 40, 8), record_at};
    }
    if (dir.offset > dir.end_at || dir.size > dir.end_at - dir.offset) {
      throw Error("npz", origin, ": the central directory (", dir.size, " bytes at byte ", dir.offset,
                  ") does not fit before byte ", dir.end_at);
    }
    return dir;
  }
  throw Error("npz", origin, ": no end-of-central-directory record in the last ", tail.size(), " bytes: not a zip file");
}

std::vector<ZipEntry> read_directory(std::FILE* file, const ZipDirectory& dir, const std::string& origin) {
  const auto bytes = read_at(file, dir.offset, dir.size, origin, "central directory");
  std::vector<ZipEntry> entries;
  uint64_t pos = 0;
  auto need = [&](uint64_t n, const char* what) {
    if (n > bytes.size() - pos) {
      throw Error("npz", origin, ": the central directory is truncated: ", what, " needs ", n, " bytes at byte ", dir.offset + pos);
    }
  };
  for (uint64_t e = 0; e < dir.entries; ++e) {
    need(46, "an entry");
    const unsigned char* r = bytes.data() + pos;
    const uint64_t at = dir.offset + pos;
    if (little_endian(r, 4) != 0x02014b50) throw Error("npz", origin, ": bad central directory entry signature at byte ", at);
    if (little_endian(r + 8, 2) & 1) throw Error("npz", origin, ": encrypted member at byte ", at);
    ZipEntry entry;
    entry.method = static_cast<int>(little_endian(r + 10, 2));
    entry.compressed = little_endian(r + 20, 4);
    entry.size = little_endian(r + 24, 4);
    entry.header_offset = little_endian(r + 42, 4);
    const uint64_t name_length = little_endian(r + 28, 2), extra_length = little_endian(r + 30, 2),
                   comment_length = little_endian(r + 32, 2);
    pos += 46;
    need(name_length + extra_length + comment_length, "a name, extra field and comment");
    entry.name.assign(reinterpret_cast<const char*>(bytes.data() + pos), name_length);
    // zip64 extra field (id 1): the 64-bit values of whichever 32-bit fields are 0xffffffff, in order.
    for (uint64_t x = pos + name_length; x + 4 <= pos + name_length + extra_length;) {
      const uint64_t id = little_endian(&bytes[x], 2), length = little_endian(&bytes[x + 2], 2);
      uint64_t field = x + 4;
      const uint64_t field_end = std::min(field + length, pos + name_length + extra_length);
      if (id == 1) {
        for (uint64_t* value : {&entry.size, &entry.compressed, &entry.header_offset}) {
          if (*value != 0xffffffff) continue;
          if (field + 8 > field_end) throw Error("npz", origin, ": short zip64 extra field at byte ", dir.offset + x);
          *value = little_endian(&bytes[field], 8);
          field += 8;
        }
      }
      x += 4 + length;
    }
    pos += name_length + extra_length + comment_length;
    entries.push_back(entry);
  }
  return entries;
}

// Finds where a member's data starts (after its local header) and checks that it lies in the file.
void locate_data(std::FILE* file, ZipEntry& entry, uint64_t limit, const std::string& origin) {
  const std::string member = origin + " member '" + entry.name + "'";
  if (entry.header_offset > limit || limit - entry.header_offset < 30) {
    throw Error("npz", member, ": the local header at byte ", entry.header_offset, " lies outside the file");
  }
  const auto local = read_at(file, entry.header_offset, 30, origin, "local header");
  if (little_endian(local.data(), 4) != 0x04034b50) throw Error("npz", member, ": bad local header signature at byte ", entry.header_offset);
  entry.data_offset = entry.header_offset + 30 + little_endian(local.data() + 26, 2) + little_endian(local.data() + 28, 2);
  if (entry.data_offset > limit || entry.compressed > limit - entry.data_offset) {
    throw Error("npz", member, ": its ", entry.compressed, " bytes of data at byte ", entry.data_offset, " run past byte ", limit);
  }
  if (entry.method == 0 && entry.compressed != entry.size) {
    throw Error("npz", member, ": stored, yet its sizes differ (", entry.compressed, " compressed, ", entry.size, " not)");
  }
  if (entry.method == 8 && entry.size > entry.compressed * kMaxDeflateRatio + 1024) {
    throw Error("npz", member, ": declares ", entry.size, " bytes from ", entry.compressed,
                " deflated bytes, more than deflate can produce");
  }
}

// --- writing ---------------------------------------------------------------------------------------

std::string descr_of(core::Dtype dtype) {
  switch (dtype) {
    case core::Dtype::uint8: return "|u1";
    case core::Dtype::float32: return "<f4";
    case core::Dtype::float64: return "<f8";
    case core::Dtype::int64: return "<i8";
  }
  throw Error("write_npy", "dtype ", dtype, " has no NPY descr");
}

std::string errno_text() { return std::generic_category().message(errno); }

}  // namespace

core::Tensor read_npy(const std::string& path) {
  auto stream = open_file(path, "npy");
  return read_npy_stream(*stream);
}

std::map<std::string, core::Tensor> read_npz(const std::string& path) {
  const uint64_t size = file_size(path, "npz");
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) throw Error("npz", "cannot open ", quoted(path), ": ", errno_text());
  const std::string origin = quoted(path);
  const ZipDirectory dir = find_directory(file.get(), size, origin);
  std::map<std::string, core::Tensor> arrays;
  for (ZipEntry& entry : read_directory(file.get(), dir, origin)) {
    locate_data(file.get(), entry, dir.offset, origin);
    std::string key = entry.name;
    if (key.size() > 4 && key.ends_with(".npy")) key.resize(key.size() - 4);
    if (arrays.count(key)) throw Error("npz", origin, ": the array '", key, "' appears twice");
    auto stream = open_zip_member(path, entry.name, entry.data_offset, entry.compressed, entry.size, entry.method, "npz");
    arrays[key] = read_npy_stream(*stream);
  }
  return arrays;
}

void write_npy(const std::string& path, const core::Tensor& tensor) {
  if (!tensor.defined()) throw Error("write_npy", "cannot write '", path, "': the tensor is undefined");
  const core::Tensor host = tensor.to(core::Device::cpu()).contiguous();
  std::string shape;
  for (int64_t size : host.shape()) shape += std::to_string(size) + ", ";
  if (host.dim() > 1) shape.resize(shape.size() - 2);  // (2, 3); a 1-tuple keeps its comma: (5,)
  if (host.dim() == 1) shape.pop_back();
  std::string header = "{'descr': '" + descr_of(host.dtype()) + "', 'fortran_order': False, 'shape': (" + shape + "), }";
  header.append(63 - (10 + header.size()) % 64, ' ');  // total length a multiple of 64, as NumPy pads it
  header += '\n';
  std::string prefix = std::string("\x93NUMPY\x01\x00", 8);
  prefix += static_cast<char>(header.size() & 0xff);
  prefix += static_cast<char>(header.size() >> 8);

  const uint64_t nbytes = static_cast<uint64_t>(host.numel()) * core::dtype_size(host.dtype());
  core::write_file_atomically(path, {{prefix.data(), prefix.size()}, {header.data(), header.size()}, {host.raw_data(), nbytes}},
                              "write_npy");
}

}  // namespace axiom::data
