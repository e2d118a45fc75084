#include "blob_upload.hpp"

namespace sandcell::rootfs_builder {
namespace {

std::string with_query(const std::string& url, const std::string& query) {
  return url + (url.find('?') == std::string::npos ? "?" : "&") + query;
}

std::string next_location(RegistrySession& session, const HttpResponse& response, const std::string& what) {
  std::string location = response.header("location");
  if (location.empty()) throw Error::invalid(what + ": the registry gave no upload Location");
  return resolve_url(session.url("/"), location);
}

}  // namespace

std::string BlobUpload::start_upload(HttpClient& client, const Descriptor& blob, bool& mounted) const {
  std::string url = session.url("/v2/" + repository + "/blobs/uploads/");
  if (!mount_from.empty()) url += "?mount=" + url_escape(blob.digest) + "&from=" + url_escape(mount_from);
  HttpResponse response = session.send(client, {.method = "POST", .url = url});
  mounted = response.status == 201;  // 202: no mount, an upload session instead
  if (mounted) return "";
  if (response.status != 202) throw_registry_error("push blob " + blob.digest + ": start upload", response);
  return next_location(session, response, "push blob " + blob.digest);
}

std::string BlobUpload::send_chunks(HttpClient& client, std::string location, const Descriptor& blob) const {
  for (std::int64_t offset = 0; offset < blob.size; offset += chunk_size) {
    std::int64_t length = std::min(chunk_size, blob.size - offset);
    HttpResponse response = session.send(
        client, {.method = "PATCH",
                 .url = location,
                 .headers = {"Content-Type: application/octet-stream",
                             "Content-Range: " + std::to_string(offset) + "-" + std::to_string(offset + length - 1)},
                 .body_file = store.blob_path(blob.digest),
                 .body_offset = offset,
                 .body_length = length});
    if (response.status != 202) throw_registry_error("push blob " + blob.digest + ": chunk at " + std::to_string(offset), response);
    location = next_location(session, response, "push blob " + blob.digest);
    progress.add(length);
  }
  return location;
}

BlobPushOutcome BlobUpload::push(HttpClient& client, const Descriptor& blob) const {
  std::string what = "push blob " + blob.digest;
  HttpResponse head = session.send(client, {.method = "HEAD", .url = session.url("/v2/" + repository + "/blobs/" + blob.digest)});
  if (head.status == 200) {
    progress.add(blob.size);
    return BlobPushOutcome::Present;
  }
  bool mounted = false;
  std::string location = start_upload(client, blob, mounted);
  if (mounted) {
    progress.add(blob.size);
    return BlobPushOutcome::Mounted;
  }
  if (on_upload) on_upload();
  HttpRequest finish{.method = "PUT", .headers = {"Content-Type: application/octet-stream"}};
  if (blob.size > chunk_size) {
    location = send_chunks(client, location, blob);
  } else {
    finish.body_file = store.blob_path(blob.digest);
    finish.body_length = blob.size;
  }
  finish.url = with_query(location, "digest=" + url_escape(blob.digest));
  HttpResponse response = session.send(client, std::move(finish));
  if (response.status != 201) throw_registry_error(what, response);
  if (blob.size <= chunk_size) progress.add(blob.size);
  return BlobPushOutcome::Uploaded;
}

}  // namespace sandcell::rootfs_builder
