#pragma once
// A small HTTP/1.1 server over libmicrohttpd: a thread per connection on a listening socket we
// made, whole request bodies (bounded), and the three kinds of answer Docker needs: a body, a
// streamed body (wait, logs) and a hijacked connection (attach, exec: `Upgrade: tcp`, 101).
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sandcell/base/unique_fd.hpp"

namespace sandcell::dockerapi {

struct HttpRequest {
  std::string method, path;
  std::multimap<std::string, std::string> query;  // a name may repeat (`names=a&names=b`)
  std::map<std::string, std::string> headers;     // names lower-cased (`x-registry-auth`)
  std::string body;
  // Set instead of `body` for a spooled route (BodySpool): the unlinked file the body was
  // written to, `body_bytes` long.
  std::shared_ptr<runtime::UniqueFd> body_file;
  uint64_t body_bytes = 0;
  bool upgrade = false;  // the client asked for `Upgrade: tcp`
  std::optional<std::string> param(const std::string& name) const;  // the first one
  std::vector<std::string> params(const std::string& name) const;   // all, in order
  bool flag(const std::string& name) const;  // "1", "true", "True"
};

// Writes some of the streamed body into buffer; 0 ends the body. Blocking is fine (a thread
// per connection).
using BodyStream = std::function<size_t(char* buffer, size_t size)>;
// Owns the raw socket after the 101 (any bytes the client sent past the head come first).
using Hijack = std::function<void(int socket, const std::string& early_bytes)>;

struct HttpReply {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::map<std::string, std::string> headers;
  BodyStream stream;  // set: the body is streamed (chunked)
  Hijack hijack;      // set: 101 Switching Protocols, then this
};

using HttpRoutes = std::function<HttpReply(const HttpRequest&)>;

// A body too large for memory (an image archive): written as it arrives to an unlinked file
// (O_TMPFILE) in `dir`, which goes with the request whatever happens; more than max_bytes is a
// 413. The rule sees the method, path and query (no body yet); nullopt: kept in memory.
struct BodySpool {
  std::string dir;
  uint64_t max_bytes = 0;
};
using SpoolRule = std::function<std::optional<BodySpool>(const HttpRequest&)>;

class HttpServer {
 public:
  // Serves on `listen_fd` (a listening socket, kept open by the caller) until destroyed. Bodies
  // are kept in memory up to max_body_bytes, unless `spool` says otherwise for a request.
  HttpServer(int listen_fd, size_t max_body_bytes, HttpRoutes routes, SpoolRule spool = {});
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

 private:
  struct Daemon;
  std::unique_ptr<Daemon> daemon_;
};

}  // namespace sandcell::dockerapi
