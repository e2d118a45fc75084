#pragma once
// Docker's `reference` filter (`docker images --filter reference='python:3*'`): the pattern is a
// shell glob as Go's path.Match reads it, tried against the image's familiar name with its tag
// ("python:3.12") and then without ("python"), as distribution/reference's FamiliarMatch does.
#include <string_view>

namespace sandcell::rootfs_builder {

// Go's path.Match: `*` is any run of characters but '/', `?` one character but '/', `[a-z]` and
// `[^a-z]` a class (any character, '/' too), `\` escapes the next character. Bytes, not runes
// (image names are ASCII). The time is O(pattern × text) whatever the pattern: no backtracking.
// Throws Error::invalid for a malformed pattern (an unclosed or empty class, a range missing an
// end, a trailing `\`), whether or not the text would have got that far.
bool glob_match(std::string_view pattern, std::string_view text);

// `familiar`: "name:tag" as the store keeps it ("python:3", "localhost:5000/team/app:1").
bool reference_matches(std::string_view pattern, std::string_view familiar);

}  // namespace sandcell::rootfs_builder
