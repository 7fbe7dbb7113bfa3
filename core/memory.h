// How much memory this machine has, and how much a program may still take: what a command checks
// before it allocates (models/training/memory_budget.h), so that a config, a batch or a sample count that
// cannot fit ends in an Error that gives the estimate and the machine's figures, not a
// std::bad_alloc or the kernel's out-of-memory killer halfway through.
#pragma once

#include <cstddef>
#include <string>

namespace axiom::core {

struct MachineMemory {
  size_t total = 0;      // physical memory, or the process's limit (cgroup memory.max, ulimit -v) when lower
  size_t available = 0;  // what the kernel says it can give without swapping (MemAvailable), within
                         // the same limits (plus, in Backend::memory(), what the allocator keeps for reuse)
};
// The machine's memory, as the kernel gives it (the CPU backend's memory() adds its allocator's
// cache to what is available: core/backend.h).
MachineMemory machine_memory();
// The machine's physical memory in bytes, ignoring limits (SIZE_MAX when the system does not say).
size_t physical_memory();

// "1.5 GiB", "12.0 MiB", "512 bytes": a size for people.
std::string format_bytes(double bytes);

}  // namespace axiom::core
