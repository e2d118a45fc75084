// The request loop of the distribution spec's client side, with docker's rules for plain HTTP:
// loopback registries and those listed insecure are tried over https without verification,
// then over http.
#include "registry_session.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <thread>

#include "base64.hpp"
#include "sandcell/base/bounded_json.hpp"
#include "sandcell/base/loaded_libs.hpp"
#include "sandcell/rootfs_builder/registry_reference.hpp"

namespace sandcell::rootfs_builder {
namespace {

constexpr int kMaxRedirects = 10;
constexpr int kMaxAttempts = 4;

bool is_loopback(const std::string& registry) {
  std::string host = registry;
  if (host.starts_with("[")) host = host.substr(1, host.find(']') - 1);
  else if (auto colon = host.rfind(':'); colon != std::string::npos) host.resize(colon);
  return host == "localhost" || host == "::1" || host.starts_with("127.");
}

bool insecure_allowed(const std::string& registry, const RegistryOptions& options) {
  if (options.tls_verify) return !*options.tls_verify;  // --tls-verify=true verifies loopback too
  if (is_loopback(registry)) return true;
  auto list = insecure_registries();
  return std::find(list.begin(), list.end(), registry) != list.end();
}

bool retryable_status(long status) { return status == 429 || (status >= 500 && status <= 504); }

// A manifest, token or HEAD is at most HttpResponse::kMaxBody (4 MiB): two minutes are ample.
// Blob bodies (a sink) and uploads set their own deadline, proportional to their size.
constexpr std::chrono::seconds kSmallRequestSeconds{120};

HttpRequest bounded(const HttpRequest& request, std::chrono::steady_clock::time_point overall) {
  HttpRequest out = request;
  bool small = !request.sink && request.body_file.empty();
  if (small) out.deadline = std::min(out.deadline, std::chrono::steady_clock::now() + kSmallRequestSeconds);
  out.deadline = std::min(out.deadline, overall);
  return out;
}

}  // namespace

void retry_pause(int attempt) { std::this_thread::sleep_for(std::chrono::milliseconds(200 << attempt)); }

void throw_registry_error(const std::string& what, const HttpResponse& response) {
  std::string detail;
  auto body = parse_bounded_json_or_discarded(response.body);
  if (body.is_object() && body.contains("errors") && body["errors"].is_array() && !body["errors"].empty()) {
    const auto& first = body["errors"][0];
    if (first.is_object()) detail = " " + first.value("code", "") + " " + first.value("message", "");
  }
  std::string hint;
  if (response.status == 401) hint = " (authentication required or refused: sandcell login)";
  if (response.status == 403) hint = " (access denied)";
  throw Error::invalid(what + ": " + std::to_string(response.status) + detail + hint);
}

RegistrySession::RegistrySession(std::string registry, const std::string& api_host,
                                 const RegistryOptions& options, std::vector<std::string> scopes)
    : registry_(std::move(registry)), scopes_(std::move(scopes)) {
  if (options.timeout.count() > 0) deadline_ = std::chrono::steady_clock::now() + options.timeout;
  libcurl().global_init(CURL_GLOBAL_DEFAULT);  // before any worker thread makes a handle
  credentials_ = options.credentials;
  if (!credentials_ && options.stored_credentials) credentials_ = find_credentials(registry_);
  bool insecure = insecure_allowed(registry_, options);
  tls_verify_ = !insecure;
  HttpClient client;
  for (std::string scheme : {"https://", "http://"}) {
    base_ = scheme + api_host;
    try {
      HttpResponse ping = exchange(client, {.url = url("/v2/"), .tls_verify = tls_verify_});
      if (ping.status == 401) challenge_from(ping);
      else if (ping.status != 200)
        throw Error::invalid(registry_ + " is no registry: GET " + url("/v2/") + " answered " +
                             std::to_string(ping.status));
      origin_ = url_origin(base_);
      return;
    } catch (const HttpTransportError& e) {
      if (!insecure || scheme == "http://")
        throw Error::invalid("cannot reach registry " + registry_ + ": " + e.what());
    }
  }
}

bool RegistrySession::challenge_from(const HttpResponse& response) {
  auto challenge = parse_auth_challenge(response.header("www-authenticate"));
  if (!challenge || (challenge->scheme != "bearer" && challenge->scheme != "basic")) return false;
  std::lock_guard lock(mutex_);
  challenge_ = challenge;
  return true;
}

HttpResponse RegistrySession::exchange(HttpClient& client, const HttpRequest& given) {
  const HttpRequest request = bounded(given, deadline_);  // one deadline for all the attempts
  for (int attempt = 0;; ++attempt) {
    try {
      HttpResponse response = client.send(request);
      if (!retryable_status(response.status) || attempt + 1 >= kMaxAttempts) return response;
    } catch (const HttpTransportError& e) {
      if (!e.transient() || request.sink || attempt + 1 >= kMaxAttempts) throw;
    }
    retry_pause(attempt);
  }
}

void RegistrySession::fetch_token(HttpClient& client) {
  std::string realm = challenge_->param("realm");
  if (realm.empty()) throw Error::invalid(registry_ + ": Bearer challenge without a realm");
  std::string query = "service=" + url_escape(challenge_->param("service"));
  for (const auto& scope : scopes_) query += "&scope=" + url_escape(scope);
  HttpRequest request{.url = realm + (realm.find('?') == std::string::npos ? "?" : "&") + query,
                      .tls_verify = tls_verify_ || url_origin(realm) != origin_};
  if (credentials_)
    request.headers.push_back("Authorization: Basic " +
                              base64_encode(credentials_->username + ":" + credentials_->password));
  HttpResponse response = exchange(client, request);
  if (response.status != 200) throw_registry_error(registry_ + ": token service " + realm, response);
  // The token service is outside input: members of the wrong type are ignored, never a
  // type_error (json::value) or an undefined float-to-int conversion (get<int> of 1e300).
  auto body = parse_bounded_json_or_discarded(response.body);
  auto member = [&](const char* key) { return body.is_object() ? body.value(key, nlohmann::json()) : nlohmann::json(); };
  nlohmann::json token = member("token").is_string() ? member("token") : member("access_token");
  if (!token.is_string() || token.get<std::string>().empty())
    throw Error::invalid(registry_ + ": token service " + realm + " gave no token");
  // The spec's default lifetime is 60 s; refresh 10 s early so a token never lapses mid-request.
  // At most a day, so the expiry time cannot overflow.
  int64_t lifetime = member("expires_in").is_number_integer() ? member("expires_in").get<int64_t>() : 60;
  token_ = token.get<std::string>();
  token_expiry_ = std::chrono::steady_clock::now() + std::chrono::seconds(std::clamp<int64_t>(lifetime, 60, 86400) - 10);
}

std::string RegistrySession::authorization(HttpClient& client) {
  std::lock_guard lock(mutex_);
  if (!challenge_) return "";
  if (challenge_->scheme == "basic") {
    if (!credentials_) return "";
    return "Authorization: Basic " + base64_encode(credentials_->username + ":" + credentials_->password);
  }
  if (token_.empty() || std::chrono::steady_clock::now() >= token_expiry_) fetch_token(client);
  return "Authorization: Bearer " + token_;
}

HttpResponse RegistrySession::send(HttpClient& client, HttpRequest request) {
  bool reauthenticated = false;
  std::vector<std::string> own_headers = request.headers;
  for (int hop = 0; hop <= kMaxRedirects; ++hop) {
    request.headers = own_headers;
    HttpResponse response = send_once(client, request, reauthenticated);
    if (response.status / 100 != 3 || response.redirect_url.empty()) return response;
    if (request.method != "GET" && request.method != "HEAD") return response;
    request.url = response.redirect_url;
  }
  throw Error::invalid(request.method + " " + request.url + ": more than " +
                       std::to_string(kMaxRedirects) + " redirects (a redirect loop?)");
}

HttpResponse RegistrySession::send_once(HttpClient& client, HttpRequest& request, bool& reauthenticated) {
  request.tls_verify = tls_verify_ || url_origin(request.url) != origin_;
  bool own_origin = url_origin(request.url) == origin_;
  std::size_t plain_headers = request.headers.size();
  std::string sent = own_origin ? authorization(client) : "";
  if (!sent.empty()) request.headers.push_back(sent);
  HttpResponse response = exchange(client, request);
  if (response.status != 401 || !own_origin || reauthenticated) return response;
  // A token that expired or was revoked, or a first challenge on this path: once more with a
  // fresh token. Parallel requests refused with the same token fetch only one new one.
  reauthenticated = true;
  if (!challenge_from(response)) return response;
  {
    std::lock_guard lock(mutex_);
    if (sent == "Authorization: Bearer " + token_) token_.clear();
  }
  request.headers.resize(plain_headers);
  if (std::string auth = authorization(client); !auth.empty()) request.headers.push_back(auth);
  else return response;
  return exchange(client, request);
}

void RegistrySession::authenticate(HttpClient& client) {
  HttpResponse response = send(client, {.url = url("/v2/")});
  if (response.status != 200) throw_registry_error("login to " + registry_, response);
}

}  // namespace sandcell::rootfs_builder
