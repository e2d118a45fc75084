// libcurl easy interface, one handle per client (connection reuse across requests). Headers
// come from curl_easy_nextheader, URLs are parsed and joined with the CURLU API: nothing here
// parses HTTP by hand.
#include "http_client.hpp"

#include <curl/curl.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <exception>

#include "../unique_fd.hpp"
#include "sandcell/base/loaded_libs.hpp"

namespace sandcell::rootfs_builder {
namespace {

struct Transfer {
  const HttpRequest& request;
  CURL* curl;
  HttpResponse response;
  std::exception_ptr error;
  int body_fd = -1;
  std::int64_t sent = 0;
};

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  size_t n = size * count;
  long status = 0;
  libcurl().easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &status);
  try {
    if (t->request.sink && status >= 200 && status < 300) {
      t->request.sink(status, std::string_view(data, n));
    } else {
      if (t->response.body.size() + n > HttpResponse::kMaxBody)
        throw Error::invalid(t->request.method + " " + t->request.url + ": answer larger than " +
                             std::to_string(HttpResponse::kMaxBody) + " bytes");
      t->response.body.append(data, n);
    }
  } catch (...) {
    t->error = std::current_exception();
    return 0;  // aborts the transfer (CURLE_WRITE_ERROR)
  }
  return n;
}

size_t on_upload(char* buffer, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const HttpRequest& r = t->request;
  std::int64_t total = r.body_file.empty() ? static_cast<std::int64_t>(r.body.size()) : r.body_length;
  auto n = static_cast<std::int64_t>(std::min<std::size_t>(size * count, static_cast<std::size_t>(total - t->sent)));
  if (r.body_file.empty()) {
    std::copy_n(r.body.data() + t->sent, n, buffer);
  } else {
    ssize_t got = ::pread(t->body_fd, buffer, static_cast<std::size_t>(n), r.body_offset + t->sent);
    if (got < 0) return CURL_READFUNC_ABORT;
    n = got;
  }
  t->sent += n;
  return static_cast<size_t>(n);
}

void collect_headers(Transfer& t) {
  curl_header* prev = nullptr;
  while (curl_header* h = libcurl().easy_nextheader(t.curl, CURLH_HEADER, -1, prev)) {
    std::string name = h->name;
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    t.response.headers[name] = h->value;
    prev = h;
  }
}

bool is_transient(CURLcode rc) {
  switch (rc) {
    case CURLE_OPERATION_TIMEDOUT: case CURLE_PARTIAL_FILE: case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR: case CURLE_GOT_NOTHING: case CURLE_HTTP2: case CURLE_HTTP2_STREAM:
      return true;
    default:
      return false;
  }
}

void set_body(Transfer& t, UniqueFd& file) {
  const HttpRequest& r = t.request;
  CURL* c = t.curl;
  bool has_body = !r.body.empty() || !r.body_file.empty();
  if (r.method == "HEAD") libcurl().easy_setopt(c, CURLOPT_NOBODY, 1L);
  if (r.method == "POST" && !has_body) {
    libcurl().easy_setopt(c, CURLOPT_POST, 1L);
    libcurl().easy_setopt(c, CURLOPT_POSTFIELDSIZE, 0L);
  } else if (r.method == "PUT" || r.method == "PATCH" || (r.method == "POST" && has_body)) {
    if (!r.body_file.empty()) {
      file = UniqueFd(::open(r.body_file.c_str(), O_RDONLY | O_CLOEXEC));
      if (!file) throw Error(errno, "open " + r.body_file);
      t.body_fd = file.get();
    }
    std::int64_t size = r.body_file.empty() ? static_cast<std::int64_t>(r.body.size()) : r.body_length;
    libcurl().easy_setopt(c, CURLOPT_UPLOAD, 1L);
    libcurl().easy_setopt(c, CURLOPT_READFUNCTION, on_upload);
    libcurl().easy_setopt(c, CURLOPT_READDATA, &t);
    libcurl().easy_setopt(c, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(size));
  }
  if (r.method != "GET" && r.method != "HEAD")
    libcurl().easy_setopt(c, CURLOPT_CUSTOMREQUEST, r.method.c_str());
}

// A registry that trickles bytes must not hold a pull forever: under kLowSpeedBytes per second
// for kLowSpeedSeconds is a stall (retried), and every request has a deadline (not retried).
constexpr long kLowSpeedBytes = 1024;
constexpr long kLowSpeedSeconds = 60;

std::chrono::milliseconds time_left(const HttpRequest& request, const std::string& what) {
  if (request.deadline == std::chrono::steady_clock::time_point::max()) return std::chrono::milliseconds::zero();
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(request.deadline - std::chrono::steady_clock::now());
  if (left.count() <= 0) throw HttpTransportError(what + ": stalled, its deadline passed before it was sent", false);
  return left;
}

[[noreturn]] void throw_transport_error(const HttpRequest& request, const std::string& what, CURLcode rc) {
  if (rc == CURLE_OPERATION_TIMEDOUT && std::chrono::steady_clock::now() >= request.deadline)
    throw HttpTransportError(what + ": stalled, not done by its deadline (" + libcurl().easy_strerror(rc) + ")", false);
  if (rc == CURLE_OPERATION_TIMEDOUT)
    throw HttpTransportError(what + ": stalled, under " + std::to_string(kLowSpeedBytes) + " bytes/s for " +
                                 std::to_string(kLowSpeedSeconds) + " s (" + libcurl().easy_strerror(rc) + ")",
                             true);
  throw HttpTransportError(what + ": " + libcurl().easy_strerror(rc), is_transient(rc));
}

}  // namespace

struct HttpClient::Handle {
  CURL* curl = libcurl().easy_init();
  ~Handle() { libcurl().easy_cleanup(curl); }
};

HttpClient::HttpClient() : handle_(std::make_unique<Handle>()) {
  if (handle_->curl == nullptr) throw Error(ENOMEM, "curl_easy_init");
}
HttpClient::~HttpClient() = default;

std::string HttpResponse::header(const std::string& lower_name) const {
  auto it = headers.find(lower_name);
  return it == headers.end() ? "" : it->second;
}

HttpResponse HttpClient::send(const HttpRequest& request) {
  CURL* c = handle_->curl;
  libcurl().easy_reset(c);  // keeps the connection cache
  Transfer t{.request = request, .curl = c, .response = {}, .error = nullptr};
  curl_slist* headers = nullptr;
  for (const auto& h : request.headers) headers = libcurl().slist_append(headers, h.c_str());
  headers =
      libcurl().slist_append(headers, "Expect:");  // no 100-continue round trip before uploads
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> header_list(headers,
                                                                          libcurl().slist_free_all);
  UniqueFd file;
  libcurl().easy_setopt(c, CURLOPT_URL, request.url.c_str());
  libcurl().easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  libcurl().easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  libcurl().easy_setopt(c, CURLOPT_USERAGENT, "sandcell");
  libcurl().easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 30L);
  std::string what = request.method + " " + request.url;
  // A stalled server is a timeout (retried), not a hang; a trickle faster than that still ends
  // at the request's deadline.
  libcurl().easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, kLowSpeedBytes);
  libcurl().easy_setopt(c, CURLOPT_LOW_SPEED_TIME, kLowSpeedSeconds);
  if (auto left = time_left(request, what); left.count() > 0)
    libcurl().easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(left.count()));
  libcurl().easy_setopt(c, CURLOPT_SSL_VERIFYPEER, request.tls_verify ? 1L : 0L);
  libcurl().easy_setopt(c, CURLOPT_SSL_VERIFYHOST, request.tls_verify ? 2L : 0L);
  libcurl().easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  libcurl().easy_setopt(c, CURLOPT_WRITEDATA, &t);
  set_body(t, file);
  CURLcode rc = libcurl().easy_perform(c);
  if (t.error) std::rethrow_exception(t.error);
  if (rc != CURLE_OK) throw_transport_error(request, what, rc);
  libcurl().easy_getinfo(c, CURLINFO_RESPONSE_CODE, &t.response.status);
  if (char* location = nullptr;
      libcurl().easy_getinfo(c, CURLINFO_REDIRECT_URL, &location) == CURLE_OK && location)
    t.response.redirect_url = location;
  collect_headers(t);
  return std::move(t.response);
}

std::string url_origin(const std::string& url) {
  std::unique_ptr<CURLU, decltype(&curl_url_cleanup)> u(libcurl().url(), libcurl().url_cleanup);
  if (libcurl().url_set(u.get(), CURLUPART_URL, url.c_str(), 0) != CURLUE_OK) return {};
  char *scheme = nullptr, *host = nullptr, *port = nullptr;
  libcurl().url_get(u.get(), CURLUPART_SCHEME, &scheme, 0);
  libcurl().url_get(u.get(), CURLUPART_HOST, &host, 0);
  libcurl().url_get(u.get(), CURLUPART_PORT, &port, CURLU_DEFAULT_PORT);
  std::string origin = std::string(scheme ? scheme : "") + "://" + (host ? host : "") + ":" + (port ? port : "");
  libcurl().free(scheme), libcurl().free(host), libcurl().free(port);
  std::transform(origin.begin(), origin.end(), origin.begin(), [](unsigned char ch) { return std::tolower(ch); });
  return origin;
}

std::string resolve_url(const std::string& base, const std::string& location) {
  std::unique_ptr<CURLU, decltype(&curl_url_cleanup)> u(libcurl().url(), libcurl().url_cleanup);
  char* out = nullptr;
  if (libcurl().url_set(u.get(), CURLUPART_URL, base.c_str(), 0) != CURLUE_OK ||
      libcurl().url_set(u.get(), CURLUPART_URL, location.c_str(), 0) != CURLUE_OK ||
      libcurl().url_get(u.get(), CURLUPART_URL, &out, 0) != CURLUE_OK)
    throw Error::invalid("invalid location " + location + " (from " + base + ")");
  std::string result = out;
  libcurl().free(out);
  return result;
}

std::string url_escape(std::string_view text) {
  char* escaped = libcurl().easy_escape(nullptr, text.data(), static_cast<int>(text.size()));
  std::string out = escaped ? escaped : "";
  libcurl().free(escaped);
  return out;
}

}  // namespace sandcell::rootfs_builder
