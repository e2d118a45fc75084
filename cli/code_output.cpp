#include "code_output.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "commands.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/base/unique_fd.hpp"

namespace sandcell::cli {
namespace {

using nlohmann::json;
using runtime::UniqueFd;

void write_fd(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the reader went away: the run goes on
    data.remove_prefix(static_cast<size_t>(n));
  }
}

// How many bytes at the end of `s` start a UTF-8 sequence that is not complete yet.
size_t incomplete_utf8_tail(const std::string& s) {
  for (size_t back = 1; back <= 3 && back <= s.size(); ++back) {
    unsigned char c = static_cast<unsigned char>(s[s.size() - back]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte: look further back
    size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    return need > back ? back : 0;
  }
  return 0;
}

void save_file(const std::string& local, const std::string& bytes) {
  std::ofstream out(local, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out.flush()) throw Error(errno ? errno : EIO, "write " + local);
}

std::string base_name(const std::string& path) { return path.substr(path.rfind('/') + 1); }

void save_gets(const agent::CodeResult& r, const std::vector<std::string>& gets) {
  for (size_t i = 0; i < gets.size() && i < r.files.size(); ++i) {
    const agent::WorkspaceFile& f = r.files[i];
    auto colon = gets[i].find(':');
    std::string local = colon == std::string::npos ? base_name(f.path) : gets[i].substr(colon + 1);
    if (!f.content) {
      std::cerr << "sandcell: --get " << f.path << ": " << f.note << "\n";
      continue;
    }
    save_file(local, *f.content);
  }
}

// The artifact's path below the artifacts directory; nullopt (and `why`) when it is not saved.
std::optional<std::string> artifact_relative(const std::string& path, const ArtifactsTarget& target, std::string& why) {
  std::string root = target.workspace_root.empty() ? "/workspace" : target.workspace_root;
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  std::string rel = path.rfind(root + "/", 0) == 0 ? path.substr(root.size() + 1) : path;
  for (size_t start = 0; start < rel.size();) {
    size_t end = std::min(rel.find('/', start), rel.size());
    std::string_view part(rel.data() + start, end - start);
    if (part.empty() || part == "." || part == "..") why = "not a plain relative path";
    else if (part[0] == '.' && !target.dotfiles) why = "a dot-file (--artifacts-dotfiles saves it)";
    if (!why.empty()) return std::nullopt;
    start = end + 1;
  }
  return rel;
}

// Writes DIR/rel: directories made as needed, never through a symlink, never over a file.
void save_artifact(const std::string& dir, const std::string& rel, const std::string& bytes) {
  UniqueFd at(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!at) throw Error(errno, "open --artifacts-dir " + dir);
  size_t start = 0;
  for (size_t slash; (slash = rel.find('/', start)) != std::string::npos; start = slash + 1) {
    std::string part = rel.substr(start, slash - start);
    if (mkdirat(at.get(), part.c_str(), 0755) != 0 && errno != EEXIST) throw Error(errno, "mkdir " + dir + "/" + rel.substr(0, slash));
    UniqueFd sub(openat(at.get(), part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!sub) throw Error(errno, "open " + dir + "/" + rel.substr(0, slash));
    at = std::move(sub);
  }
  UniqueFd out(openat(at.get(), rel.c_str() + start, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!out) throw Error(errno, "create " + dir + "/" + rel + (errno == EEXIST ? " (never overwritten)" : ""));
  for (std::string_view left = bytes; !left.empty();) {
    ssize_t n = write(out.get(), left.data(), left.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Error(errno ? errno : EIO, "write " + dir + "/" + rel);
    left.remove_prefix(static_cast<size_t>(n));
  }
}

void save_artifacts(const agent::CodeResult& r, const ArtifactsTarget& target) {
  for (const agent::WorkspaceFile& a : r.artifacts) {
    std::cerr << "sandcell: artifact " << a.path << " (" << a.mime << ", " << a.size << " bytes)";
    if (!target.dir.empty() && a.content) {
      std::string why;
      if (auto rel = artifact_relative(a.path, target, why)) {
        try {
          save_artifact(target.dir, *rel, *a.content);
          std::cerr << " saved to " << target.dir << "/" << *rel;
        } catch (const Error& e) {
          std::cerr << " not saved: " << e.what();
        }
      } else {
        std::cerr << " not saved: " << why;
      }
    }
    std::cerr << "\n";
  }
}

void print_summary(const agent::CodeResult& r) {
  if (!r.error) return;
  const agent::ErrorInfo& e = *r.error;
  std::cerr << "sandcell: " << e.kind;
  if (e.module) std::cerr << " '" << *e.module << "'";
  if (e.file) std::cerr << " at " << *e.file << (e.line ? ":" + std::to_string(*e.line) : "");
  std::cerr << ": " << (e.exception ? *e.exception + ": " : "") << e.message << "\n";
}

}  // namespace

runtime::OutputSink CodeOutput::sink() {
  return [this](runtime::Stream s, std::span<const char> data) {
    if (mode_ == Mode::Plain) write_fd(s == runtime::Stream::Stdout ? 1 : 2, {data.data(), data.size()});
    else if (mode_ == Mode::Stream) stream_event(s, data);
  };
}

void CodeOutput::stream_event(runtime::Stream s, std::span<const char> data, bool final) {
  std::string& text = pending_[s == runtime::Stream::Stdout ? 0 : 1];
  text.append(data.data(), data.size());
  size_t keep = final ? 0 : incomplete_utf8_tail(text);
  if (keep == text.size()) return;
  json event = {{"type", s == runtime::Stream::Stdout ? "stdout" : "stderr"}, {"data", text.substr(0, text.size() - keep)}};
  text.erase(0, text.size() - keep);
  write_fd(1, event.dump(-1, ' ', false, json::error_handler_t::replace) + "\n");
}

int CodeOutput::finish(const agent::CodeResult& r, const std::vector<std::string>& gets, const ArtifactsTarget& artifacts_dir) {
  json result = agent::to_json(r);
  switch (mode_) {
    case Mode::Plain:
      save_gets(r, gets);
      save_artifacts(r, artifacts_dir);
      print_summary(r);
      return agent::exit_code_for(r);
    case Mode::Json:
      save_gets(r, gets);
      save_artifacts(r, artifacts_dir);
      std::cout << dump(result) << std::endl;
      return agent::exit_code_for(r);
    case Mode::Contract:
      write_fd(1, result.dump(-1, ' ', false, json::error_handler_t::replace) + "\n");
      return 0;
    case Mode::Stream:
      for (int i = 0; i < 2; ++i)  // a dangling partial sequence: flush it (replaced) before the end
        if (!pending_[i].empty()) stream_event(i == 0 ? runtime::Stream::Stdout : runtime::Stream::Stderr, {}, true);
      write_fd(1, json{{"type", "end"}, {"result", result}}.dump(-1, ' ', false, json::error_handler_t::replace) + "\n");
      return 0;
  }
  return 0;
}

}  // namespace sandcell::cli
