// safetensors: the writer (encode -> bytes or an atomic file) and the reader (length prefix ->
// JSON header -> validated entries -> tensors). See safetensors.h for the layout.
//
// The reader trusts nothing in the file: the header length is checked against a limit and the
// file's size before anything is allocated, every entry's dtype, shape and offsets are checked
// against each other and against the data section, and the entries must tile the data section
// exactly (no gap, no overlap, nothing left over). Only then are tensors allocated, and each one's
// size is bounded by the bytes that are really there.
#include "core/formats/safetensors.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>

#include "core/formats/json.h"
#include <set>
#include <string_view>
#include <system_error>
#include <tuple>

#include "core/formats/atomic_file.h"
#include "core/error.h"
#include "core/factory.h"

namespace axiom::core {

// Tensor bytes are copied to and from the file as they lie in memory.
static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; this code copies raw bytes");

namespace {

// Writing uses ordered_json, which keeps keys in insertion order. Reading uses plain json: the
// entries are sorted by offset anyway, and ordered_json copies (recursively) the values of an
// object whenever it grows, which a deeply nested hostile header would turn into a stack overflow.
using WriteJson = nlohmann::ordered_json;
using Json = nlohmann::json;

constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // the reference (Rust) library's limit

// --- dtypes ----------------------------------------------------------------------------------------

constexpr std::pair<std::string_view, Dtype> kDtypeCodes[] = {
    {"F32", Dtype::float32},
    {"F64", Dtype::float64},
    {"I64", Dtype::int64},
    {"U8", Dtype::uint8},
};

std::string dtype_code(Dtype dtype) {
  for (const auto& [code, known] : kDtypeCodes) {
    if (known == dtype) return std::string(code);
  }
  throw Error("safetensors", "dtype ", dtype, " has no safetensors code");
}

// --- small helpers ------------------------------------------------------------------------------------

// Every reading error: "[safetensors] <origin>: <what is wrong>".
template <typename... Parts>
[[noreturn]] void fail(const std::string& origin, const Parts&... parts) {
  throw Error("safetensors", origin, ": ", parts...);
}

std::string shorten(std::string text, size_t limit = 300) {
  if (text.size() > limit) text = text.substr(0, limit) + "...";
  return text;
}

// A JSON value for an error message, kept short and never recursing into nested values (a
// hostile header may nest arrays a million deep).
std::string describe(const Json& value) {
  constexpr size_t kMaxItems = 8;
  if (value.is_object()) return "{...}";
  if (!value.is_array()) return shorten(value.dump(), 60);
  std::string out = "[";
  for (size_t i = 0; i < value.size() && i < kMaxItems; ++i) {
    const Json& item = value[i];
    out += i ? ", " : "";
    out += item.is_array() ? "[...]" : item.is_object() ? "{...}" : shorten(item.dump(), 60);
  }
  if (value.size() > kMaxItems) out += ", ...";
  return out + "]";
}

// 'name' (not std::quoted, which argument-dependent lookup would otherwise find for a std::string).
std::string in_quotes(const std::string& name) { return "'" + name + "'"; }

uint64_t read_u64_le(const char* bytes) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | static_cast<unsigned char>(bytes[i]);
  return value;
}

std::string u64_le(uint64_t value) {
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((value >> (8 * i)) & 0xff);
  return bytes;
}

uint64_t nbytes_of(const Tensor& tensor) { return static_cast<uint64_t>(tensor.numel()) * dtype_size(tensor.dtype()); }

// --- writing ------------------------------------------------------------------------------------------

struct Encoded {
  std::string head;          // the 8-byte length N and the N-byte JSON header, padded with spaces
  std::vector<Tensor> data;  // contiguous CPU tensors, in the header's order, to follow `head`
};

// The header and the tensors to write after it. `context` starts every error message ("" for
// to_safetensors_bytes, "cannot write 'path': " for save_safetensors).
//
// The header is compact JSON (no whitespace), "__metadata__" first when there is any metadata (as
// the reference library writes it), then the tensors in the order given, each as
// {"dtype", "shape", "data_offsets"} in that order. It is padded with spaces to a multiple of 8
// bytes, so that the data section starts 8-byte aligned, as the reference library does.
Encoded encode(const NamedTensors& tensors, const Metadata& metadata, const std::string& context) {
  WriteJson header = WriteJson::object();
  if (!metadata.empty()) {
    WriteJson entries = WriteJson::object();
    for (const auto& [key, value] : metadata) entries[key] = value;
    header["__metadata__"] = std::move(entries);
  }
  Encoded encoded;
  std::set<std::string> names;
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    if (name == "__metadata__") {
      throw Error("safetensors", context,
                  "the name '__metadata__' is reserved for the metadata and cannot name a tensor");
    }
    if (!names.insert(name).second)
      throw Error("safetensors", context, "the tensor name ", in_quotes(name), " appears twice");
    if (!tensor.defined()) throw Error("safetensors", context, "tensor ", in_quotes(name), " is undefined");
    Tensor host = tensor.to(Device::cpu()).contiguous();
    const uint64_t nbytes = nbytes_of(host);
    WriteJson entry = WriteJson::object();
    entry["dtype"] = dtype_code(host.dtype());
    entry["shape"] = host.shape();
    entry["data_offsets"] = WriteJson::array({offset, offset + nbytes});
    header[name] = std::move(entry);
    offset += nbytes;
    encoded.data.push_back(std::move(host));
  }
  std::string text;
  try {
    text = header.dump();  // compact: no indentation, no spaces
  } catch (const WriteJson::exception& e) {
    throw Error("safetensors", context, "a tensor name or metadata entry is not valid UTF-8 (", e.what(), ")");
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  if (text.size() > kMaxHeaderBytes) {
    throw Error("safetensors", context, "the header would be ", text.size(), " bytes, over the ", kMaxHeaderBytes,
                "-byte limit that readers enforce");
  }
  encoded.head = u64_le(text.size()) + text;
  return encoded;
}

std::string errno_text(int error) { return std::generic_category().message(error); }

// --- reading ------------------------------------------------------------------------------------------

// One tensor as the header describes it, checked.
struct Entry {
  std::string name;
  Dtype dtype = Dtype::float32;
  Shape shape;
  uint64_t begin = 0;  // data_offsets, relative to the start of the data section
  uint64_t end = 0;
};

struct Header {
  std::vector<Entry> entries;  // sorted by data_offsets
  Metadata metadata;
};

// The header length N from the first 8 bytes, checked against the limit and the file's size
// before anyone allocates N bytes.
uint64_t checked_header_length(const char* prefix, uint64_t file_size, const std::string& origin) {
  const uint64_t n = read_u64_le(prefix);
  if (n > kMaxHeaderBytes) {
    fail(origin, "the header length (bytes 0-7) is ", n, " bytes, over the limit of ", kMaxHeaderBytes,
         " bytes (the file has ", file_size, " bytes)");
  }
  if (n > file_size - 8) {
    fail(origin, "the header length (bytes 0-7) is ", n, " bytes, but only ", file_size - 8,
         " bytes follow it (the file has ", file_size, " bytes)");
  }
  return n;
}

void check_file_size(uint64_t file_size, const std::string& origin) {
  if (file_size < 8) {
    fail(origin, "the file has ", file_size,
         " bytes, too few for the 8-byte header length that starts a safetensors file");
  }
}

// Parses the header strictly (core/formats/json.h): a key twice in one object (two tensors of the same
// name would hide each other), deep nesting and NUL bytes are errors.
Json parse_json(std::string_view text, const std::string& origin) {
  core::StrictJson json = core::read_json(text);
  if (json.nul_at >= 0) {
    fail(origin, "header is not valid JSON: it has a NUL byte at header byte ", json.nul_at, " (file byte ",
         8 + json.nul_at, ")");
  }
  if (!json.syntax_error.empty()) fail(origin, "header is not valid JSON: ", json.syntax_error);
  if (json.too_deep)
    fail(origin, "the header nests arrays or objects more than ", core::StrictJson::kMaxJsonDepth, " deep");
  if (!json.duplicate_key.empty())
    fail(origin, "the header has the key ", in_quotes(json.duplicate_key), " twice in one object");
  return std::move(json.value);
}

Metadata parse_metadata(const Json& value, const std::string& origin) {
  if (!value.is_object()) {
    fail(origin, "\"__metadata__\" must be an object of strings, got a JSON ", value.type_name(), ": ",
         describe(value));
  }
  Metadata metadata;
  for (auto it = value.begin(); it != value.end(); ++it) {
    if (!it.value().is_string()) {
      fail(origin, "\"__metadata__\" value of ", in_quotes(it.key()), " must be a string, got a JSON ",
           it.value().type_name(), ": ", describe(it.value()));
    }
    metadata[it.key()] = it.value().get<std::string>();
  }
  return metadata;
}

const Json& field(const Json& info, const char* key, const std::string& tensor, const std::string& origin) {
  const auto it = info.find(key);
  if (it == info.end()) fail(origin, tensor, " has no \"", key, "\" field");
  return *it;
}

// "dtype": one of the codes axiom reads.
Dtype parse_dtype(const Json& info, const std::string& tensor, const std::string& origin) {
  const Json& dtype = field(info, "dtype", tensor, origin);
  if (!dtype.is_string()) fail(origin, tensor, ": \"dtype\" must be a string, got ", describe(dtype));
  const auto known = std::find_if(std::begin(kDtypeCodes), std::end(kDtypeCodes),
                                  [&](const auto& code) { return code.first == dtype.get_ref<const std::string&>(); });
  if (known == std::end(kDtypeCodes)) {
    fail(origin, tensor, " has unsupported dtype ", describe(dtype), " (axiom reads F32, F64, I64 and U8)");
  }
  return known->second;
}

// "shape": non-negative integers whose product (the element count) fits in an int64_t. The product
// of the non-zero sizes is bounded, so no partial product overflows, even with a zero size.
Shape parse_shape(const Json& info, const std::string& tensor, const std::string& origin) {
  const Json& shape = field(info, "shape", tensor, origin);
  const auto bad_shape = [&] {
    fail(origin, tensor, ": \"shape\" must be a list of non-negative integers, got ", describe(shape));
  };
  if (!shape.is_array()) bad_shape();
  Shape sizes;
  uint64_t nonzero_product = 1;
  for (const Json& size : shape) {
    if (!size.is_number_unsigned()) bad_shape();  // a negative, fractional or non-number size
    const uint64_t s = size.get<uint64_t>();
    if (s > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
        (s != 0 && nonzero_product > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / s)) {
      fail(origin, tensor, ": shape ", describe(shape), " has too many elements to count in 64 bits");
    }
    if (s != 0) nonzero_product *= s;
    sizes.push_back(static_cast<int64_t>(s));
  }
  return sizes;
}

// The bytes a tensor of this dtype and shape holds, checked to fit in 64 bits.
uint64_t byte_count(Dtype dtype, const Shape& shape, const std::string& tensor, const std::string& origin) {
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return 0;
  uint64_t count = 1;
  for (int64_t size : shape) count *= static_cast<uint64_t>(size);  // parse_shape bounded this product
  const uint64_t element_size = dtype_size(dtype);
  if (count > std::numeric_limits<uint64_t>::max() / element_size) {
    fail(origin, tensor, ": shape ", shape, " has too many bytes to count in 64 bits");
  }
  return count * element_size;
}

// "data_offsets": [begin, end] inside the data section, holding exactly `nbytes`.
void parse_offsets(const Json& info, uint64_t nbytes, uint64_t data_size, Entry& entry, const std::string& tensor,
                   const std::string& origin) {
  const Json& offsets = field(info, "data_offsets", tensor, origin);
  if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
      !offsets[1].is_number_unsigned()) {
    fail(origin, tensor, ": \"data_offsets\" must be [begin, end], two non-negative integers, got ", describe(offsets));
  }
  entry.begin = offsets[0].get<uint64_t>();
  entry.end = offsets[1].get<uint64_t>();
  if (entry.end < entry.begin) {
    fail(origin, tensor, ": data_offsets [", entry.begin, ", ", entry.end, "] end before they begin");
  }
  if (entry.end - entry.begin != nbytes) {
    fail(origin, tensor, ": shape ", entry.shape, " of ", dtype_code(entry.dtype), " needs ", nbytes,
         " bytes, but data_offsets [", entry.begin, ", ", entry.end, "] hold ", entry.end - entry.begin);
  }
  if (entry.end > data_size) {
    fail(origin, tensor, " ends at byte ", entry.end, " of the data, but the data section has ", data_size, " bytes");
  }
}

// One entry of the header, checked on its own: a known dtype, a shape of non-negative integers,
// offsets [begin, end] inside the data section holding exactly the shape's bytes. Fields other
// than these three are ignored, as the reference library does.
Entry parse_entry(const std::string& name, const Json& info, uint64_t data_size, const std::string& origin) {
  const std::string tensor = "tensor " + in_quotes(name);
  if (!info.is_object()) {
    fail(origin, tensor, " is described by a JSON ", info.type_name(), " (", describe(info),
         "), not an object {\"dtype\", \"shape\", \"data_offsets\"}");
  }
  Entry entry;
  entry.name = name;
  entry.dtype = parse_dtype(info, tensor, origin);
  entry.shape = parse_shape(info, tensor, origin);
  parse_offsets(info, byte_count(entry.dtype, entry.shape, tensor, origin), data_size, entry, tensor, origin);
  return entry;
}

// The entries, sorted by offset, must tile [0, data_size) exactly: each begins where the one
// before it ends, and the last ends at the end of the file.
void check_coverage(const std::vector<Entry>& entries, uint64_t data_size, const std::string& origin) {
  uint64_t covered = 0;
  const Entry* previous = nullptr;
  for (const Entry& entry : entries) {
    if (entry.begin > covered) {
      if (previous == nullptr) {
        fail(origin, "bytes 0 to ", entry.begin, " of the data belong to no tensor: the first tensor, ",
             in_quotes(entry.name), ", starts at byte ", entry.begin);
      }
      fail(origin, "bytes ", covered, " to ", entry.begin,
           " of the data belong to no tensor: ", in_quotes(previous->name), " ends at byte ", covered, " and ",
           in_quotes(entry.name), " starts at byte ", entry.begin);
    }
    if (entry.begin < covered) {
      fail(origin, "tensors ", in_quotes(previous->name), " (data_offsets [", previous->begin, ", ", previous->end,
           "]) and ", in_quotes(entry.name), " (data_offsets [", entry.begin, ", ", entry.end, "]) overlap");
    }
    covered = entry.end;
    previous = &entry;
  }
  if (covered != data_size) {
    fail(origin, "the data section has ", data_size, " bytes, but the tensors end at byte ", covered, " (bytes ",
         covered, " to ", data_size, " belong to no tensor)");
  }
}

// The header text checked against the data section's size; entries sorted by offset.
Header parse_header(std::string_view text, uint64_t data_size, const std::string& origin) {
  const Json json = parse_json(text, origin);
  if (!json.is_object()) fail(origin, "the header is a JSON ", json.type_name(), ", not an object");
  Header header;
  for (auto it = json.begin(); it != json.end(); ++it) {
    if (it.key() == "__metadata__") {
      header.metadata = parse_metadata(it.value(), origin);
    } else {
      header.entries.push_back(parse_entry(it.key(), it.value(), data_size, origin));
    }
  }
  std::sort(header.entries.begin(), header.entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name);
  });
  check_coverage(header.entries, data_size, origin);
  return header;
}

// Allocates each checked entry as a contiguous CPU tensor and fills it with read(destination, entry),
// in data order.
template <typename ReadFn>
SafetensorsFile load_entries(Header header, ReadFn&& read) {
  SafetensorsFile file;
  file.metadata = std::move(header.metadata);
  file.tensors.reserve(header.entries.size());
  for (const Entry& entry : header.entries) {
    Tensor tensor = empty(entry.shape, entry.dtype);
    if (entry.end > entry.begin) read(tensor.raw_data(), entry);
    file.tensors.emplace_back(entry.name, std::move(tensor));
  }
  return file;
}

struct CloseFile {
  void operator()(std::FILE* file) const { std::fclose(file); }
};

}  // namespace

// --- the API --------------------------------------------------------------------------------------------

std::string to_safetensors_bytes(const NamedTensors& tensors, const Metadata& metadata) {
  const Encoded encoded = encode(tensors, metadata, "");
  size_t total = encoded.head.size();
  for (const Tensor& tensor : encoded.data) total += nbytes_of(tensor);
  std::string bytes;
  bytes.reserve(total);
  bytes += encoded.head;
  for (const Tensor& tensor : encoded.data) {
    if (tensor.numel() > 0) bytes.append(static_cast<const char*>(tensor.raw_data()), nbytes_of(tensor));
  }
  return bytes;
}

void save_safetensors(const std::string& path, const NamedTensors& tensors, const Metadata& metadata) {
  const Encoded encoded = encode(tensors, metadata, "cannot write '" + path + "': ");  // every check first
  std::vector<ByteRange> pieces{{encoded.head.data(), encoded.head.size()}};
  for (const Tensor& tensor : encoded.data) pieces.push_back({tensor.raw_data(), nbytes_of(tensor)});
  write_file_atomically(path, pieces, "safetensors");
}

SafetensorsFile from_safetensors_bytes(const std::string& bytes, const std::string& origin) {
  const uint64_t size = bytes.size();
  check_file_size(size, origin);
  const uint64_t n = checked_header_length(bytes.data(), size, origin);
  const uint64_t data_start = 8 + n;
  Header header = parse_header(std::string_view(bytes).substr(8, n), size - data_start, origin);
  return load_entries(std::move(header), [&](void* destination, const Entry& entry) {
    std::memcpy(destination, bytes.data() + data_start + entry.begin, entry.end - entry.begin);
  });
}

SafetensorsFile load_safetensors(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (!fs::exists(status)) fail(path, "no such file");
  if (fs::is_directory(status)) fail(path, "is a directory, not a safetensors file");
  const std::unique_ptr<std::FILE, CloseFile> file(std::fopen(path.c_str(), "rb"));
  if (!file) fail(path, "cannot open it: ", errno_text(errno));
  const uint64_t size = fs::file_size(path, ec);
  if (ec) fail(path, "cannot read its size: ", ec.message());
  check_file_size(size, path);

  // Read in file order: the length, the header, then each tensor, whose entries tile the data
  // section in the order they are sorted, so the reads are sequential.
  const auto read_exactly = [&](void* destination, size_t nbytes, const std::string& what) {
    if (std::fread(destination, 1, nbytes, file.get()) != nbytes) {
      fail(path, "the file ended (or could not be read) in ", what, "; was it changed while being read?");
    }
  };
  char prefix[8];
  read_exactly(prefix, 8, "the header length");
  const uint64_t n = checked_header_length(prefix, size, path);
  std::string text(n, '\0');  // n <= min(kMaxHeaderBytes, size - 8): checked above
  read_exactly(text.data(), n, "the header");
  Header header = parse_header(text, size - 8 - n, path);
  return load_entries(std::move(header), [&](void* destination, const Entry& entry) {
    read_exactly(destination, entry.end - entry.begin, "tensor " + in_quotes(entry.name));
  });
}

}  // namespace axiom::core
