#include "sandcell/base/bounded_json.hpp"

#include <string>

namespace sandcell {
namespace {

using nlohmann::json;

// The parser callback sees each object and array as it opens, with the number of containers
// around it; throwing there stops the parse before the next level is built.
json::parser_callback_t depth_bound(int max_depth) {
  return [max_depth](int depth, json::parse_event_t event, json&) {
    if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
        depth >= max_depth)
      throw json::parse_error::create(
          101, 0, "JSON nested deeper than " + std::to_string(max_depth) + " levels", nullptr);
    return true;
  };
}

template <typename Input>
json parse_or_discarded(Input&& input, int max_depth) {
  try {
    return json::parse(std::forward<Input>(input), depth_bound(max_depth));
  } catch (const json::exception&) {
    return json(json::value_t::discarded);
  }
}

}  // namespace

json parse_bounded_json(std::string_view text, int max_depth) {
  return json::parse(text, depth_bound(max_depth));
}

json parse_bounded_json(std::istream& in, int max_depth) {
  return json::parse(in, depth_bound(max_depth));
}

json parse_bounded_json_or_discarded(std::string_view text, int max_depth) {
  return parse_or_discarded(text, max_depth);
}

json parse_bounded_json_or_discarded(std::istream& in, int max_depth) {
  return parse_or_discarded(in, max_depth);
}

}  // namespace sandcell
