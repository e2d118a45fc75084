// The registry test parts. docker-registry is the real program; the token service signs with
// OpenSSL a JWT carrying its certificate (x5c), the form distribution verifies against the
// rootcertbundle of its config.
#include "registry_servers.hpp"

#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "temp_tree.hpp"

namespace sandcell::test {
namespace {

namespace fs = std::filesystem;

int free_loopback_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    throw std::runtime_error("no free loopback port");
  ::close(fd);
  return ntohs(addr.sin_port);
}

// Ready is listening: a TCP connect, which needs no TLS client for the https variant.
bool accepts_connections(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

std::string base64(const std::string& bytes, bool url) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  out.resize(static_cast<std::size_t>(EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                                      reinterpret_cast<const unsigned char*>(bytes.data()),
                                                      static_cast<int>(bytes.size()))));
  if (!url) return out;
  for (char& c : out) c = c == '+' ? '-' : c == '/' ? '_' : c;
  while (!out.empty() && out.back() == '=') out.pop_back();
  return out;
}

void run_or_throw(const std::string& command) {
  if (std::system(command.c_str()) != 0) throw std::runtime_error("failed: " + command);
}

std::string registry_config(const fs::path& dir, int port, LocalRegistry::Auth auth, const TokenAuthConfig& token,
                            bool tls) {
  std::string yaml = "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: " +
                     (dir / "storage").string() + "\n  delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:" +
                     std::to_string(port) + "\n  secret: sandcell-test\n";
  if (tls)
    yaml += "  tls:\n    certificate: " + (dir / "tls-cert.pem").string() + "\n    key: " + (dir / "tls-key.pem").string() + "\n";
  if (auth == LocalRegistry::Auth::Htpasswd)
    yaml += "auth:\n  htpasswd:\n    realm: sandcell-test\n    path: " + (dir / "htpasswd").string() + "\n";
  if (auth == LocalRegistry::Auth::Token)
    yaml += "auth:\n  token:\n    realm: " + token.realm + "\n    service: " + token.service + "\n    issuer: " +
            token.issuer + "\n    rootcertbundle: " + token.cert_path + "\n";
  return yaml;
}

}  // namespace

LoopbackServer::LoopbackServer(const std::string& host) : host_(host) {}

void LoopbackServer::start() {
  port_ = server_.bind_to_any_port(host_);
  if (port_ <= 0) throw std::runtime_error("cannot bind a test server on " + host_);
  thread_ = std::thread([this] { server_.listen_after_bind(); });
}

LoopbackServer::~LoopbackServer() {
  server_.stop();
  if (thread_.joinable()) thread_.join();
}

std::string LocalRegistry::log() const { return read_text(dir_ / "registry.log"); }

LocalRegistry::LocalRegistry(const fs::path& dir, Auth auth, const TokenAuthConfig& token, bool tls) : dir_(dir) {
  fs::create_directories(dir / "storage");
  if (tls)
    run_or_throw("openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 "
                 "-keyout " + (dir / "tls-key.pem").string() + " -out " + (dir / "tls-cert.pem").string() + " 2>/dev/null");
  if (auth == Auth::Htpasswd)
    run_or_throw("htpasswd -Bbn " + std::string(kUser) + " " + kPassword + " > " + (dir / "htpasswd").string());
  port_ = free_loopback_port();
  std::ofstream(dir / "config.yml") << registry_config(dir, port_, auth, token, tls);
  std::string config = (dir / "config.yml").string(), log = (dir / "registry.log").string();
  pid_ = ::fork();
  if (pid_ == 0) {
    FILE* out = std::freopen(log.c_str(), "w", stdout);
    if (out != nullptr) ::dup2(STDOUT_FILENO, STDERR_FILENO);
    ::execlp("docker-registry", "docker-registry", "serve", config.c_str(), nullptr);
    ::_exit(127);
  }
  for (int i = 0; i < 200; ++i) {
    if (accepts_connections(port_)) return;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("docker-registry exited: " + read_text(log));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  throw std::runtime_error("docker-registry did not answer on " + address());
}

LocalRegistry::~LocalRegistry() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  ::waitpid(pid_, nullptr, 0);
}

TokenServer::TokenServer(const fs::path& dir) {
  fs::create_directories(dir);
  cert_path_ = (dir / "token-cert.pem").string();
  std::string key_path = (dir / "token-key.pem").string();
  run_or_throw("openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=sandcell-test-token -keyout " +
               key_path + " -out " + cert_path_ + " 2>/dev/null");
  key_pem_ = read_text(key_path);
  std::string cert_pem = read_text(cert_path_);  // the BIO reads it in place
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new_mem_buf(cert_pem.data(), static_cast<int>(cert_pem.size())),
                                                BIO_free);
  std::unique_ptr<X509, decltype(&X509_free)> cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr), X509_free);
  unsigned char* der = nullptr;
  int der_len = i2d_X509(cert.get(), &der);
  cert_der_b64_ = base64(std::string(reinterpret_cast<char*>(der), static_cast<std::size_t>(der_len)), false);
  OPENSSL_free(der);

  server_.http().Get("/token", [this](const httplib::Request& req, httplib::Response& res) {
    std::string expected = "Basic " + base64(std::string(LocalRegistry::kUser) + ":" + LocalRegistry::kPassword, false);
    if (req.get_header_value("Authorization") != expected) {
      res.status = 401;
      return;
    }
    nlohmann::json access = nlohmann::json::array();
    for (std::size_t i = 0; i < req.get_param_value_count("scope"); ++i) {
      std::string scope = req.get_param_value("scope", i);
      {
        std::lock_guard lock(mutex_);
        scopes_.push_back(scope);
      }
      auto first = scope.find(':'), last = scope.rfind(':');
      nlohmann::json actions = nlohmann::json::array();
      for (std::size_t start = last + 1; start <= scope.size();) {
        auto comma = std::min(scope.find(',', start), scope.size());
        actions.push_back(scope.substr(start, comma - start));
        start = comma + 1;
      }
      access.push_back({{"type", scope.substr(0, first)}, {"name", scope.substr(first + 1, last - first - 1)},
                        {"actions", actions}});
    }
    long now = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    // distribution allows 60 s of clock skew: an hour in the past is expired for sure.
    bool expired = next_token_expired.exchange(false);
    ++issued_;
    long exp = expired ? now - 3600 : now + 300;
    nlohmann::json claims = {{"iss", "sandcell-test-issuer"}, {"sub", LocalRegistry::kUser},
                             {"aud", "sandcell-test-registry"}, {"exp", exp}, {"nbf", now - 7200},
                             {"iat", now - 7200}, {"jti", std::to_string(issued_.load())}, {"access", access}};
    res.set_content(nlohmann::json({{"token", sign(claims.dump())}, {"expires_in", 300}}).dump(), "application/json");
  });
  server_.start();
}

std::string TokenServer::sign(const std::string& claims) const {
  nlohmann::json header = {{"alg", "RS256"}, {"typ", "JWT"}, {"x5c", {cert_der_b64_}}};
  std::string input = base64(header.dump(), true) + "." + base64(claims, true);
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new_mem_buf(key_pem_.data(), -1), BIO_free);
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr),
                                                          EVP_PKEY_free);
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  std::size_t size = 0;
  if (!key || EVP_DigestSignInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key.get()) != 1 ||
      EVP_DigestSign(ctx.get(), nullptr, &size, reinterpret_cast<const unsigned char*>(input.data()), input.size()) != 1)
    throw std::runtime_error("cannot sign the test token");
  std::string signature(size, '\0');
  EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(signature.data()), &size,
                 reinterpret_cast<const unsigned char*>(input.data()), input.size());
  signature.resize(size);
  return input + "." + base64(signature, true);
}

TokenAuthConfig TokenServer::config() const {
  return {.realm = "http://" + server_.address() + "/token", .service = "sandcell-test-registry",
          .issuer = "sandcell-test-issuer", .cert_path = cert_path_};
}

std::vector<std::string> TokenServer::scopes_seen() {
  std::lock_guard lock(mutex_);
  return scopes_;
}

TamperingProxy::TamperingProxy(const std::string& upstream, Mode mode) : upstream_(upstream), mode_(mode) {
  auto handler = [this](const httplib::Request& req, httplib::Response& res) { forward(req, res); };
  server_.http().Get(".*", handler);  // cpp-httplib answers HEAD with the GET handler
  server_.start();
  // The "other host" a blob is redirected to: it serves the blob and notes any credentials.
  blob_host_.http().Get(".*", [this](const httplib::Request& req, httplib::Response& res) {
    {
      std::lock_guard lock(mutex_);
      if (req.has_header("Authorization")) elsewhere_auth_.push_back(req.get_header_value("Authorization"));
    }
    httplib::Client client("http://" + upstream_);
    client.set_basic_auth(LocalRegistry::kUser, LocalRegistry::kPassword);
    auto up = client.Get(req.path);
    res.status = up ? up->status : 502;
    if (up) res.set_content(up->body, "application/octet-stream");
  });
  blob_host_.start();
}

std::vector<std::string> TamperingProxy::credentials_seen_elsewhere() {
  std::lock_guard lock(mutex_);
  return elsewhere_auth_;
}

void TamperingProxy::forward(const httplib::Request& req, httplib::Response& res) {
  bool is_manifest = req.path.find("/manifests/") != std::string::npos;
  bool is_blob = req.path.find("/blobs/sha256:") != std::string::npos && req.method == "GET";
  if (is_manifest && mode_ == Mode::DenyManifest) {
    res.status = 403;
    res.set_content(R"({"errors":[{"code":"DENIED","message":"requested access to the resource is denied"}]})",
                    "application/json");
    return;
  }
  httplib::Client client("http://" + upstream_);
  httplib::Headers headers;
  // Range is not forwarded: cpp-httplib serves ranges of what the handler answers itself.
  for (const char* name : {"Authorization", "Accept"})
    if (req.has_header(name)) headers.emplace(name, req.get_header_value(name));
  if (req.has_header("Range")) ++ranges_;
  auto up = req.method == "HEAD" ? client.Head(req.path, headers) : client.Get(req.path, headers);
  if (!up) {
    res.status = 502;
    return;
  }
  std::string body = up->body;
  // Layers only: the config blob of the test images is far below 10 KiB.
  bool layer = is_blob && up->status == 200 && body.size() > 10 * 1024;
  if (layer && mode_ == Mode::RedirectLoop) {
    res.status = 302;
    res.set_header("Location", req.path);
    return;
  }
  if (layer && mode_ == Mode::RedirectBlobElsewhere) {
    res.status = 307;
    res.set_header("Location", "http://" + blob_host_.address() + req.path);
    return;
  }
  if (layer && mode_ == Mode::FlakyBlob && failures_ < 2) {
    ++failures_;
    res.status = 503;
    return;
  }
  if (layer && mode_ == Mode::CutBlobOnce && failures_ == 0) {
    ++failures_;
    // Announces the whole blob, sends half, then drops the connection.
    auto shared = std::make_shared<std::string>(std::move(body));
    res.set_content_provider(shared->size(), "application/octet-stream",
                             [shared](std::size_t offset, std::size_t, httplib::DataSink& sink) {
                               if (offset >= shared->size() / 2) return false;
                               sink.write(shared->data(), shared->size() / 2);
                               return true;
                             });
    return;
  }
  if (layer && mode_ == Mode::PauseBlobHalfway) {
    auto shared = std::make_shared<std::string>(std::move(body));
    res.set_content_provider(shared->size(), "application/octet-stream",
                             [shared, this](std::size_t offset, std::size_t, httplib::DataSink& sink) {
                               const std::size_t half = shared->size() / 2;
                               if (offset < half) return sink.write(shared->data() + offset, half - offset);
                               ++halfway_;
                               for (int i = 0; i < 600 && !released_; ++i)
                                 std::this_thread::sleep_for(std::chrono::milliseconds(100));
                               return sink.is_writable() &&
                                      sink.write(shared->data() + offset, shared->size() - offset);
                             });
    return;
  }
  if ((layer && mode_ == Mode::TrickleBlob) || (is_manifest && req.method == "GET" && mode_ == Mode::TrickleManifest)) {
    // One byte a second, the whole length announced: a registry that never quite stalls.
    auto shared = std::make_shared<std::string>(std::move(body));
    res.set_content_provider(shared->size(), up->get_header_value("Content-Type"),
                             [shared](std::size_t offset, std::size_t, httplib::DataSink& sink) {
                               std::this_thread::sleep_for(std::chrono::seconds(1));
                               return sink.is_writable() && sink.write(shared->data() + offset, 1);
                             });
    return;
  }
  if (layer && mode_ == Mode::CorruptBlob) body[body.size() / 2] ^= 1;
  if (layer && mode_ == Mode::TruncateBlob) body.resize(body.size() - 100);
  if (layer && mode_ == Mode::OversizeBlob) body += std::string(4096, 'x');
  if (is_manifest && mode_ == Mode::CorruptManifest) body += "\n";
  // Left unset for a 200, cpp-httplib answers a Range request with 206 and the range.
  if (up->status != 200) res.status = up->status;
  for (const char* name : {"Docker-Content-Digest", "WWW-Authenticate", "Location"})
    if (up->has_header(name)) res.set_header(name, up->get_header_value(name));
  res.set_content(body, up->get_header_value("Content-Type").empty() ? "application/octet-stream"
                                                                    : up->get_header_value("Content-Type"));
}

}  // namespace sandcell::test
