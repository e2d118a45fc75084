#pragma once
// One HTTP exchange with libcurl, redirects not followed: the registry session decides where a
// redirect may go and which headers go with it. A client keeps its connections alive between
// requests; use one per thread.
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sandcell/base/error.hpp"

namespace sandcell::rootfs_builder {

struct HttpRequest {
  std::string method = "GET";
  std::string url{};
  std::vector<std::string> headers{};  // "Name: value"
  std::string body{};                // sent when body_file is empty
  std::string body_file{};           // or bytes [body_offset, body_offset + body_length) of this file
  std::int64_t body_offset = 0;
  std::int64_t body_length = 0;
  // Bodies of 2xx answers go here when set (blob downloads), with the status (200, or 206 for
  // a Range); other bodies go into the response.
  std::function<void(long status, std::string_view data)> sink{};
  bool tls_verify = true;
  // The exchange must be over by then (CURLOPT_TIMEOUT_MS); a request sent after it is refused.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
};

struct HttpResponse {
  long status = 0;
  std::string body;          // when no sink took it; at most kMaxBody bytes
  std::string redirect_url;  // 3xx: where Location points, made absolute
  std::map<std::string, std::string> headers;  // lower-case names; the last of each

  std::string header(const std::string& lower_name) const;
  static constexpr std::size_t kMaxBody = 4 << 20;  // distribution's own manifest limit
};

// A request that got no answer: name resolution, connect, TLS, or a body cut off. `transient`
// ones (resets, truncated bodies, a stall under the low-speed limit) are worth a retry; a
// request past its deadline is not.
class HttpTransportError : public Error {
 public:
  HttpTransportError(std::string message, bool transient)
      : Error(Error::invalid(std::move(message))), transient_(transient) {}
  bool transient() const { return transient_; }

 private:
  bool transient_;
};

class HttpClient {
 public:
  HttpClient();
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  HttpResponse send(const HttpRequest& request);

 private:
  struct Handle;
  std::unique_ptr<Handle> handle_;
};

// "scheme://host[:port]" of a URL, lower-case: whether a redirect leaves the registry.
std::string url_origin(const std::string& url);
// A Location value (absolute, or relative to base) made absolute.
std::string resolve_url(const std::string& base, const std::string& location);
std::string url_escape(std::string_view text);

}  // namespace sandcell::rootfs_builder
