#pragma once
// A conversation with one registry for one set of scopes: which scheme it speaks, how it wants
// credentials (none, Basic, or Bearer tokens from its token service), and the request loop
// around each exchange: credentials, token refresh on 401, redirects, retries. Safe to use
// from several threads, each with its own HttpClient.
#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "auth_challenge.hpp"
#include "http_client.hpp"
#include "sandcell/rootfs_builder/registry.hpp"

namespace sandcell::rootfs_builder {

class RegistrySession {
 public:
  // scopes: token scopes, e.g. "repository:library/alpine:pull". Pings /v2/ (over https, or
  // http where the registry is insecure) to learn the scheme and the challenge.
  RegistrySession(std::string registry, const std::string& api_host, const RegistryOptions& options,
                  std::vector<std::string> scopes);

  const std::string& registry() const { return registry_; }
  std::string url(const std::string& path) const { return base_ + path; }
  // When the whole pull or push (RegistryOptions::timeout) must be over; max() when unbounded.
  std::chrono::steady_clock::time_point deadline() const { return deadline_; }

  // Credentials go only to the registry's own origin (and to its token realm), never along a
  // redirect to another host. A request with a sink is not retried once its body has started:
  // the caller resumes it (Range).
  HttpResponse send(HttpClient& client, HttpRequest request);

  // Fetches a token now (Bearer) or checks Basic credentials on /v2/: login.
  void authenticate(HttpClient& client);

 private:
  HttpResponse send_once(HttpClient& client, HttpRequest& request, bool& reauthenticated);
  HttpResponse exchange(HttpClient& client, const HttpRequest& request);
  std::string authorization(HttpClient& client);
  void fetch_token(HttpClient& client);
  bool challenge_from(const HttpResponse& response);

  std::string registry_;
  std::string base_;  // "https://host:port"
  std::string origin_;
  bool tls_verify_ = true;
  std::chrono::steady_clock::time_point deadline_ = std::chrono::steady_clock::time_point::max();
  std::optional<RegistryCredentials> credentials_;
  std::vector<std::string> scopes_;

  std::mutex mutex_;  // guards what follows
  std::optional<AuthChallenge> challenge_;
  std::string token_;
  std::chrono::steady_clock::time_point token_expiry_;
};

// Sleeps before retry number `attempt` (0, 1, ...): 200 ms, doubling.
void retry_pause(int attempt);

// One line for a registry's error answer: "<what>: 404 MANIFEST_UNKNOWN manifest unknown".
[[noreturn]] void throw_registry_error(const std::string& what, const HttpResponse& response);

}  // namespace sandcell::rootfs_builder
