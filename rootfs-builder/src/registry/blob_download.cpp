#include "blob_download.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>

#include "../gzip_sink.hpp"
#include "../unique_fd.hpp"
#include "sandcell/rootfs_builder/digest.hpp"
#include "sandcell/rootfs_builder/layer_tar.hpp"

namespace sandcell::rootfs_builder {
namespace {

constexpr int kMaxAttempts = 5;

}  // namespace

std::chrono::seconds blob_time_limit(std::int64_t size) {
  // As slow as 64 KiB/s still arrives, with five minutes for any blob: a registry trickling
  // just above the low-speed limit cannot keep a pull going for the hours a large size allows.
  constexpr std::int64_t kFloorSeconds = 300, kMinBytesPerSecond = 64 << 10;
  return std::chrono::seconds(kFloorSeconds + std::max<std::int64_t>(size, 0) / kMinBytesPerSecond);
}

namespace {

// The temp file a download writes; unlinked unless it made it into the store.
class PartialBlob {
 public:
  explicit PartialBlob(const std::string& tmp_dir) : path_(tmp_dir + "/pull-XXXXXX") {
    fd_ = UniqueFd(::mkostemp(path_.data(), O_CLOEXEC));
    if (!fd_) throw Error(errno, "create temp file in " + tmp_dir);
  }
  ~PartialBlob() {
    if (!kept_) ::unlink(path_.c_str());
  }
  PartialBlob(const PartialBlob&) = delete;
  PartialBlob& operator=(const PartialBlob&) = delete;

  void append(std::string_view data) {
    write_all(fd_.get(), data.data(), data.size(), "write " + path_);
    sha_.update(data);
    size_ += static_cast<std::int64_t>(data.size());
  }
  void restart() {  // the server ignored our Range: start over
    if (::ftruncate(fd_.get(), 0) != 0 || ::lseek(fd_.get(), 0, SEEK_SET) != 0) throw Error(errno, "truncate " + path_);
    sha_ = Sha256();
    size_ = 0;
  }
  std::int64_t size() const { return size_; }
  std::string digest() { return sha_.finish(); }
  const std::string& path() const { return path_; }
  void keep() { kept_ = true; }

 private:
  std::string path_;
  UniqueFd fd_;
  Sha256 sha_;
  std::int64_t size_ = 0;
  bool kept_ = false;
};

// One attempt; returns normally when the body ended, throws on a transport error.
void fetch_into(RegistrySession& session, HttpClient& client, const std::string& url, const Descriptor& blob,
                PartialBlob& partial, TransferProgress& progress, std::chrono::steady_clock::time_point deadline) {
  HttpRequest request{.url = url, .deadline = deadline};
  if (partial.size() > 0) request.headers.push_back("Range: bytes=" + std::to_string(partial.size()) + "-");
  bool first_chunk = true;
  request.sink = [&](long status, std::string_view data) {
    if (first_chunk && status == 200 && partial.size() > 0) {
      progress.take_back(partial.size());
      partial.restart();
    }
    first_chunk = false;
    if (partial.size() + static_cast<std::int64_t>(data.size()) > blob.size)
      throw Error::invalid("blob " + blob.digest + " is larger than the " + std::to_string(blob.size) +
                           " bytes its manifest gives");
    partial.append(data);
    progress.add(static_cast<std::int64_t>(data.size()));
  };
  HttpResponse response = session.send(client, std::move(request));
  if (response.status == 416 && partial.size() == blob.size) return;  // nothing left to fetch
  if (response.status == 404) throw Error::invalid("blob " + blob.digest + ": not found in the registry");
  if (response.status != 200 && response.status != 206) throw_registry_error("blob " + blob.digest, response);
}

void verify(PartialBlob& partial, const Descriptor& blob, const std::string& expected_diff_id) {
  if (partial.size() != blob.size)
    throw Error::invalid("blob " + blob.digest + " is truncated: " + std::to_string(partial.size()) + " of " +
                         std::to_string(blob.size) + " bytes");
  if (std::string got = partial.digest(); got != blob.digest)
    throw Error::invalid("blob " + blob.digest + ": digest mismatch, the bytes received hash to " + got);
  if (expected_diff_id.empty()) return;
  if (std::string diff_id = layer_diff_id(partial.path()); diff_id != expected_diff_id)
    throw Error::invalid("layer " + blob.digest + ": its uncompressed content hashes to " + diff_id +
                         ", the config's DiffID is " + expected_diff_id);
}

}  // namespace

void download_blob(RegistrySession& session, HttpClient& client, ImageStore& store, const std::string& repository,
                   const Descriptor& blob, const std::string& expected_diff_id, TransferProgress& progress) {
  store.require_free(static_cast<uint64_t>(std::max<int64_t>(blob.size, 0)), "blob " + blob.digest);
  PartialBlob partial(store.tmp_dir());
  std::string url = session.url("/v2/" + repository + "/blobs/" + blob.digest);
  // One deadline for every attempt: resuming with Range does not restart the clock.
  auto deadline = std::chrono::steady_clock::now() + blob_time_limit(blob.size);
  for (int attempt = 0;; ++attempt) {
    try {
      fetch_into(session, client, url, blob, partial, progress, deadline);
      break;
    } catch (const HttpTransportError& e) {
      if (!e.transient() || attempt + 1 >= kMaxAttempts) throw;
    }
    retry_pause(attempt);
  }
  verify(partial, blob, expected_diff_id);
  store.put_hashed_blob_file(partial.path(), blob.digest);
  partial.keep();
}

}  // namespace sandcell::rootfs_builder
