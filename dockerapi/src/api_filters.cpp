// Docker's filters argument and timestamps.
#include "api_filters.hpp"

#include <chrono>
#include <ctime>
#include <regex>

#include "api_error.hpp"
#include "sandcell/base/bounded_json.hpp"

namespace sandcell::dockerapi {

Filters parse_filters(const HttpRequest& request, const std::set<std::string>& known) {
  Filters out;
  std::string text = request.param("filters").value_or("");
  if (text.empty()) return out;
  nlohmann::json filters = parse_bounded_json_or_discarded(text);
  if (filters.is_discarded() || !filters.is_object()) throw bad_request("invalid filter: filters must be a JSON object");
  for (const auto& [key, values] : filters.items()) {
    if (!known.contains(key)) throw bad_request("invalid filter '" + key + "'");
    std::vector<std::string>& list = out[key];
    if (values.is_object()) {
      for (const auto& [value, on] : values.items())
        if (!on.is_boolean()) throw bad_request("invalid filter '" + key + "': values must be true");
        else if (on.get<bool>()) list.push_back(value);
    } else if (values.is_array()) {
      for (const auto& value : values)
        if (!value.is_string()) throw bad_request("invalid filter '" + key + "': values must be strings");
        else list.push_back(value.get<std::string>());
    } else {
      throw bad_request("invalid filter '" + key + "': expected an object or a list");
    }
  }
  return out;
}

bool labels_match(const std::vector<std::string>& wanted, const std::map<std::string, std::string>& labels) {
  for (const std::string& w : wanted) {
    size_t eq = w.find('=');
    auto it = labels.find(w.substr(0, eq));
    if (it == labels.end()) return false;
    if (eq != std::string::npos && it->second != w.substr(eq + 1)) return false;
  }
  return true;
}

int64_t parse_timestamp_ns(const std::string& text, const char* name) {
  static const std::regex kUnix("(-?[0-9]{1,12})(?:\\.([0-9]{1,9}))?");
  std::smatch m;
  if (std::regex_match(text, m, kUnix)) {
    std::string nanos = m[2].matched ? m[2].str() : "";
    nanos.resize(9, '0');
    return std::stoll(m[1].str()) * 1000000000 + std::stoll(nanos);
  }
  // A Go duration ("24h", "1h30m", "90s"): that long before now, as Docker reads prune's until.
  static const std::regex kDuration("(?:[0-9]{1,9}(?:ns|us|ms|s|m|h))+");
  if (std::regex_match(text, kDuration)) {
    static const std::regex kPart("([0-9]+)(ns|us|ms|s|m|h)");
    int64_t ns = 0;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), kPart); it != std::sregex_iterator(); ++it) {
      const std::string unit = (*it)[2];
      int64_t scale = unit == "ns" ? 1 : unit == "us" ? 1000 : unit == "ms" ? 1000000 : unit == "s" ? 1000000000
                      : unit == "m" ? 60000000000 : 3600000000000;
      int64_t part = 0;
      if (__builtin_mul_overflow(std::stoll((*it)[1]), scale, &part) || __builtin_add_overflow(ns, part, &ns))
        throw bad_request(std::string("invalid value for ") + name + ": " + text);
    }
    auto now = std::chrono::system_clock::now().time_since_epoch();
    return std::chrono::duration_cast<std::chrono::nanoseconds>(now).count() - ns;
  }
  std::tm tm{};
  const char* end = strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (end != nullptr && (*end == '\0' || *end == 'Z' || *end == '.'))
    return static_cast<int64_t>(timegm(&tm)) * 1000000000;
  throw bad_request(std::string("invalid value for ") + name + ": " + text);
}

}  // namespace sandcell::dockerapi
