// Writing a file so that a crash never leaves half of it: the bytes go to a temporary file beside
// the target (`path.tmp-<pid>-<n>`), are flushed to the disk (fsync), and the temporary file is
// renamed over the target. Readers see the old file or the new one, never a mix. Any failure
// removes the temporary file and throws an axiom::Error that starts with "[op]" and names the file.
//
//   core::write_file_atomically("run/checkpoint.json", {{text.data(), text.size()}}, "checkpoint");
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace axiom::core {

struct ByteRange {
  const void* data;
  size_t size;
};

// Writes the pieces one after another, then renames. The target's directory must exist.
void write_file_atomically(const std::string& path, const std::vector<ByteRange>& pieces, const char* op);

inline void write_file_atomically(const std::string& path, const std::string& bytes, const char* op) {
  write_file_atomically(path, {{bytes.data(), bytes.size()}}, op);
}

}  // namespace axiom::core
