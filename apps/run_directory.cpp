#include "apps/run_directory.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <regex>
#include <system_error>
#include <vector>

#include "core/error.h"
#include "models/training/training.h"

namespace axiom::apps {

namespace fs = std::filesystem;

namespace {

constexpr const char* kLockName = "train.lock";

bool is_run_file(const std::string& name) {
  return name == "checkpoint.json" || name == "checkpoint.pending.json" || name == "metrics.jsonl" ||
         name == "loss.png" || name == "profile.csv" || name == "profile.trace.json" || name == "best" ||
         name == "events.out.tfevents.axiom" || models::is_checkpoint_file_name(name);
}

// NAME.tmp-PID-N or loss.png.tmp-PID.png, for NAME a run's file: `stem` receives NAME.
bool is_temporary(const std::string& name, std::string& stem) {
  static const std::regex temporary(R"((.*)\.tmp-[0-9]+(-[0-9]+|\.png))");
  std::smatch match;
  if (!std::regex_match(name, match, temporary)) return false;
  stem = match[1].str();
  return is_run_file(stem);
}

bool is_temporary(const std::string& name) {
  std::string stem;
  return is_temporary(name, stem);
}

std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) names.push_back(entry.path().filename().string());
  if (ec) throw Error("train", "cannot list '", dir, "': ", ec.message());
  return names;
}

void remove_stale_temporaries(const std::string& dir) {
  for (const std::string& name : names_in(dir)) {
    if (!is_temporary(name)) continue;
    std::error_code ec;
    fs::remove(fs::path(dir) / name, ec);
    if (ec)
      throw Error("train", "cannot remove the stale temporary file '", (fs::path(dir) / name).string(),
                  "': ", ec.message());
  }
}

// The process id written in a lock file, for the message ("" if unreadable).
std::string holder_of(int fd) {
  char text[32] = {};
  const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
  return n > 0 ? std::string(text, static_cast<size_t>(n)) : std::string();
}

// Whether the file open at fd is a lock file as RunLock writes it: a regular file, empty (a new one,
// or one whose writer was killed before writing) or holding a process id.
bool is_lock_we_wrote(int fd) {
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode) || info.st_size > 20) return false;
  const std::string text = holder_of(fd);
  return std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

bool written_by_runs(const std::string& name) { return name == kLockName || is_run_file(name) || is_temporary(name); }

// (Anything named checkpoint.json counts: a directory or a FIFO there is read_checkpoint's Error.)
bool has_checkpoint(const std::string& dir) {
  std::error_code ec;
  return fs::exists(fs::symlink_status(fs::path(dir) / "checkpoint.json", ec));
}

void check_new_run_directory(const std::string& dir, bool force) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return;
  if (!fs::is_directory(dir, ec)) throw Error("train", "--out '", dir, "' exists and is not a directory");
  // What an attempt that never committed a checkpoint leaves, and the next start removes. Every
  // attempt takes its lock before it writes anything else, so without a train.lock none are ours.
  std::vector<std::string> leftovers = {kLockName};
  if (fs::exists(fs::symlink_status(fs::path(dir) / kLockName, ec))) {
    leftovers = models::uncommitted_checkpoint_files(dir);
    leftovers.insert(leftovers.end(), {kLockName, "checkpoint.pending.json"});
  }
  std::vector<std::string> others, run_files;
  for (const std::string& name : names_in(dir)) {
    if (is_temporary(name) || std::find(leftovers.begin(), leftovers.end(), name) != leftovers.end()) continue;
    (written_by_runs(name) ? run_files : others).push_back(name);
  }
  if (!force && !(others.empty() && run_files.empty())) {
    throw Error("train", "'", dir, "' is not empty and holds no axiom run (no checkpoint.json); choose a new or empty ",
                "directory, or pass --force to start the run beside the ", others.size() + run_files.size(),
                " entries there (none is deleted)");
  }
  if (!run_files.empty()) {
    throw Error("train", "'", dir, "' holds '", run_files.front(),
                "', a name that a run writes, but no checkpoint.json: axiom will ",
                "not overwrite it, even with --force; move it, or choose another --out");
  }
}

RunLock::RunLock(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error("train", "cannot create the run's directory '", dir, "': ", ec.message());
  const std::string path = (fs::path(dir) / kLockName).string();
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);  // (not through a link)
  if (fd_ < 0) throw Error("train", "cannot open the lock file '", path, "': ", std::strerror(errno));
  if (!is_lock_we_wrote(fd_)) {
    ::close(fd_);
    throw Error("train", "'", path,
                "' is not axiom's lock file (a lock file holds a process id and nothing else); axiom will ",
                "not overwrite it: move it, or choose another --out");
  }
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    const std::string holder = holder_of(fd_);
    ::close(fd_);
    if (error == EWOULDBLOCK) {
      throw Error("train", "another axiom train", holder.empty() ? "" : " (process " + holder + ")",
                  " is training in '", dir, "'; wait for it to stop, or choose another --out");
    }
    throw Error("train", "cannot lock '", path, "': ", std::strerror(error));
  }
  const std::string pid = std::to_string(::getpid());
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    const int error = errno;
    ::close(fd_);
    throw Error("train", "cannot write the lock file '", path, "': ", std::strerror(error));
  }
  try {
    remove_stale_temporaries(dir);
    models::remove_uncommitted_checkpoint_files(dir);
  } catch (...) {
    ::close(fd_);
    throw;
  }
}

RunLock::~RunLock() { ::close(fd_); }  // closing releases the lock; the file stays (it is the run's)

}  // namespace axiom::apps
