#pragma once
// ADD https://...: downloads with libcurl (at most 5 redirects, 2 GiB, 30 minutes and no stall
// of a minute below 1 KiB/s; HTTP errors fatal), only when the build has a network; optionally
// checking the sha256 given with --checksum.
#include <string>

namespace sandcell::rootfs_builder {

// Downloads `url` to `path`; throws Error naming the URL on failure or checksum mismatch.
void fetch_url(const std::string& url, const std::string& path, const std::string& expected_digest);

// The file name ADD gives a download: the last path segment of the URL, or "download".
std::string url_file_name(const std::string& url);

bool is_url(const std::string& source);

}  // namespace sandcell::rootfs_builder
