// One proxy request, parsed by http_parser (never by hand). The parser is paused when the head is
// complete, so the proxy decides before a single body byte is read, and again when the message is
// complete, so bytes after it (a tunnel's first TLS record, a pipelined request) stay unparsed.
#include "proxy_request.hpp"

#include <algorithm>
#include <array>
#include <climits>
#include <cstdio>
#include <string_view>

#include "dynamic_libs.hpp"

namespace sandcell::network {
namespace {

RequestParser& self(http_parser* p) {
  return *static_cast<RequestParser*>(p->data);
}

bool iequals(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](char x, char y) { return std::tolower(x) == std::tolower(y); });
}

// Hop-by-hop and framing headers the proxy sets itself for the upstream.
bool dropped_header(std::string_view name) {
  static constexpr std::array<std::string_view, 11> names = {
      "host",   "connection", "proxy-connection",   "keep-alive",        "proxy-authorization",
      "te",     "trailer",    "proxy-authenticate", "transfer-encoding", "content-length",
      "upgrade"};
  return std::any_of(names.begin(), names.end(), [&](auto n) { return iequals(n, name); });
}

std::string_view url_field(const std::string& url, const http_parser_url& u, int field) {
  if (!(u.field_set & (1 << field))) return {};
  return std::string_view(url).substr(u.field_data[field].off, u.field_data[field].len);
}

}  // namespace

RequestParser::RequestParser(size_t max_header_bytes) : max_header_bytes_(max_header_bytes) {
  http().parser_init(&parser_, HTTP_REQUEST);
  parser_.data = this;
  http().parser_settings_init(&settings_);
  settings_.on_url = on_url;
  settings_.on_header_field = on_header_field;
  settings_.on_header_value = on_header_value;
  settings_.on_headers_complete = on_headers_complete;
  settings_.on_body = on_body;
  settings_.on_message_complete = on_message_complete;
}

void RequestParser::fail(int status, std::string reason) {
  if (!error_) error_ = RequestError{.status = status, .reason = std::move(reason)};
}

size_t RequestParser::feed_head(const char* data, size_t size) {
  const size_t n = http().parser_execute(&parser_, &settings_, data, size);
  header_bytes_ += n;
  if (header_bytes_ > max_header_bytes_) {
    fail(431, "request header too large");
  } else if (head_complete_) {
    http().parser_pause(&parser_, 0);
    finish_head();
  } else if (HTTP_PARSER_ERRNO(&parser_) != HPE_OK) {
    fail(400, std::string("malformed request: ") +
                  http().errno_description(HTTP_PARSER_ERRNO(&parser_)));
  }
  return n;
}

void RequestParser::finish_head() {
  RequestHead head;
  head.connect = parser_.method == HTTP_CONNECT;
  head.method = http().method_str(static_cast<http_method>(parser_.method));
  head.headers = headers_;
  http_parser_url u{};
  http().parser_url_init(&u);
  // http_parser refuses "user@host:443" as a CONNECT target; name the reason for the log.
  if (head.connect && url_.find('@') != std::string::npos) {
    return fail(403, "userinfo in request target");
  }
  if (http().parser_parse_url(url_.data(), url_.size(), head.connect ? 1 : 0, &u) != 0) {
    return fail(400, head.connect ? "malformed CONNECT target" : "malformed request target");
  }
  if (u.field_set & (1 << UF_USERINFO)) return fail(403, "userinfo in request target");
  if (!head.connect && !iequals(url_field(url_, u, UF_SCHEMA), "http")) {
    return fail(400, "not a proxy request (CONNECT host:port or GET http://host/...)");
  }
  head.host = url_field(url_, u, UF_HOST);
  head.port = (u.field_set & (1 << UF_PORT)) ? u.port : 80;
  if (head.host.empty() || head.port == 0) return fail(400, "malformed request target");
  const auto path = url_field(url_, u, UF_PATH);
  const auto query = url_field(url_, u, UF_QUERY);
  head.origin_form = path.empty() ? "/" : std::string(path);
  if (u.field_set & (1 << UF_QUERY)) head.origin_form += "?" + std::string(query);
  head.chunked = (parser_.flags & F_CHUNKED) != 0;
  if (!head.chunked && parser_.content_length != ULLONG_MAX) {
    head.content_length = parser_.content_length;
  }
  head_ = std::move(head);
}

size_t RequestParser::feed_body(const char* data, size_t size,
                                const std::function<bool(std::string_view)>& sink) {
  if (complete_) return 0;
  sink_ = &sink;
  const size_t n = http().parser_execute(&parser_, &settings_, data, size);
  sink_ = nullptr;
  if (!complete_ && HTTP_PARSER_ERRNO(&parser_) != HPE_OK) {
    fail(400, sink_failed_ ? "upstream write failed"
                           : std::string("malformed request body: ") +
                                 http().errno_description(HTTP_PARSER_ERRNO(&parser_)));
  }
  return n;
}

std::string RequestParser::upstream_head(const std::string& host_header) const {
  std::string out =
      head_->method + " " + head_->origin_form + " HTTP/1.1\r\nHost: " + host_header + "\r\n";
  for (const auto& [name, value] : head_->headers) {
    if (!dropped_header(name)) out += name + ": " + value + "\r\n";
  }
  if (head_->chunked) out += "Transfer-Encoding: chunked\r\n";
  if (head_->content_length)
    out += "Content-Length: " + std::to_string(*head_->content_length) + "\r\n";
  return out + "Connection: close\r\n\r\n";
}

int RequestParser::on_url(http_parser* p, const char* at, size_t length) {
  self(p).url_.append(at, length);
  return 0;
}

int RequestParser::on_header_field(http_parser* p, const char* at, size_t length) {
  auto& r = self(p);
  if (r.in_value_ || r.headers_.empty()) r.headers_.emplace_back();
  r.in_value_ = false;
  r.headers_.back().first.append(at, length);
  return 0;
}

int RequestParser::on_header_value(http_parser* p, const char* at, size_t length) {
  auto& r = self(p);
  r.in_value_ = true;
  r.headers_.back().second.append(at, length);
  return 0;
}

int RequestParser::on_headers_complete(http_parser* p) {
  self(p).head_complete_ = true;
  http().parser_pause(p, 1);
  return 0;
}

int RequestParser::on_body(http_parser* p, const char* at, size_t length) {
  auto& r = self(p);
  std::string_view data(at, length);
  bool ok = true;
  if (r.sink_ == nullptr) return -1;
  if (r.head_ && r.head_->chunked) {
    char size_line[32];
    std::snprintf(size_line, sizeof size_line, "%zx\r\n", length);
    ok = (*r.sink_)(size_line) && (*r.sink_)(data) && (*r.sink_)("\r\n");
  } else {
    ok = (*r.sink_)(data);
  }
  r.sink_failed_ = !ok;
  return ok ? 0 : -1;
}

int RequestParser::on_message_complete(http_parser* p) {
  auto& r = self(p);
  if (r.head_ && r.head_->chunked && r.sink_ && !(*r.sink_)("0\r\n\r\n")) {
    r.sink_failed_ = true;
    return -1;
  }
  r.complete_ = true;
  http().parser_pause(p, 1);
  return 0;
}

}  // namespace sandcell::network
