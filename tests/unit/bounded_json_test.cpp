// parse_bounded_json: the one parser every JSON input of sandcell goes through.
#include "sandcell/base/bounded_json.hpp"

#include <gtest/gtest.h>

#include <sstream>

namespace sandcell {
namespace {

std::string nested(int levels) {
  return std::string(levels, '[') + std::string(levels, ']');
}

TEST(BoundedJson, NestingUpToTheBound_Parses) {
  EXPECT_TRUE(parse_bounded_json(nested(kMaxJsonDepth)).is_array());
  EXPECT_EQ(parse_bounded_json(R"({"a":{"b":[1,2,{"c":null}]}})")["a"]["b"][2],
            nlohmann::json({{"c", nullptr}}));
}

TEST(BoundedJson, NestingBeyondTheBound_IsAParseErrorWithTheReason) {
  EXPECT_THROW(parse_bounded_json(nested(kMaxJsonDepth + 1)), nlohmann::json::parse_error);
  try {
    parse_bounded_json("{\"a\":" + nested(200000) + "}");
    FAIL() << "200,000 levels parsed";
  } catch (const nlohmann::json::parse_error& e) {
    EXPECT_NE(std::string(e.what()).find("nested deeper than 128 levels"), std::string::npos)
        << e.what();
  }
  std::istringstream in(nested(200000));
  EXPECT_THROW(parse_bounded_json(in), nlohmann::json::parse_error);
}

TEST(BoundedJson, OrDiscarded_GivesDiscardedForDeepOrBadJson) {
  EXPECT_TRUE(parse_bounded_json_or_discarded(nested(200000)).is_discarded());
  EXPECT_TRUE(parse_bounded_json_or_discarded("{not json").is_discarded());
  std::istringstream in(R"({"ok": true})");
  EXPECT_EQ(parse_bounded_json_or_discarded(in)["ok"], true);
  EXPECT_TRUE(parse_bounded_json_or_discarded(nested(8), 4).is_discarded());
}

}  // namespace
}  // namespace sandcell
