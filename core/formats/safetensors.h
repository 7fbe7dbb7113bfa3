// safetensors: named tensors in one file, the format of Hugging Face's `safetensors` library,
// readable by Python's safetensors and PyTorch.
//
//   [8 bytes]  N, the header's length, unsigned little-endian
//   [N bytes]  a JSON object: {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]},
//              ..., "__metadata__": {"key": "value", ...}}  (offsets relative to the byte after the header)
//   [...]      the tensors' bytes, row-major, little-endian, back to back
//
// dtypes: float32 "F32", float64 "F64", int64 "I64", uint8 "U8" (the format's other dtypes, F16,
// BF16, I32 and so on, are read as an "unsupported dtype" error). Writing is atomic: the file is
// written beside the target (`path.tmp-<pid>-<n>`), flushed to disk and renamed over it, so a crash
// never leaves half a file. The header is compact JSON, "__metadata__" first (when there is
// metadata), then the tensors in the order given (the data in the same order), padded with
// spaces to a multiple of 8 bytes as the reference library pads it. Reading checks every field against the file's
// length before allocating anything (the header at most 100 MB and nested at most 128 deep, as in the reference
// library; the tensors must tile the data section exactly, no gap, no overlap; a key may not appear twice), and a bad
// file is an axiom::Error naming the file and what is wrong.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "../tensor.h"

namespace axiom {
using Metadata = std::map<std::string, std::string>;  // a safetensors file's text fields
}  // namespace axiom

namespace axiom::core {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;  // in the order to write them

// Writes `tensors` (any device, any strides: they are copied to contiguous CPU bytes) to `path`.
void save_safetensors(const std::string& path, const NamedTensors& tensors, const Metadata& metadata = {});

struct SafetensorsFile {
  NamedTensors tensors;  // contiguous CPU tensors, in the file's data order (by data_offsets)
  Metadata metadata;
};
SafetensorsFile load_safetensors(const std::string& path);

// The exact bytes save_safetensors writes (for tests and in-memory use), and their reverse;
// `origin` names the source in error messages.
std::string to_safetensors_bytes(const NamedTensors& tensors, const Metadata& metadata = {});
SafetensorsFile from_safetensors_bytes(const std::string& bytes, const std::string& origin);

}  // namespace axiom::core

// The layers above autograd (nn, optim, models) write these names for the ideas above.
namespace axiom {
using core::NamedTensors;
}  // namespace axiom
