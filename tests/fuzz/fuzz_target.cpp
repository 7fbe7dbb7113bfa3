#include "tests/fuzz/fuzz_target.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <system_error>

namespace axiom::fuzz {

namespace fs = std::filesystem;

namespace {
struct ScratchDir {
  fs::path path;
  ScratchDir() {
    std::error_code ec;
    const fs::path base = fs::is_directory("/dev/shm", ec) ? fs::path("/dev/shm") : fs::temp_directory_path();
    path = base / ("axiom-fuzz-" + std::to_string(::getpid()));
    fs::create_directories(path);
  }
  ~ScratchDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};
}  // namespace

const std::string& scratch_dir() {
  static const ScratchDir dir;
  static const std::string path = dir.path.string();
  return path;
}

std::string file_with(const uint8_t* data, size_t size, const std::string& name) {
  const std::string path = (fs::path(scratch_dir()) / name).string();
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr || (size > 0 && std::fwrite(data, 1, size, file) != size) || std::fclose(file) != 0) {
    std::perror(path.c_str());
    std::abort();  // the harness itself failed: not a finding in a reader
  }
  return path;
}

}  // namespace axiom::fuzz
