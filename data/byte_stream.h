// ByteStream: the bytes of a file (or of one member of a zip file) read front to back, for the
// readers in this folder. It knows where it came from and where it is, so that every reading error
// can say which file, which field and which byte:
//   [idx] 'train-images-idx3-ubyte.gz': truncated pixel data: needs 47040000 bytes from byte 16, the data ends at byte
//   1000
//
// Three kinds of source, one interface:
//   open_file(path)          a plain file, or a gzip file (recognised by its first two bytes,
//                            1f 8b) decompressed on the fly with zlib. Offsets are then offsets
//                            into the decompressed data.
//   open_zip_member(...)     one member of a zip archive opened with libzip (see npy.cpp).
//
// `max_remaining()` is an upper bound on the bytes still to come, known before they are read:
// exact for plain files and zip members, and for gzip the most that deflate can expand the
// compressed bytes left (1032:1, zlib's documented limit). Readers compare a header's declared
// sizes with it *before* allocating, so a 100-byte file that claims 2^31 images is an Error, not a
// 2 GiB allocation.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

struct zip;  // libzip's archive (zip_t in <zip.h>), used by byte_stream.cpp and npy.cpp only

namespace axiom::data {

class ByteStream {
 public:
  virtual ~ByteStream() = default;

  // Reads exactly n bytes into dst, or throws "[op] <origin>: truncated <field>: needs n bytes
  // from byte P, the data ends at byte Q".
  void read(void* dst, uint64_t n, std::string_view op, std::string_view field);
  // Throws unless every byte has been read: "[op] <origin>: K unexpected trailing bytes after byte P".
  void expect_end(std::string_view op);
  // Throws unless `needed` more bytes can still come (the header-against-file-length check).
  void check_available(uint64_t needed, std::string_view op, std::string_view field) const;

  const std::string& origin() const { return origin_; }  // 'path', or 'path' member 'name'
  uint64_t position() const { return position_; }        // bytes consumed so far
  virtual uint64_t max_remaining() const = 0;            // upper bound on the bytes left

 protected:
  explicit ByteStream(std::string origin) : origin_(std::move(origin)) {}
  // Up to n bytes (fewer only at the end of the data); throws on a read or decompression error.
  virtual uint64_t read_some(void* dst, uint64_t n, std::string_view op) = 0;
  // Called by expect_end once no bytes are left: a compressed stream checks that it ended properly.
  virtual void check_end(std::string_view /*op*/) {}

  std::string origin_;
  uint64_t position_ = 0;
};

// A plain or gzip-compressed file. `op` names the reader in an error if the file cannot be opened.
std::unique_ptr<ByteStream> open_file(const std::string& path, std::string_view op);

// Member `index` of an archive libzip has opened, declared to hold `size` bytes (libzip checks the
// size and the CRC-32 at the end); `origin` names it in errors: 'a.npz' member 'x.npy'.
std::unique_ptr<ByteStream> open_zip_member(zip* archive, uint64_t index, const std::string& origin, uint64_t size,
                                            std::string_view op);

// The size of a file in bytes, or an Error naming it.
uint64_t file_size(const std::string& path, std::string_view op);

// Big- and little-endian unsigned integers from raw bytes.
uint64_t big_endian(const unsigned char* bytes, int count);
uint64_t little_endian(const unsigned char* bytes, int count);

// 'path' in quotes, as every error message shows it.
std::string quoted(const std::string& path);

}  // namespace axiom::data
