#include "sandcell/agent_service/transcript.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <random>

#include "sandcell/base/error.hpp"
#include "sandcell/base/bounded_json.hpp"

namespace sandcell::agent_service {
namespace {

std::string utc_now(const char* format) {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buffer[64];
  std::strftime(buffer, sizeof buffer, format, &tm);
  return buffer;
}

// Run ids name files: only the characters new_run_id makes.
bool valid_run_id(const std::string& id) {
  return !id.empty() && id.size() < 64 &&
         id.find_first_not_of("0123456789abcdefghijklmnopqrstuvwxyz-") == std::string::npos;
}

}  // namespace

std::filesystem::path transcripts_dir(const std::filesystem::path& root) { return root / "transcripts"; }

Transcript::Transcript(const std::filesystem::path& root, std::string run_id)
    : run_id_(std::move(run_id)), path_(transcripts_dir(root) / (run_id_ + ".jsonl")) {
  std::error_code ec;
  std::filesystem::create_directories(path_.parent_path(), ec);
  if (ec) throw Error(ec.value(), "create " + path_.parent_path().string());
  int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) throw Error(errno, "create transcript " + path_.string());
  ::close(fd);
  out_.open(path_, std::ios::app);
}

void Transcript::write(const std::string& type, Json fields) {
  Json record{{"ts", utc_now("%Y-%m-%dT%H:%M:%SZ")}, {"type", type}};
  record.update(fields);
  std::lock_guard lock(mutex_);
  // Replace invalid UTF-8 from program output instead of throwing mid-run.
  out_ << record.dump(-1, ' ', false, Json::error_handler_t::replace) << "\n";
  out_.flush();
  if (observer_) observer_(record);
}

std::string new_run_id() {
  std::random_device random;
  char hex[8];
  std::snprintf(hex, sizeof hex, "%06x", random() & 0xffffff);
  return utc_now("%Y%m%d-%H%M%S-") + hex;
}

std::vector<Json> read_transcript(const std::filesystem::path& root, const std::string& run_id) {
  if (!valid_run_id(run_id)) throw Error::invalid("not a run id: '" + run_id + "'");
  std::ifstream in(transcripts_dir(root) / (run_id + ".jsonl"));
  if (!in) throw Error::invalid("no transcript for run " + run_id + " under " + transcripts_dir(root).string());
  std::vector<Json> records;
  for (std::string line; std::getline(in, line);) {
    Json record = parse_bounded_json_or_discarded(line);
    if (!record.is_discarded()) records.push_back(std::move(record));
  }
  return records;
}

std::vector<TranscriptSummary> list_transcripts(const std::filesystem::path& root) {
  std::vector<TranscriptSummary> runs;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(transcripts_dir(root), ec)) {
    if (entry.path().extension() != ".jsonl") continue;
    TranscriptSummary s{entry.path().stem().string(), "", "running?", ""};
    for (const Json& r : read_transcript(root, s.run_id)) {
      if (r.value("type", "") == "start") {
        s.started = r.value("ts", "");
        s.task = r.value("task", "");
      } else if (r.value("type", "") == "end") {
        s.status = r.value("status", "");
      }
    }
    runs.push_back(std::move(s));
  }
  std::sort(runs.begin(), runs.end(), [](const auto& a, const auto& b) { return a.run_id > b.run_id; });
  return runs;
}

}  // namespace sandcell::agent_service
