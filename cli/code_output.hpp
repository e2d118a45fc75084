#pragma once
// How `sandcell code` shows a result: plain (output passed through as it arrives, a summary on
// stderr), --json, --request-json (one line of JSON), or --stream (NDJSON events, then "end").
#include <string>
#include <vector>

#include "sandcell/agent/code_result.hpp"
#include "sandcell/runtime/sandbox.hpp"

namespace sandcell::cli {

// --artifacts-dir: where the artifacts are saved, keeping their tree below the skill's artifacts
// directory (out/a/r.txt → DIR/a/r.txt). An existing file is never overwritten, and names
// starting with '.' (.bashrc, .git/hooks) are saved only when asked.
struct ArtifactsTarget {
  std::string dir{};             // empty: not saved
  std::string workspace_root{};  // the skill's artifacts directory ("/workspace/out")
  bool dotfiles = false;
};

class CodeOutput {
 public:
  enum class Mode { Plain, Json, Contract, Stream };
  explicit CodeOutput(Mode mode) : mode_(mode) {}

  // Where the runner sends the compile and run output as it arrives.
  runtime::OutputSink sink();
  // Prints the result, saves --get files and artifacts; returns the exit code.
  int finish(const agent::CodeResult& result, const std::vector<std::string>& gets, const ArtifactsTarget& artifacts);

 private:
  void stream_event(runtime::Stream stream, std::span<const char> data, bool final = false);

  Mode mode_;
  std::string pending_[2];  // a UTF-8 sequence split across two reads waits for its tail
};

}  // namespace sandcell::cli
