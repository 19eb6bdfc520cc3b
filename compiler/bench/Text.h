// The small text helpers the command-line values of bench and tune are read with.
#pragma once

#include <string_view>
#include <vector>

namespace tilec::bench {

inline std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

/// The pieces of `text` between `sep`s, each trimmed (empty pieces kept).
inline std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t end = text.find(sep, start);
    out.push_back(trim(text.substr(start, end == std::string_view::npos ? end : end - start)));
    if (end == std::string_view::npos)
      return out;
    start = end + 1;
  }
}

} // namespace tilec::bench
