// Device: where a tensor's memory lives. "cpu", or "cuda:0", "cuda:1", ...
#pragma once

#include <ostream>
#include <string>

namespace axiom::core {

enum class DeviceType : uint8_t { cpu, cuda };
constexpr int kNumDeviceTypes = 2;

struct Device {
  DeviceType type = DeviceType::cpu;
  int index = 0;

  static Device cpu() { return {DeviceType::cpu, 0}; }
  static Device cuda(int index = 0) { return {DeviceType::cuda, index}; }

  bool operator==(const Device&) const = default;
  std::string str() const { return type == DeviceType::cpu ? "cpu" : "cuda:" + std::to_string(index); }
};

inline std::ostream& operator<<(std::ostream& out, const Device& device) { return out << device.str(); }

}  // namespace axiom::core
