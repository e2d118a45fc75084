#pragma once
// Real registry parts for the registry tests, all on loopback and all stopped by their
// destructors: Debian's docker-registry (distribution 2.8) with a temp config and storage, a
// token service issuing RS256 JWTs the registry verifies, and a proxy that tampers with what
// the registry sends.
#include <httplib.h>
#include <sys/types.h>

#include <atomic>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace sandcell::test {

// A cpp-httplib server on 127.0.0.1 (or `host`), an ephemeral port, a thread of its own.
class LoopbackServer {
 public:
  explicit LoopbackServer(const std::string& host = "127.0.0.1");
  ~LoopbackServer();
  void start();  // after the handlers are set
  httplib::Server& http() { return server_; }
  std::string address() const { return host_ + ":" + std::to_string(port_); }

 private:
  httplib::Server server_;
  std::string host_;
  int port_ = 0;
  std::thread thread_;
};

struct TokenAuthConfig {
  std::string realm, service, issuer, cert_path;
};

// docker-registry serve, storage and config in `dir`; waits until it answers.
class LocalRegistry {
 public:
  enum class Auth { None, Htpasswd, Token };
  // tls: serves https with a self-signed certificate made with openssl (in no CA store).
  LocalRegistry(const std::filesystem::path& dir, Auth auth, const TokenAuthConfig& token = {}, bool tls = false);
  ~LocalRegistry();
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  std::string log() const;  // what it printed: for failure messages
  static constexpr const char* kUser = "tester";
  static constexpr const char* kPassword = "s3cret-pass";

 private:
  std::filesystem::path dir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

// GET /token: Basic-authenticated (LocalRegistry's user), grants what each scope asks.
class TokenServer {
 public:
  explicit TokenServer(const std::filesystem::path& dir);
  TokenAuthConfig config() const;
  std::vector<std::string> scopes_seen();
  int tokens_issued() const { return issued_; }
  std::atomic<bool> next_token_expired{false};  // the registry rejects it: the client must refresh

 private:
  std::string sign(const std::string& claims) const;
  std::string cert_path_, key_pem_, cert_der_b64_;
  std::mutex mutex_;
  std::vector<std::string> scopes_;
  std::atomic<int> issued_{0};
  LoopbackServer server_;
};

// Forwards GET and HEAD to the registry, changing answers as `mode` says.
class TamperingProxy {
 public:
  enum class Mode { PassThrough, CorruptBlob, TruncateBlob, OversizeBlob, CorruptManifest, RedirectLoop,
                    FlakyBlob, DenyManifest, RedirectBlobElsewhere, CutBlobOnce, TrickleManifest, TrickleBlob,
              PauseBlobHalfway };
  TamperingProxy(const std::string& upstream, Mode mode);
  std::string address() const { return server_.address(); }
  std::string blob_host_address() const { return blob_host_.address(); }
  // Authorization headers the other host (RedirectBlobElsewhere) received: must stay empty.
  std::vector<std::string> credentials_seen_elsewhere();
  int blob_failures_sent() const { return failures_; }
  int range_requests() const { return ranges_; }
  // PauseBlobHalfway: a layer's first half is sent, then the answer waits (at most 60 s) until
  // release(); halfway() counts the layers waiting so.
  int halfway() const { return halfway_; }
  void release() { released_ = true; }

 private:
  void forward(const httplib::Request& req, httplib::Response& res);
  std::string upstream_;
  Mode mode_;
  std::atomic<int> failures_{0};
  std::atomic<int> ranges_{0};
  std::atomic<int> halfway_{0};
  std::atomic<bool> released_{false};
  std::mutex mutex_;
  std::vector<std::string> elsewhere_auth_;
  LoopbackServer server_;
  LoopbackServer blob_host_{"127.0.0.2"};
};

}  // namespace sandcell::test
