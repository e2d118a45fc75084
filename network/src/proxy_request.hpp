#pragma once
// Reading one proxy request with http_parser: the head first (so the proxy can decide before any
// body moves), then the body, re-framed for the upstream.
#include <http_parser.h>

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace sandcell::network {

struct RequestHead {
  bool connect = false;
  std::string method;
  std::string host;  // as in the request target, not yet normalised
  uint16_t port = 0;
  bool userinfo = false;
  std::string origin_form;  // "/path?query" for absolute-form requests
  std::vector<std::pair<std::string, std::string>> headers;
  bool chunked = false;
  std::optional<uint64_t> content_length;
};

// Why a head was not accepted: the HTTP status to answer and the reason to log.
struct RequestError {
  int status = 400;
  std::string reason;
};

class RequestParser {
 public:
  explicit RequestParser(size_t max_header_bytes);

  // Feeds bytes until the head is complete. Returns how many bytes it consumed; head() is set
  // once complete; error() once the request is unacceptable.
  size_t feed_head(const char* data, size_t size);
  const std::optional<RequestHead>& head() const { return head_; }
  const std::optional<RequestError>& error() const { return error_; }

  // After the head: feeds the rest of the message. `sink` receives the body re-framed for the
  // upstream (chunked again when it came chunked). Returns bytes consumed; message_complete() says
  // when the request has ended (bytes after it are not part of this request).
  size_t feed_body(const char* data, size_t size,
                   const std::function<bool(std::string_view)>& sink);
  bool message_complete() const { return complete_; }

  // The head for the upstream: origin-form, Host set, hop-by-hop headers dropped,
  // "Connection: close".
  std::string upstream_head(const std::string& host_header) const;

 private:
  static int on_url(http_parser* p, const char* at, size_t length);
  static int on_header_field(http_parser* p, const char* at, size_t length);
  static int on_header_value(http_parser* p, const char* at, size_t length);
  static int on_headers_complete(http_parser* p);
  static int on_body(http_parser* p, const char* at, size_t length);
  static int on_message_complete(http_parser* p);
  void finish_head();
  void fail(int status, std::string reason);

  http_parser parser_{};
  http_parser_settings settings_{};
  size_t max_header_bytes_ = 0;
  size_t header_bytes_ = 0;
  std::string url_;
  std::vector<std::pair<std::string, std::string>> headers_;
  bool in_value_ = false;
  bool head_complete_ = false;
  bool complete_ = false;
  std::optional<RequestHead> head_;
  std::optional<RequestError> error_;
  const std::function<bool(std::string_view)>* sink_ = nullptr;
  bool sink_failed_ = false;
};

}  // namespace sandcell::network
