// axiom::Error — the one exception type of the library.
//
// Every message starts with the op in brackets and shows the values that were wrong:
//   [matmul] shapes [2, 3] and [4, 5] cannot be multiplied (3 != 4)
// Build one with any streamable pieces; shapes (core::Shape, std::vector<int64_t>) print as [2, 3].
#pragma once

#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <boost/container/small_vector.hpp>

namespace axiom {

namespace detail {
template <typename Sizes>
void append_list(std::ostream& out, const Sizes& sizes) {
  out << '[';
  for (size_t i = 0; i < sizes.size(); ++i) out << (i ? ", " : "") << sizes[i];
  out << ']';
}
inline void append(std::ostream& out, const std::vector<int64_t>& shape) { append_list(out, shape); }
template <size_t N>  // core::Shape (core/shape.h)
void append(std::ostream& out, const boost::container::small_vector<int64_t, N>& shape) {
  append_list(out, shape);
}
template <typename T>
void append(std::ostream& out, const T& value) {
  out << value;
}
}  // namespace detail

class Error : public std::runtime_error {
 public:
  template <typename... Parts>
  Error(std::string_view op, const Parts&... parts) : std::runtime_error(format(op, parts...)) {}

 private:
  template <typename... Parts>
  static std::string format(std::string_view op, const Parts&... parts) {
    std::ostringstream out;
    out << '[' << op << "] ";
    (detail::append(out, parts), ...);
    return out.str();
  }
};

}  // namespace axiom
