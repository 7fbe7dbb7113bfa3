// NPY: magic -> version -> header length -> the dict (a tiny parser for the three keys) -> data.
// NPZ: libzip opens the archive and checks its directory -> each entry checked -> each member read
// as NPY through a ByteStream (stored or inflated by libzip).
#include "data/npy.h"

#include <zip.h>

#include <bit>
#include <cstring>

#include "core/formats/atomic_file.h"
#include "core/error.h"
#include "core/factory.h"
#include "data/byte_stream.h"
#include "autograd/internal.h"

namespace axiom::data {

static_assert(std::endian::native == std::endian::little, "NPY data is copied as little-endian bytes");

namespace {

constexpr uint64_t kMaxHeaderBytes = 1 << 16;  // far above any header of a plain array
constexpr uint64_t kMaxDeflateRatio = 1032;    // zlib's worst case: output bytes per input byte

// --- the header dict -------------------------------------------------------------------------------

struct NpyHeader {
  Dtype dtype = Dtype::uint8;
  core::Shape shape;
};

// A recursive-descent reader for exactly the dict NumPy writes. `base` is the byte offset of the
// text in the file, so that errors can say which byte is wrong.
class DictParser {
 public:
  DictParser(std::string_view text, uint64_t base, const std::string& origin)
      : text_(text), base_(base), origin_(origin) {}

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
    if (!seen_descr || !seen_order || !seen_shape)
      fail_at(0, "the dict needs the keys 'descr', 'fortran_order' and 'shape'");
    return header;
  }

 private:
  [[noreturn]] void fail_at(size_t at, const std::string& what) const {
    throw Error("npy", origin_, ": bad header at byte ", base_ + at, ": ", what,
                " (header: ", std::string(text_.substr(0, 200)), ")");
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
  Dtype dtype_of_descr(const std::string& descr, size_t at) const {
    if (descr == "|u1" || descr == "<u1" || descr == ">u1" || descr == "u1") return Dtype::uint8;
    if (descr == "<f4") return Dtype::float32;
    if (descr == "<f8") return Dtype::float64;
    if (descr == "<i8") return Dtype::int64;
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
  if (std::memcmp(prefix, "\x93NUMPY", 6) != 0)
    throw Error("npy", origin, ": bad magic at byte 0 (an NPY file starts with \\x93NUMPY)");
  const int major = prefix[6];
  if (major < 1 || major > 3)
    throw Error("npy", origin, ": format version ", major, ".", int{prefix[7]}, " at byte 6 is not 1, 2 or 3");
  const int length_bytes = major == 1 ? 2 : 4;
  unsigned char length[4];
  stream.read(length, length_bytes, "npy", "header length");
  const uint64_t header_length = little_endian(length, length_bytes);
  if (header_length > kMaxHeaderBytes) {
    throw Error("npy", origin, ": the header length at byte 8 is ", header_length, " bytes, over the limit of ",
                kMaxHeaderBytes);
  }
  stream.check_available(header_length, "npy", "header");
  const uint64_t header_at = stream.position();
  std::string text(header_length, '\0');
  stream.read(text.data(), header_length, "npy", "header");
  const NpyHeader header = DictParser(text, header_at, origin).parse();

  uint64_t nbytes = dtype_size(header.dtype);
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

// --- the zip archive (libzip) ---------------------------------------------------------------------

struct ZipCloser {
  void operator()(zip_t* archive) const { zip_discard(archive); }  // read only: nothing to write back
};
using ZipArchive = std::unique_ptr<zip_t, ZipCloser>;

ZipArchive open_zip(const std::string& path, const std::string& origin) {
  int code = ZIP_ER_OK;
  ZipArchive archive(zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &code));
  if (!archive) {
    zip_error_t error;
    zip_error_init_with_code(&error, code);
    const std::string text = zip_error_strerror(&error);
    zip_error_fini(&error);
    throw Error("npz", origin, ": not a readable zip archive (libzip: ", text, ")");
  }
  return archive;
}

// What a member's directory entry declares, checked before anything is read or allocated: not
// encrypted, stored or deflated, and no more bytes than its compressed data can expand to.
struct ZipMember {
  std::string name;
  uint64_t size = 0;
};

ZipMember checked_member(zip_t* archive, uint64_t index, const std::string& origin) {
  zip_stat_t stat;
  if (zip_stat_index(archive, index, 0, &stat) != 0) {
    throw Error("npz", origin, ": cannot read directory entry ", index, " (libzip: ", zip_strerror(archive), ")");
  }
  const ZipMember member{stat.name ? stat.name : "", stat.size};
  const std::string where = origin + " member " + quoted(member.name);
  if (stat.encryption_method != ZIP_EM_NONE) throw Error("npz", where, ": encrypted members are not supported");
  if (stat.comp_method == ZIP_CM_STORE && stat.comp_size != stat.size) {
    throw Error("npz", where, ": stored, yet its sizes differ (", stat.comp_size, " compressed, ", stat.size, " not)");
  }
  if (stat.comp_method != ZIP_CM_STORE && stat.comp_method != ZIP_CM_DEFLATE) {
    throw Error("npz", where, ": compression method ", stat.comp_method,
                " is not supported (only 0, stored, and 8, deflate)");
  }
  if (stat.size > stat.comp_size * kMaxDeflateRatio + 1024) {
    throw Error("npz", where, ": declares ", stat.size, " bytes from ", stat.comp_size,
                " deflated bytes, more than deflate can produce");
  }
  return member;
}

// --- writing ---------------------------------------------------------------------------------------

std::string descr_of(Dtype dtype) {
  switch (dtype) {
    case Dtype::uint8: return "|u1";
    case Dtype::float32: return "<f4";
    case Dtype::float64: return "<f8";
    case Dtype::int64: return "<i8";
    case Dtype::bfloat16: break;  // NPY has no bfloat16
  }
  throw Error("write_npy", "dtype ", dtype, " has no NPY descr");
}

}  // namespace

Tensor read_npy(const std::string& path) {
  auto stream = open_file(path, "npy");
  return Tensor(read_npy_stream(*stream));
}

std::map<std::string, Tensor> read_npz(const std::string& path) {
  (void)file_size(path, "npz");  // a missing file, or one that is not a regular file: an Error naming it
  const std::string origin = quoted(path);
  const ZipArchive archive = open_zip(path, origin);
  std::map<std::string, Tensor> arrays;
  const auto members = static_cast<uint64_t>(zip_get_num_entries(archive.get(), 0));
  for (uint64_t index = 0; index < members; ++index) {
    const ZipMember member = checked_member(archive.get(), index, origin);
    std::string key = member.name;
    if (key.size() > 4 && key.ends_with(".npy")) key.resize(key.size() - 4);
    if (arrays.count(key)) throw Error("npz", origin, ": the array '", key, "' appears twice");
    auto stream = open_zip_member(archive.get(), index, origin + " member " + quoted(member.name), member.size, "npz");
    arrays[key] = Tensor(read_npy_stream(*stream));
  }
  return arrays;
}

void write_npy(const std::string& path, const Tensor& tensor) {
  if (!tensor.defined()) throw Error("write_npy", "cannot write '", path, "': the tensor is undefined");
  const core::Tensor host = core_tensor(tensor).to(Device::cpu()).contiguous();
  std::string shape;
  for (int64_t size : host.shape()) shape += std::to_string(size) + ", ";
  if (host.dim() > 1) shape.resize(shape.size() - 2);  // (2, 3); a 1-tuple keeps its comma: (5,)
  if (host.dim() == 1) shape.pop_back();
  std::string header =
      "{'descr': '" + descr_of(host.dtype()) + "', 'fortran_order': False, 'shape': (" + shape + "), }";
  header.append(63 - (10 + header.size()) % 64, ' ');  // total length a multiple of 64, as NumPy pads it
  header += '\n';
  std::string prefix = std::string("\x93NUMPY\x01\x00", 8);
  prefix += static_cast<char>(header.size() & 0xff);
  prefix += static_cast<char>(header.size() >> 8);

  const uint64_t nbytes = static_cast<uint64_t>(host.numel()) * dtype_size(host.dtype());
  core::write_file_atomically(
      path, {{prefix.data(), prefix.size()}, {header.data(), header.size()}, {host.raw_data(), nbytes}}, "write_npy");
}

}  // namespace axiom::data
