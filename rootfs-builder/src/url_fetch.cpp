#include "url_fetch.hpp"

#include <curl/curl.h>

#include <cstdio>
#include <memory>

#include "sandcell/base/error.hpp"
#include "sandcell/base/loaded_libs.hpp"
#include "sandcell/rootfs_builder/digest.hpp"

namespace sandcell::rootfs_builder {
namespace {

// ADD <URL> bounds: what a hostile or broken server can make the build hold or wait for.
constexpr curl_off_t kMaxAddBytes = curl_off_t{2} << 30;  // 2 GiB
constexpr long kMaxAddRedirects = 5;
constexpr long kMaxAddSeconds = 30 * 60;

struct AddDownload {
  FILE* file = nullptr;
  curl_off_t written = 0;
};

// Returning less than asked makes curl stop with CURLE_WRITE_ERROR: a body past the cap ends
// the download whatever Content-Length said.
size_t write_to_file(char* data, size_t size, size_t count, void* target) {
  auto* download = static_cast<AddDownload*>(target);
  size_t bytes = size * count;
  if (download->written + static_cast<curl_off_t>(bytes) > kMaxAddBytes) return 0;
  download->written += static_cast<curl_off_t>(bytes);
  return fwrite(data, 1, bytes, download->file);
}

}  // namespace

bool is_url(const std::string& source) {
  return source.rfind("http://", 0) == 0 || source.rfind("https://", 0) == 0;
}

std::string url_file_name(const std::string& url) {
  std::string path = url.substr(0, url.find_first_of("?#"));
  auto slash = path.find_last_of('/');
  std::string name = slash == std::string::npos ? "" : path.substr(slash + 1);
  // The name becomes a file name in the image: never "." or "..".
  bool usable = name != "." && name != ".." && !name.empty();
  return !usable || path.find('/', path.find("//") + 2) == std::string::npos ? "download" : name;
}

void fetch_url(const std::string& url, const std::string& path, const std::string& expected_digest) {
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(libcurl().easy_init(),
                                                           libcurl().easy_cleanup);
  std::unique_ptr<FILE, decltype(&fclose)> file(fopen(path.c_str(), "wbe"), fclose);
  if (!curl || !file) throw Error(errno ? errno : ENOMEM, "prepare download of " + url);
  libcurl().easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
  libcurl().easy_setopt(curl.get(), CURLOPT_FOLLOWLOCATION, 1L);
  libcurl().easy_setopt(curl.get(), CURLOPT_MAXREDIRS, kMaxAddRedirects);
  libcurl().easy_setopt(curl.get(), CURLOPT_MAXFILESIZE_LARGE, kMaxAddBytes);
  libcurl().easy_setopt(curl.get(), CURLOPT_TIMEOUT, kMaxAddSeconds);
  libcurl().easy_setopt(curl.get(), CURLOPT_LOW_SPEED_LIMIT, 1024L);  // a trickle is a stall
  libcurl().easy_setopt(curl.get(), CURLOPT_LOW_SPEED_TIME, 60L);
  libcurl().easy_setopt(curl.get(), CURLOPT_PROTOCOLS_STR, "http,https");
  libcurl().easy_setopt(curl.get(), CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  libcurl().easy_setopt(curl.get(), CURLOPT_FAILONERROR, 1L);
  libcurl().easy_setopt(curl.get(), CURLOPT_CONNECTTIMEOUT, 30L);
  libcurl().easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, write_to_file);
  AddDownload download{.file = file.get(), .written = 0};
  libcurl().easy_setopt(curl.get(), CURLOPT_WRITEDATA, &download);
  CURLcode rc = libcurl().easy_perform(curl.get());
  if (fflush(file.get()) != 0 || rc != CURLE_OK)
    throw Error::invalid("ADD " + url + ": download failed: " + libcurl().easy_strerror(rc) +
                         (download.written >= kMaxAddBytes ? " (larger than 2 GiB)" : ""));
  if (!expected_digest.empty() && sha256_file_digest(path) != expected_digest)
    throw Error::invalid("ADD " + url + ": checksum mismatch (expected " + expected_digest + ")");
}

}  // namespace sandcell::rootfs_builder
