// base/src/loaded_libs: libcurl and libarchive open by their sonames, have every
// function sandcell calls, and each pointer is the function it is named after.
#include "sandcell/base/loaded_libs.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace sandcell::rootfs_builder {
namespace {

TEST(LoadedLibs, Curl_ParsesAUrlAndNamesItsErrors) {
  EXPECT_STREQ(libcurl().easy_strerror(CURLE_OK), "No error");
  std::unique_ptr<CURLU, decltype(&curl_url_cleanup)> url(libcurl().url(), libcurl().url_cleanup);
  ASSERT_NE(url, nullptr);
  ASSERT_EQ(libcurl().url_set(url.get(), CURLUPART_URL, "https://Registry.Example:5000/v2/", 0),
            CURLUE_OK);
  char* host = nullptr;
  ASSERT_EQ(libcurl().url_get(url.get(), CURLUPART_HOST, &host, 0), CURLUE_OK);
  EXPECT_STREQ(host, "Registry.Example");
  libcurl().free(host);
}

TEST(LoadedLibs, Archive_WritesAnEntryItCanNameBack) {
  std::unique_ptr<archive_entry, decltype(&archive_entry_free)> entry(libarchive().entry_new(),
                                                                      libarchive().entry_free);
  ASSERT_NE(entry, nullptr);
  libarchive().entry_copy_pathname(entry.get(), "etc/passwd");
  libarchive().entry_set_filetype(entry.get(), AE_IFREG);
  libarchive().entry_set_mode(entry.get(), AE_IFREG | 0644);
  EXPECT_STREQ(libarchive().entry_pathname(entry.get()), "etc/passwd");
  EXPECT_EQ(libarchive().entry_filetype(entry.get()), static_cast<unsigned>(AE_IFREG));
  EXPECT_EQ(libarchive().entry_perm(entry.get()), 0644u);
  archive* reader = libarchive().read_new();
  ASSERT_NE(reader, nullptr);
  EXPECT_EQ(libarchive().read_support_format_tar(reader), ARCHIVE_OK);
  EXPECT_EQ(libarchive().read_free(reader), ARCHIVE_OK);
}

}  // namespace
}  // namespace sandcell::rootfs_builder
