#include "core/formats/atomic_file.h"

#include <unistd.h>  // getpid, fsync

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <system_error>

#include "core/error.h"

namespace axiom::core {

namespace {

std::string errno_text(int error) { return std::generic_category().message(error); }

// A name beside `path` that no other writer (thread or process) uses.
std::string temporary_name(const std::string& path) {
  static std::atomic<uint64_t> counter{0};
  return path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
}

void write_and_sync(std::FILE* file, const std::vector<ByteRange>& pieces, const std::string& temp, const char* op) {
  for (const ByteRange& piece : pieces) {
    if (piece.size > 0 && std::fwrite(piece.data, 1, piece.size, file) != piece.size) {
      throw Error(op, "writing the temporary file '", temp, "' failed: ", errno_text(errno));
    }
  }
  if (std::fflush(file) != 0 || ::fsync(::fileno(file)) != 0) {
    throw Error(op, "flushing the temporary file '", temp, "' failed: ", errno_text(errno));
  }
}

}  // namespace

void write_file_atomically(const std::string& path, const std::vector<ByteRange>& pieces, const char* op) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path directory = fs::path(path).parent_path();
  if (!directory.empty() && !fs::is_directory(directory, ec)) {
    throw Error(op, "cannot write '", path, "': the directory '", directory.string(), "' does not exist");
  }
  const std::string temp = temporary_name(path);
  std::FILE* file = std::fopen(temp.c_str(), "wbx");  // x: fail rather than reuse an existing file
  if (file == nullptr) throw Error(op, "cannot write '", path, "': cannot create '", temp, "': ", errno_text(errno));
  try {
    write_and_sync(file, pieces, temp, op);
    std::FILE* closing = file;
    file = nullptr;
    if (std::fclose(closing) != 0)
      throw Error(op, "closing the temporary file '", temp, "' failed: ", errno_text(errno));
    fs::rename(temp, path, ec);
    if (ec) throw Error(op, "cannot write '", path, "': renaming '", temp, "' over it failed: ", ec.message());
  } catch (...) {
    if (file != nullptr) std::fclose(file);
    fs::remove(temp, ec);
    throw;
  }
}

}  // namespace axiom::core
