// The three ByteStreams: a plain file range, a gzip file (zlib's gzread) and a zip member
// (libzip's zip_fread). Each reports errors as "[op] <origin>: ..." with byte offsets.
#include "data/byte_stream.h"

#include <zip.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <system_error>

#include "core/error.h"

namespace axiom::data {

namespace {

// zlib's documented worst case for deflate: 1032 output bytes per input byte.
constexpr uint64_t kMaxDeflateRatio = 1032;
// zlib counts in `unsigned`; read at most this much per call.
constexpr uint64_t kChunk = 1u << 30;

std::string errno_text() { return std::generic_category().message(errno); }

struct FileCloser {
  void operator()(std::FILE* file) const { std::fclose(file); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

File open_or_throw(const std::string& path, std::string_view op) {
  File file(std::fopen(path.c_str(), "rb"));
  if (!file) throw Error(op, "cannot open ", quoted(path), ": ", errno_text());
  return file;
}

// Bytes [begin, end) of a file: a whole plain file, or a stored zip member.
class FileRangeStream final : public ByteStream {
 public:
  FileRangeStream(std::string origin, File file, uint64_t begin, uint64_t end, std::string_view op)
      : ByteStream(std::move(origin)), file_(std::move(file)), size_(end - begin) {
    if (std::fseek(file_.get(), static_cast<long>(begin), SEEK_SET) != 0) {
      throw Error(op, origin_, ": cannot seek to byte ", begin, ": ", errno_text());
    }
  }
  uint64_t max_remaining() const override { return size_ - position_; }

 protected:
  uint64_t read_some(void* dst, uint64_t n, std::string_view op) override {
    n = std::min(n, size_ - position_);
    const size_t got = std::fread(dst, 1, n, file_.get());
    if (got < n && std::ferror(file_.get()))
      throw Error(op, origin_, ": read error at byte ", position_ + got, ": ", errno_text());
    return got;
  }

 private:
  File file_;
  uint64_t size_;
};

// A gzip file through gzread: offsets count decompressed bytes.
class GzipStream final : public ByteStream {
 public:
  GzipStream(const std::string& path, uint64_t compressed_size, std::string_view op)
      : ByteStream(quoted(path)), bound_(compressed_size * kMaxDeflateRatio) {
    file_ = gzopen(path.c_str(), "rb");
    if (file_ == nullptr) throw Error(op, "cannot open ", origin_, ": ", errno_text());
  }
  ~GzipStream() override { gzclose(file_); }
  uint64_t max_remaining() const override { return bound_ > position_ ? bound_ - position_ : 0; }

 protected:
  uint64_t read_some(void* dst, uint64_t n, std::string_view op) override {
    uint64_t total = 0;
    while (total < n) {
      const unsigned want = static_cast<unsigned>(std::min(n - total, kChunk));
      const int got = gzread(file_, static_cast<char*>(dst) + total, want);
      int code = Z_OK;
      const char* message = gzerror(file_, &code);
      if (code == Z_BUF_ERROR) {
        throw Error(op, origin_, ": the gzip stream is cut short (truncated) after ",
                    position_ + total + std::max(got, 0), " decompressed bytes");
      }
      if (got < 0 || (code != Z_OK && code != Z_STREAM_END)) {
        throw Error(op, origin_, ": corrupt gzip data near decompressed byte ", position_ + total, " (zlib: ", message,
                    ")");
      }
      total += static_cast<uint64_t>(got);
      if (static_cast<unsigned>(got) < want) break;  // the end of the data
    }
    return total;
  }

 private:
  gzFile file_ = nullptr;
  uint64_t bound_;
};

// One member of a zip archive, decompressed by libzip, which checks its size and CRC-32 as it
// reaches the end.
class ZipMemberStream final : public ByteStream {
 public:
  ZipMemberStream(std::string origin, zip_t* archive, uint64_t index, uint64_t size, std::string_view op)
      : ByteStream(std::move(origin)), file_(zip_fopen_index(archive, index, 0)), size_(size) {
    if (!file_) throw Error(op, origin_, ": cannot open the member (libzip: ", zip_strerror(archive), ")");
  }
  ~ZipMemberStream() override { zip_fclose(file_); }
  uint64_t max_remaining() const override { return size_ > position_ ? size_ - position_ : 0; }

 protected:
  uint64_t read_some(void* dst, uint64_t n, std::string_view op) override {
    const zip_int64_t got = zip_fread(file_, dst, n);
    if (got < 0)
      throw Error(op, origin_, ": corrupt data after byte ", position_, " (libzip: ", zip_file_strerror(file_), ")");
    return static_cast<uint64_t>(got);
  }

 private:
  zip_file_t* file_;
  uint64_t size_;
};

}  // namespace

// --- ByteStream ----------------------------------------------------------------------------------

void ByteStream::read(void* dst, uint64_t n, std::string_view op, std::string_view field) {
  const uint64_t got = n == 0 ? 0 : read_some(dst, n, op);
  if (got < n) {
    throw Error(op, origin_, ": truncated ", field, ": needs ", n, " bytes from byte ", position_,
                ", the data ends at byte ", position_ + got);
  }
  position_ += n;
}

void ByteStream::expect_end(std::string_view op) {
  unsigned char buffer[4096];
  uint64_t extra = 0;
  while (true) {  // count them all, so that the message says how many
    const uint64_t got = read_some(buffer, sizeof(buffer), op);
    extra += got;
    if (got < sizeof(buffer)) break;
  }
  if (extra > 0) throw Error(op, origin_, ": ", extra, " unexpected trailing bytes after byte ", position_);
  check_end(op);
}

void ByteStream::check_available(uint64_t needed, std::string_view op, std::string_view field) const {
  if (needed > max_remaining()) {
    throw Error(op, origin_, ": the header declares ", needed, " bytes of ", field, " from byte ", position_,
                " but the file can hold at most ", max_remaining(), " more");
  }
}

// --- opening -------------------------------------------------------------------------------------

uint64_t file_size(const std::string& path, std::string_view op) {
  std::error_code error;
  const auto size = std::filesystem::file_size(path, error);
  if (error) throw Error(op, "cannot open ", quoted(path), ": ", error.message());
  return size;
}

std::unique_ptr<ByteStream> open_file(const std::string& path, std::string_view op) {
  const uint64_t size = file_size(path, op);
  File file = open_or_throw(path, op);
  unsigned char magic[2] = {0, 0};
  const bool gzip = std::fread(magic, 1, 2, file.get()) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  if (gzip) return std::make_unique<GzipStream>(path, size, op);
  return std::make_unique<FileRangeStream>(quoted(path), std::move(file), 0, size, op);
}

std::unique_ptr<ByteStream> open_zip_member(zip* archive, uint64_t index, const std::string& origin, uint64_t size,
                                            std::string_view op) {
  return std::make_unique<ZipMemberStream>(origin, archive, index, size, op);
}

// --- bytes ---------------------------------------------------------------------------------------

uint64_t big_endian(const unsigned char* bytes, int count) {
  uint64_t value = 0;
  for (int i = 0; i < count; ++i) value = (value << 8) | bytes[i];
  return value;
}

uint64_t little_endian(const unsigned char* bytes, int count) {
  uint64_t value = 0;
  for (int i = count - 1; i >= 0; --i) value = (value << 8) | bytes[i];
  return value;
}

std::string quoted(const std::string& path) { return "'" + path + "'"; }

}  // namespace axiom::data
