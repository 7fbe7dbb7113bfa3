#include "core/memory.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <limits>
#include <string>

namespace axiom::core {

namespace {
constexpr size_t kUnlimited = std::numeric_limits<size_t>::max();

// MemAvailable from /proc/meminfo (kB), or the physical memory where there is none.
size_t kernel_available() {
  std::ifstream meminfo("/proc/meminfo");
  for (std::string key; meminfo >> key;) {
    size_t kib = 0;
    if (key == "MemAvailable:" && meminfo >> kib) return kib * 1024;
    meminfo.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return physical_memory();
}

// The lowest of the address-space limit (ulimit -v) and the cgroup's memory.max (a container's limit).
size_t process_limit() {
  size_t limit = kUnlimited;
  rlimit address_space{};
  if (getrlimit(RLIMIT_AS, &address_space) == 0 && address_space.rlim_cur != RLIM_INFINITY) {
    limit = static_cast<size_t>(address_space.rlim_cur);
  }
  std::ifstream cgroup("/sys/fs/cgroup/memory.max");  // "max", or bytes
  size_t bytes = 0;
  if (cgroup >> bytes) limit = std::min(limit, bytes);
  return limit;
}
}  // namespace

size_t physical_memory() {
  const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page_size > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page_size) : kUnlimited;
}

MachineMemory machine_memory() {
  const size_t limit = process_limit();
  MachineMemory m;
  m.total = std::min(physical_memory(), limit);
  m.available = std::min(kernel_available(), limit);
  return m;
}

std::string format_bytes(double bytes) {
  static const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 6) bytes /= 1024, ++unit;
  char text[48];
  std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.1f %s", bytes, units[unit]);
  return text;
}

}  // namespace axiom::core
