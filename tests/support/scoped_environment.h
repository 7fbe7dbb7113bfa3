// An environment variable set (or unset) for the life of a scope, shared by the suites.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

namespace axiom::test {

// Sets `name` to `value` (nullptr: unsets it) until the scope ends, then puts back what was there.
struct ScopedEnvironment {
  std::string name;
  std::optional<std::string> before;
  ScopedEnvironment(std::string name_, const char* value) : name(std::move(name_)) {
    if (const char* old = std::getenv(name.c_str())) before = old;
    if (value != nullptr) {
      setenv(name.c_str(), value, 1);
    } else {
      unsetenv(name.c_str());
    }
  }
  ~ScopedEnvironment() {
    if (before) {
      setenv(name.c_str(), before->c_str(), 1);
    } else {
      unsetenv(name.c_str());
    }
  }
  ScopedEnvironment(const ScopedEnvironment&) = delete;
  ScopedEnvironment& operator=(const ScopedEnvironment&) = delete;
};

}  // namespace axiom::test
