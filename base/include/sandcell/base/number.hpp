#pragma once
// Whole-string number parsing that never throws. std::stoi and friends throw on overflow and on
// text that is not a number, and much of what sandcell parses (Dockerfiles, config.json, program
// output, HTTP headers) comes from someone else.
#include <charconv>
#include <optional>
#include <string_view>
#include <system_error>

namespace sandcell {

// The number `text` spells in `base`, or nothing when any character is left over, the text is
// empty, or the value does not fit in T.
template <typename T>
std::optional<T> parse_number(std::string_view text, int base = 10) {
  T value{};
  const char* end = text.data() + text.size();
  auto [stop, ec] = std::from_chars(text.data(), end, value, base);
  if (text.empty() || ec != std::errc() || stop != end) return std::nullopt;
  return value;
}

}  // namespace sandcell
