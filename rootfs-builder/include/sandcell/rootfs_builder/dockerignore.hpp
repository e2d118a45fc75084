#pragma once
// .dockerignore as Docker applies it (moby/patternmatcher), and the COPY/ADD source globs that use
// the same matcher. Paths are relative to the build context, '/'-separated ("src/main.py").
//
// Pattern syntax: Go's filepath.Match (`*` and `?` never match '/', `[a-z]`, `[^a]`, `\` escapes)
// plus `**`, any number of directories, zero included. Patterns are cleaned like Go's
// filepath.Clean ("./a//b/" is "a/b", a leading "/" dropped); `#` lines are comments; `!`
// re-includes. A pattern matching a directory matches everything below it. The last pattern that
// matches a path decides.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace sandcell::rootfs_builder {

class DockerIgnore {
 public:
  DockerIgnore() = default;
  // The contents of a .dockerignore file; Error::invalid on a malformed pattern.
  static DockerIgnore parse(std::string_view file_text);
  explicit DockerIgnore(const std::vector<std::string>& patterns);

  bool excluded(std::string_view path) const;
  const std::vector<std::string>& patterns() const { return patterns_; }

 private:
  struct Rule;
  std::vector<std::string> patterns_;
  std::vector<std::shared_ptr<const Rule>> rules_;
};

// The context paths a COPY/ADD source pattern names, topmost only: "src" for the pattern "src"
// even when only "src/a.py" is listed (the executor copies a directory recursively), "." for the
// whole context. Sorted. Empty when nothing matches (Docker's "no source files were specified").
std::vector<std::string> match_sources(std::string_view pattern,
                                       const std::vector<std::string>& context_paths);

// Go's filepath.Clean on a '/'-separated relative path, with a leading "/" dropped: "./a//b/.."
// is "a"; "" and "/" are ".".
std::string clean_context_path(std::string_view path);

}  // namespace sandcell::rootfs_builder
