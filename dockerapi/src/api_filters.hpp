#pragma once
// The `filters` query parameter of list, prune and events endpoints: JSON, either
// {"key":{"value":true}} (what clients send) or {"key":["value"]} (the older form), parsed with
// its depth bounded. Several values of a key match any of them; several keys must all match.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "http_server.hpp"

namespace sandcell::dockerapi {

using Filters = std::map<std::string, std::vector<std::string>>;

// ApiError 400 for JSON that is not such an object and for a key not in `known`.
Filters parse_filters(const HttpRequest& request, const std::set<std::string>& known);

// `label` filter values against labels: "key" (present) or "key=value".
bool labels_match(const std::vector<std::string>& wanted, const std::map<std::string, std::string>& labels);

// Docker's `since`/`until` timestamps: seconds since the epoch with optional ".nanoseconds"
// (what the CLI sends), RFC 3339, or a Go duration before now ("24h"). Nanoseconds since the epoch; ApiError 400 when unreadable.
int64_t parse_timestamp_ns(const std::string& text, const char* name);

}  // namespace sandcell::dockerapi
