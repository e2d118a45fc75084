#pragma once
// Every agent run is logged as JSON lines in <root>/transcripts/<run>.jsonl: the task, each
// model reply, each tool call with the sandbox result and its report, the final answer and the
// security summary. `sandcell logs` reads them back.
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace sandcell::agent_service {

using Json = nlohmann::json;

class Transcript {
 public:
  // Creates <root>/transcripts/<run_id>.jsonl (mode 0600: it holds code and outputs).
  Transcript(const std::filesystem::path& root, std::string run_id);
  // Appends {"ts": ..., "type": type, ...fields} and flushes, so a crash keeps what happened.
  void write(const std::string& type, Json fields);
  // Called with every record after it is written (the CLI prints progress from it).
  void on_record(std::function<void(const Json&)> observer) { observer_ = std::move(observer); }
  const std::string& run_id() const { return run_id_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::string run_id_;
  std::filesystem::path path_;
  std::ofstream out_;
  std::mutex mutex_;
  std::function<void(const Json&)> observer_;
};

// A fresh run id: UTC time plus random hex, "20261202-141500-3fa9c2".
std::string new_run_id();

struct TranscriptSummary {
  std::string run_id{};
  std::string started{};  // ISO time of the first record
  std::string status{};   // from the end record, "running?" when there is none
  std::string task{};
};

std::filesystem::path transcripts_dir(const std::filesystem::path& root);
// Newest first.
std::vector<TranscriptSummary> list_transcripts(const std::filesystem::path& root);
// The records of one run; throws Error::invalid for an unknown run or a bad id.
std::vector<Json> read_transcript(const std::filesystem::path& root, const std::string& run_id);

}  // namespace sandcell::agent_service
