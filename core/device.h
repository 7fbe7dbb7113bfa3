// Device: where a tensor's memory lives. "cpu", or "cuda:0", "cuda:1", ..., or "meta": the
// shape-only device, where tensors have shapes and dtypes but no memory and ops compute nothing
// (core/meta/: what a model allocates, measured by running it there).
#pragma once

#include <charconv>
#include <ostream>
#include <string>
#include <string_view>

#include "error.h"

namespace axiom {

enum class DeviceType : uint8_t { cpu, cuda, meta };
constexpr int kNumDeviceTypes = 3;

struct Device {
  DeviceType type = DeviceType::cpu;
  int index = 0;

  static Device cpu() { return {DeviceType::cpu, 0}; }
  static Device cuda(int index = 0) { return {DeviceType::cuda, index}; }
  static Device meta() { return {DeviceType::meta, 0}; }

  // "cpu", "cuda" (= "cuda:0"), "cuda:N" or "meta"; anything else is an Error.
  static Device parse(std::string_view text) {
    if (text == "cpu") return cpu();
    if (text == "meta") return meta();
    if (text == "cuda") return cuda(0);
    int index = -1;
    if (text.starts_with("cuda:")) {
      const std::string_view digits = text.substr(5);
      const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
      if (error != std::errc() || end != digits.data() + digits.size()) index = -1;
    }
    if (index < 0) throw Error("device", "unknown device '", text, "' (cpu, cuda, cuda:N or meta)");
    return cuda(index);
  }

  bool operator==(const Device&) const = default;
  std::string str() const {
    if (type == DeviceType::meta) return "meta";
    return type == DeviceType::cpu ? "cpu" : "cuda:" + std::to_string(index);
  }
};

inline std::ostream& operator<<(std::ostream& out, const Device& device) { return out << device.str(); }

}  // namespace axiom
