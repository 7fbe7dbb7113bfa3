// safetensors: known bytes written by hand from the format's specification, headers written the
// way other writers write them, round trips through files, and every kind of bad file.
//
// The specification (Hugging Face safetensors):
//   8 bytes   N, unsigned 64-bit little-endian
//   N bytes   a UTF-8 JSON object {"name": {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]},
//             ..., "__metadata__": {"key": "value"}}, which may end in spaces (0x20)
//   the rest  the data section: each tensor's bytes, row-major, little-endian, at [begin, end)
//             relative to the section's start; together they cover it exactly.
//
// What axiom writes, within that specification (and what the known-answer tests pin down): compact
// JSON as nlohmann's dump() prints it (no spaces, no newlines); "__metadata__" first when there is
// metadata (the reference Python/Rust library also writes it first); then the tensors in the
// order given, each {"dtype", "shape", "data_offsets"} in that order; the JSON padded with spaces
// to a multiple of 8 bytes (the reference library pads the same way), so the data starts 8-aligned.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "core/formats/safetensors.h"
#include "tests/support/reference.h"

namespace core = axiom::core;
namespace fs = std::filesystem;
using namespace axiom::test;
using axiom::Metadata;
using axiom::core::Tensor;
using core::NamedTensors;
using core::SafetensorsFile;

namespace {

// Bytes from a list of byte values, so that known answers can be written byte by byte.
std::string bytes_of(std::initializer_list<int> values) {
  std::string out;
  for (int v : values) out += static_cast<char>(v);
  return out;
}

std::string u64_le(uint64_t value) {
  std::string out;
  for (int i = 0; i < 8; ++i) out += static_cast<char>((value >> (8 * i)) & 0xff);
  return out;
}

// A file with `header` as its JSON (padded with spaces to a multiple of 8) and `data` after it.
// The test writes the header text itself, so it can write anything, valid or not.
std::string file_with(std::string header, const std::string& data) {
  header.append((8 - header.size() % 8) % 8, ' ');
  return u64_le(header.size()) + header + data;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A fresh directory under the system's temporary directory, removed with everything in it.
struct TempDir {
  fs::path path;
  TempDir() {
    static int count = 0;
    path = fs::temp_directory_path() /
           ("axiom-safetensors-test-" + std::to_string(::getpid()) + "-" + std::to_string(count++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(path)) names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
};

// Same names, dtypes, shapes and element values (NaN equals NaN; -0.0 is told from 0.0 by its bits).
void check_same(const NamedTensors& got, const NamedTensors& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("tensor " << want[i].first);
    CHECK(got[i].first == want[i].first);
    const Tensor& a = got[i].second;
    const Tensor& b = want[i].second;
    CHECK(a.dtype() == b.dtype());
    CHECK(a.shape() == b.shape());
    CHECK(a.is_contiguous());
    CHECK(a.device() == Device::cpu());
    if (a.dtype() != b.dtype() || a.shape() != b.shape()) continue;
    const std::vector<double> va = values_of(a);
    const std::vector<double> vb = values_of(b);
    for (size_t k = 0; k < va.size(); ++k) {
      const bool same =
          (std::isnan(va[k]) && std::isnan(vb[k])) || (va[k] == vb[k] && std::signbit(va[k]) == std::signbit(vb[k]));
      if (!same) FAIL_CHECK("element " << k << ": got " << va[k] << ", want " << vb[k]);
    }
  }
}

const std::string kOrigin = "bad.safetensors";

// The error message of reading `bytes` (as if from a file named bad.safetensors) must name the
// origin and contain every one of `parts`.
void check_bad(const std::string& bytes, std::initializer_list<std::string> parts,
               std::source_location where = std::source_location::current()) {
  check_error([&] { (void)core::from_safetensors_bytes(bytes, kOrigin); }, {"[safetensors] " + kOrigin + ": "}, where);
  check_error([&] { (void)core::from_safetensors_bytes(bytes, kOrigin); }, parts, where);
}

}  // namespace

// --- known answers ----------------------------------------------------------------------------------

TEST_CASE("safetensors: known answer, written byte by byte from the specification") {
  // "a": F32 [2] = {1, 2};  "b": I64 [] = 7;  metadata {"format": "pt"}.
  // The JSON is 138 characters; 6 spaces pad it to N = 144 = 0x90 bytes.
  const std::string json = R"({"__metadata__":{"format":"pt"},)"
                           R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                           R"("b":{"dtype":"I64","shape":[],"data_offsets":[8,16]}})";
  REQUIRE(json.size() == 138);
  const std::string expected = bytes_of({0x90, 0, 0, 0, 0, 0, 0, 0}) +  // N = 144, little-endian
                               json + "      " +                        // 6 spaces of padding
                               bytes_of({0x00, 0x00, 0x80, 0x3f,        // 1.0f = 0x3f800000
                                         0x00, 0x00, 0x00, 0x40,        // 2.0f = 0x40000000
                                         0x07, 0, 0, 0, 0, 0, 0, 0});   // int64 7
  REQUIRE(expected.size() == 8 + 144 + 16);

  const NamedTensors tensors = {{"a", core::from_vector<float>({1.0f, 2.0f})}, {"b", core::scalar(7, Dtype::int64)}};
  CHECK(core::to_safetensors_bytes(tensors, {{"format", "pt"}}) == expected);

  const SafetensorsFile file = core::from_safetensors_bytes(expected, "known.safetensors");
  check_same(file.tensors, tensors);
  CHECK(file.metadata == Metadata{{"format", "pt"}});
}

TEST_CASE("safetensors: known answers shared with the reference library's own tests") {
  // No tensors, no metadata: "{}" and 6 spaces, N = 8.
  CHECK(core::to_safetensors_bytes({}) == bytes_of({8, 0, 0, 0, 0, 0, 0, 0}) + "{}      ");
  // One F32 [1, 1, 2, 3] = 0..5 named "attn0": 65 characters of JSON, 7 spaces, N = 72.
  const std::string json = R"({"attn0":{"dtype":"F32","shape":[1,1,2,3],"data_offsets":[0,24]}})";
  REQUIRE(json.size() == 65);
  const std::string expected =
      bytes_of({72, 0, 0, 0, 0, 0, 0, 0}) + json + "       " +
      bytes_of({0, 0, 0, 0, 0, 0, 0x80, 0x3f, 0, 0, 0, 0x40, 0, 0, 0x40, 0x40, 0, 0, 0x80, 0x40, 0, 0, 0xa0, 0x40});
  const Tensor attn = core::arange(0, 6).reshape({1, 1, 2, 3});
  CHECK(core::to_safetensors_bytes({{"attn0", attn}}) == expected);
  check_same(core::from_safetensors_bytes(expected, "attn0").tensors, {{"attn0", attn}});
}

TEST_CASE("safetensors: header keys keep the order given, not sorted, and uint8 and float64 bytes") {
  const std::string json = R"({"z":{"dtype":"U8","shape":[3],"data_offsets":[0,3]},)"
                           R"("a":{"dtype":"F64","shape":[1],"data_offsets":[3,11]}})";
  REQUIRE(json.size() == 107);  // 5 spaces pad it to N = 112
  const std::string expected =
      u64_le(112) + json + "     " + bytes_of({1, 2, 255}) + bytes_of({0, 0, 0, 0, 0, 0, 0xf0, 0xbf});  // -1.0
  const NamedTensors tensors = {{"z", core::from_vector<uint8_t>({1, 2, 255})},
                                {"a", core::from_vector<double>({-1.0})}};
  CHECK(core::to_safetensors_bytes(tensors) == expected);
}

// --- files written by others --------------------------------------------------------------------------

TEST_CASE("safetensors: reads headers written the way Python writes them") {
  // Python's safetensors: compact JSON, __metadata__ first, padded with spaces.
  const std::string python =
      file_with(R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
                bytes_of({0, 0, 0x80, 0x3f, 0, 0, 0, 0x40}));
  SafetensorsFile file = core::from_safetensors_bytes(python, "python.safetensors");
  check_same(file.tensors, {{"a", core::from_vector<float>({1, 2})}});
  CHECK(file.metadata == Metadata{{"format", "pt"}});

  // Python's json.dumps (spaces after ':' and ','), other key orders, the metadata last, an extra
  // field, a header not padded to 8 bytes, and the tensors listed out of data order: tensors come
  // back in data order.
  std::string json =
      R"({"w": {"shape": [2, 1], "data_offsets": [1, 17], "dtype": "F64", "extra": 1},)"
      R"( "u": {"data_offsets": [0, 1], "dtype": "U8", "shape": [1]}, "__metadata__": {"epoch": "3"}}  )";
  if (json.size() % 8 == 0) json += ' ';
  const std::string data =
      bytes_of({9}) + bytes_of({0, 0, 0, 0, 0, 0, 0xf0, 0x3f}) + bytes_of({0, 0, 0, 0, 0, 0, 0, 0x40});
  file = core::from_safetensors_bytes(u64_le(json.size()) + json + data, "json-dumps.safetensors");
  check_same(file.tensors, {{"u", core::from_vector<uint8_t>({9})}, {"w", core::from_vector<double>({1, 2}, {2, 1})}});
  CHECK(file.metadata == Metadata{{"epoch", "3"}});

  // A newline and a tab in the padding are JSON whitespace too.
  file = core::from_safetensors_bytes(file_with("{}\n\t", ""), "whitespace");
  CHECK(file.tensors.empty());
}

// --- round trips --------------------------------------------------------------------------------------

TEST_CASE("safetensors: round trips of every dtype, 0-d, empty and non-contiguous tensors through a file") {
  const TempDir dir;
  const double inf = std::numeric_limits<double>::infinity();
  const Tensor base = core::arange(0, 12).reshape({3, 4});
  const NamedTensors tensors = {
      {"f32", core::from_vector<float>({1.5f, -0.0f, 3e38f, -1e-45f, std::numeric_limits<float>::quiet_NaN(), INFINITY},
                                       {2, 3})},
      {"f64", core::from_vector<double>({0.1, -inf, 1e-310, std::numeric_limits<double>::max()})},
      {"i64", core::from_vector<int64_t>(
                  {std::numeric_limits<int64_t>::min(), -1, 0, std::numeric_limits<int64_t>::max()}, {2, 2})},
      {"u8", core::from_vector<uint8_t>({0, 1, 127, 128, 255})},
      {"scalar", core::scalar(2.5, Dtype::float64)},
      {"empty", core::zeros({0})},
      {"empty_3d", core::zeros({2, 0, 3}, Dtype::int64)},
      {"transposed", base.transpose(0, 1)},                                          // [4, 3], strides [1, 4]
      {"strided", base.slice(1, 0, 4, 2)},                                           // [3, 2], every other column
      {"expanded", core::from_vector<uint8_t>({7, 8}).unsqueeze(0).expand({3, 2})},  // stride 0
  };
  REQUIRE_FALSE(tensors[7].second.is_contiguous());
  const std::string path = dir.file("model.safetensors");
  core::save_safetensors(path, tensors, {{"format", "pt"}, {"note", "ünïcödé ✓"}});
  CHECK(dir.entries() == std::vector<std::string>{"model.safetensors"});  // no temporary file left
  CHECK(read_file(path) == core::to_safetensors_bytes(tensors, {{"format", "pt"}, {"note", "ünïcödé ✓"}}));

  const SafetensorsFile file = core::load_safetensors(path);
  check_same(file.tensors, tensors);  // the data order is the order written
  CHECK(file.metadata == Metadata{{"format", "pt"}, {"note", "ünïcödé ✓"}});

  // The same, in memory.
  check_same(core::from_safetensors_bytes(core::to_safetensors_bytes(tensors), "memory").tensors, tensors);
}

TEST_CASE("safetensors: saving over a file replaces it whole, and leaves no temporary file") {
  const TempDir dir;
  const std::string path = dir.file("w.safetensors");
  core::save_safetensors(path, {{"w", core::ones({1000})}});
  core::save_safetensors(path, {{"v", core::full({2}, 3, Dtype::int64)}});
  check_same(core::load_safetensors(path).tensors, {{"v", core::full({2}, 3, Dtype::int64)}});
  CHECK(dir.entries() == std::vector<std::string>{"w.safetensors"});
}

TEST_CASE("safetensors: save errors name the path and the reason, and leave nothing behind") {
  const TempDir dir;
  const std::string missing = dir.file("no-such-dir") + "/model.safetensors";
  check_error(
      [&] {
        core::save_safetensors(missing, {{"w", core::ones({2})}});
      },
      {"[safetensors] cannot write '" + missing + "'",
       "the directory '" + dir.file("no-such-dir") + "' does not exist"});

  // The target is a directory: the temporary file is written, the rename fails, the temporary is removed.
  fs::create_directory(dir.path / "taken.safetensors");
  fs::create_directory(dir.path / "taken.safetensors" / "child");  // a non-empty directory
  check_error(
      [&] {
        core::save_safetensors(dir.file("taken.safetensors"), {{"w", core::ones({2})}});
      },
      {"cannot write '" + dir.file("taken.safetensors") + "'", "renaming", "failed"});
  CHECK(dir.entries() == std::vector<std::string>{"taken.safetensors"});

  // Names: duplicates, the reserved name, undefined tensors. Nothing is written.
  const std::string path = dir.file("dup.safetensors");
  check_error(
      [&] {
        core::save_safetensors(path, {{"w", core::ones({2})}, {"w", core::ones({3})}});
      },
      {"cannot write '" + path + "'", "the tensor name 'w' appears twice"});
  check_error(
      [&] {
        (void)core::to_safetensors_bytes({{"w", core::ones({2})}, {"w", core::ones({3})}});
      },
      {"[safetensors] the tensor name 'w' appears twice"});
  check_error(
      [&] {
        (void)core::to_safetensors_bytes({{"__metadata__", core::ones({2})}});
      },
      {"reserved for the metadata"});
  check_error([&] { (void)core::to_safetensors_bytes({{"w", Tensor()}}); }, {"tensor 'w' is undefined"});
  check_error([&] { (void)core::to_safetensors_bytes({{"\xff", core::ones({2})}}); }, {"not valid UTF-8"});
  CHECK(dir.entries() == std::vector<std::string>{"taken.safetensors"});
}

// --- bad files ----------------------------------------------------------------------------------------

TEST_CASE("safetensors: a missing, short or directory file is an Error naming it") {
  const TempDir dir;
  const std::string missing = dir.file("missing.safetensors");
  check_error([&] { (void)core::load_safetensors(missing); }, {"[safetensors] " + missing + ": no such file"});
  check_error([&] { (void)core::load_safetensors(dir.path.string()); }, {dir.path.string(), "is a directory"});

  const std::string shorty = dir.file("short.safetensors");
  write_file(shorty, std::string("\x05\0\0\0\0", 5));
  check_error([&] { (void)core::load_safetensors(shorty); }, {shorty + ": the file has 5 bytes, too few"});
  check_bad("", {"the file has 0 bytes, too few for the 8-byte header length"});
  check_bad(std::string("\x08\0\0\0\0\0\0", 7), {"the file has 7 bytes"});
}

TEST_CASE("safetensors: a header length beyond the file, or huge, is refused before allocating") {
  const TempDir dir;
  // N = 100 with 12 bytes after it.
  const std::string too_long = u64_le(100) + R"({"a":1}     )";
  check_bad(too_long,
            {"the header length (bytes 0-7) is 100 bytes, but only 12 bytes follow it (the file has 20 bytes)"});
  write_file(dir.file("long.safetensors"), too_long);
  check_error([&] { (void)core::load_safetensors(dir.file("long.safetensors")); },
              {dir.file("long.safetensors"), "is 100 bytes, but only 12 bytes follow it"});

  // N = 2^60 and N = 2^64 - 1: over the 100 MB limit; reading them would need exabytes.
  for (const uint64_t n : {uint64_t{1} << 60, ~uint64_t{0}}) {
    const std::string huge = u64_le(n) + "{}      ";
    check_bad(huge,
              {"the header length (bytes 0-7) is " + std::to_string(n) + " bytes, over the limit of 100000000 bytes"});
    write_file(dir.file("huge.safetensors"), huge);
    check_error([&] { (void)core::load_safetensors(dir.file("huge.safetensors")); },
                {"huge.safetensors", "over the limit"});
  }
}

TEST_CASE("safetensors: a header that is not JSON, or not an object of objects") {
  check_bad(file_with(R"({"a": {"dtype": "F32",)", ""), {"header is not valid JSON: ", "parse error"});
  check_bad(file_with("", ""), {"header is not valid JSON: "});
  // Padding must be spaces, not NULs; nor may a NUL end the JSON early and hide what follows.
  check_bad(u64_le(8) + std::string("{}\0\0\0\0\0\0", 8),
            {"header is not valid JSON: it has a NUL byte at header byte 2 (file byte 10)"});
  check_bad(u64_le(8) + std::string("{}\0{\"a\":", 8),
            {"header is not valid JSON: it has a NUL byte at header byte 2"});
  check_bad(file_with("{\"\xff\":1}", ""), {"header is not valid JSON: "});  // not UTF-8
  check_bad(file_with("[1, 2]", ""), {"the header is a JSON array, not an object"});
  check_bad(file_with(R"({"a": 5})", ""), {"tensor 'a' is described by a JSON number (5), not an object"});
  check_bad(
      file_with(
          R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})",
          "xy"),
      {"the header has the key 'a' twice in one object"});
  // Nested a hundred thousand deep: an error, not a stack overflow (the limit is serde_json's, 128).
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  check_bad(file_with(R"({"a":{"dtype":"U8","shape":)" + deep + R"(,"data_offsets":[0,0]}})", ""),
            {"the header nests arrays or objects more than 128 deep"});
  check_bad(file_with(std::string(100000, '['), ""), {"header is not valid JSON: "});  // unclosed
  check_bad(file_with(R"({"a":{"dtype":"U8","shape":[[[[1]]]],"data_offsets":[0,0]}})", ""),
            {"tensor 'a': \"shape\" must be a list of non-negative integers, got [[...]]"});
}

TEST_CASE("safetensors: a bad entry names the tensor, the field and the values") {
  const auto entry = [](const std::string& fields) { return file_with(R"({"w":{)" + fields + "}}", "12345678"); };
  check_bad(entry(R"("dtype":"F16","shape":[4],"data_offsets":[0,8])"),
            {"tensor 'w' has unsupported dtype \"F16\" (axiom reads F32, F64, I64 and U8)"});
  check_bad(entry(R"("dtype":"BF16","shape":[4],"data_offsets":[0,8])"), {"unsupported dtype \"BF16\""});
  check_bad(entry(R"("dtype":"I32","shape":[2],"data_offsets":[0,8])"), {"unsupported dtype \"I32\""});
  check_bad(entry(R"("dtype":"float32","shape":[2],"data_offsets":[0,8])"), {"unsupported dtype \"float32\""});
  check_bad(entry(R"("dtype":4,"shape":[2],"data_offsets":[0,8])"), {"tensor 'w': \"dtype\" must be a string, got 4"});
  check_bad(entry(R"("shape":[2],"data_offsets":[0,8])"), {"tensor 'w' has no \"dtype\" field"});
  check_bad(entry(R"("dtype":"F32","data_offsets":[0,8])"), {"tensor 'w' has no \"shape\" field"});
  check_bad(entry(R"("dtype":"F32","shape":[2])"), {"tensor 'w' has no \"data_offsets\" field"});
  check_bad(entry(R"("dtype":"F32","shape":[2,-1],"data_offsets":[0,8])"),
            {"tensor 'w': \"shape\" must be a list of non-negative integers, got [2, -1]"});
  check_bad(entry(R"("dtype":"F32","shape":[2.0],"data_offsets":[0,8])"),
            {"must be a list of non-negative integers, got [2.0]"});
  check_bad(entry(R"("dtype":"F32","shape":"2","data_offsets":[0,8])"),
            {"must be a list of non-negative integers, got \"2\""});
  check_bad(entry(R"("dtype":"F32","shape":[2],"data_offsets":[0])"),
            {"tensor 'w': \"data_offsets\" must be [begin, end], two non-negative integers, got [0]"});
  check_bad(entry(R"("dtype":"F32","shape":[2],"data_offsets":[-8,0])"),
            {"\"data_offsets\" must be [begin, end]", "got [-8, 0]"});
  check_bad(entry(R"("dtype":"F32","shape":[2],"data_offsets":[8,0])"),
            {"tensor 'w': data_offsets [8, 0] end before they begin"});
}

TEST_CASE("safetensors: shape, offsets and the data section must agree") {
  // Shape and offsets disagree: [3] of F32 is 12 bytes, the offsets hold 8.
  check_bad(file_with(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", "12345678"),
            {"tensor 'w': shape [3] of F32 needs 12 bytes, but data_offsets [0, 8] hold 8"});
  // Huge shapes: the element count or the byte count would overflow 64 bits.
  check_bad(file_with(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", "12345678"),
            {"tensor 'w': shape [4294967296, 4294967296] has too many elements to count in 64 bits"});
  check_bad(file_with(R"({"w":{"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,8]}})", "12345678"),
            {"tensor 'w': shape [4611686018427387904] has too many bytes to count in 64 bits"});
  check_bad(file_with(R"({"w":{"dtype":"U8","shape":[18446744073709551615],"data_offsets":[0,8]}})", "12345678"),
            {"has too many elements to count in 64 bits"});
  check_bad(file_with(R"({"w":{"dtype":"U8","shape":[0,4294967296,4294967296],"data_offsets":[0,0]}})", ""),
            {"has too many elements to count in 64 bits"});
  // Offsets past the end of the data (a truncated file).
  check_bad(file_with(R"({"w":{"dtype":"U8","shape":[4096],"data_offsets":[0,4096]}})", std::string(4000, 'x')),
            {"tensor 'w' ends at byte 4096 of the data, but the data section has 4000 bytes"});
  check_bad(
      file_with(R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[18446744073709551614,18446744073709551615]}})", "x"),
      {"tensor 'w' ends at byte 18446744073709551615 of the data, but the data section has 1 bytes"});
  // Overlapping entries.
  check_bad(
      file_with(
          R"({"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]},"b":{"dtype":"U8","shape":[8],"data_offsets":[4,12]}})",
          "123456789abc"),
      {"tensors 'a' (data_offsets [0, 8]) and 'b' (data_offsets [4, 12]) overlap"});
  check_bad(
      file_with(
          R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})",
          "12"),
      {"tensors 'a' (data_offsets [0, 2]) and 'b' (data_offsets [0, 2]) overlap"});
  // Gaps: at the start, between two tensors, at the end.
  check_bad(file_with(R"({"b":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}})", "1234"),
            {"bytes 0 to 2 of the data belong to no tensor: the first tensor, 'b', starts at byte 2"});
  check_bad(
      file_with(
          R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[2],"data_offsets":[3,5]}})",
          "12345"),
      {"bytes 2 to 3 of the data belong to no tensor: 'a' ends at byte 2 and 'b' starts at byte 3"});
  check_bad(file_with(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})", "1234"),
            {"the data section has 4 bytes, but the tensors end at byte 2 (bytes 2 to 4 belong to no tensor)"});
  check_bad(file_with("{}", "x"), {"the data section has 1 bytes, but the tensors end at byte 0"});
  // Empty tensors may sit at any boundary, including the end.
  const SafetensorsFile file = core::from_safetensors_bytes(
      file_with(
          R"({"e":{"dtype":"F32","shape":[0,5],"data_offsets":[1,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
          R"("z":{"dtype":"I64","shape":[0],"data_offsets":[1,1]}})",
          "x"),
      "empty-entries");
  REQUIRE(file.tensors.size() == 3);
  CHECK(file.tensors[0].first == "a");
  CHECK(file.tensors[1].first == "e");
  CHECK(file.tensors[1].second.shape() == Shape{0, 5});
  CHECK(file.tensors[2].first == "z");
}

TEST_CASE("safetensors: metadata values must be strings") {
  check_bad(file_with(R"({"__metadata__":{"epoch":3}})", ""),
            {"\"__metadata__\" value of 'epoch' must be a string, got a JSON number: 3"});
  check_bad(file_with(R"({"__metadata__":{"a":"b","c":null}})", ""),
            {"value of 'c' must be a string, got a JSON null"});
  check_bad(file_with(R"({"__metadata__":{"nested":{"x":"y"}}})", ""),
            {"value of 'nested' must be a string, got a JSON object"});
  check_bad(file_with(R"({"__metadata__":["pt"]})", ""),
            {"\"__metadata__\" must be an object of strings, got a JSON array: [\"pt\"]"});
}

TEST_CASE("safetensors: a file cut short is an Error naming the file, the tensor and the bytes") {
  const TempDir dir;
  const std::string path = dir.file("cut.safetensors");
  const std::string whole = core::to_safetensors_bytes({{"a", core::ones({3})}, {"w", core::ones({1000})}});
  write_file(path, whole.substr(0, whole.size() - 96));
  check_error(
      [&] { (void)core::load_safetensors(path); },
      {"[safetensors] " + path + ": tensor 'w' ends at byte 4012 of the data, but the data section has 3916 bytes"});
  // Cut inside the header.
  write_file(path, whole.substr(0, 40));
  check_error([&] { (void)core::load_safetensors(path); }, {path, "bytes, but only 32 bytes follow it"});
}
