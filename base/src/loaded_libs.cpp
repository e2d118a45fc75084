// Loading libcurl and libarchive on first use (see loaded_libs.hpp).
#include "sandcell/base/loaded_libs.hpp"

#include "sandcell/base/loaded_library.hpp"

// The sonames below are the ABI these headers describe.
static_assert(LIBCURL_VERSION_MAJOR == 7 || LIBCURL_VERSION_MAJOR == 8,
              "libcurl.so.4 is curl 7.x/8.x");
static_assert(ARCHIVE_VERSION_NUMBER >= 3000000 && ARCHIVE_VERSION_NUMBER < 4000000,
              "libarchive.so.13 is 3.x");

namespace sandcell {
namespace {

constexpr runtime::LibraryName kCurl{
    .soname = "libcurl.so.4", .package = "libcurl4", .needed_by = "registry and URL downloads"};
constexpr runtime::LibraryName kArchive{.soname = "libarchive.so.13",
                                        .package = "libarchive13",
                                        .needed_by = "image layers and archives"};

}  // namespace

const CurlFunctions& libcurl() {
  static const CurlFunctions functions = [] {
    const runtime::LoadedLibrary lib(kCurl);
    return CurlFunctions{
        .easy_cleanup = SANDCELL_FUNCTION(lib, curl_easy_cleanup),
        .easy_escape = SANDCELL_FUNCTION(lib, curl_easy_escape),
        .easy_getinfo = SANDCELL_FUNCTION(lib, curl_easy_getinfo),
        .easy_init = SANDCELL_FUNCTION(lib, curl_easy_init),
        .easy_nextheader = SANDCELL_FUNCTION(lib, curl_easy_nextheader),
        .easy_perform = SANDCELL_FUNCTION(lib, curl_easy_perform),
        .easy_reset = SANDCELL_FUNCTION(lib, curl_easy_reset),
        .easy_setopt = SANDCELL_FUNCTION(lib, curl_easy_setopt),
        .easy_strerror = SANDCELL_FUNCTION(lib, curl_easy_strerror),
        .free = SANDCELL_FUNCTION(lib, curl_free),
        .global_init = SANDCELL_FUNCTION(lib, curl_global_init),
        .slist_append = SANDCELL_FUNCTION(lib, curl_slist_append),
        .slist_free_all = SANDCELL_FUNCTION(lib, curl_slist_free_all),
        .url = SANDCELL_FUNCTION(lib, curl_url),
        .url_cleanup = SANDCELL_FUNCTION(lib, curl_url_cleanup),
        .url_get = SANDCELL_FUNCTION(lib, curl_url_get),
        .url_set = SANDCELL_FUNCTION(lib, curl_url_set),
    };
  }();
  return functions;
}

const ArchiveFunctions& libarchive() {
  static const ArchiveFunctions functions = [] {
    const runtime::LoadedLibrary lib(kArchive);
    return ArchiveFunctions{
        .entry_copy_hardlink = SANDCELL_FUNCTION(lib, archive_entry_copy_hardlink),
        .entry_copy_pathname = SANDCELL_FUNCTION(lib, archive_entry_copy_pathname),
        .entry_copy_symlink = SANDCELL_FUNCTION(lib, archive_entry_copy_symlink),
        .entry_filetype = SANDCELL_FUNCTION(lib, archive_entry_filetype),
        .entry_free = SANDCELL_FUNCTION(lib, archive_entry_free),
        .entry_gid = SANDCELL_FUNCTION(lib, archive_entry_gid),
        .entry_hardlink = SANDCELL_FUNCTION(lib, archive_entry_hardlink),
        .entry_mtime = SANDCELL_FUNCTION(lib, archive_entry_mtime),
        .entry_mtime_nsec = SANDCELL_FUNCTION(lib, archive_entry_mtime_nsec),
        .entry_new = SANDCELL_FUNCTION(lib, archive_entry_new),
        .entry_pathname = SANDCELL_FUNCTION(lib, archive_entry_pathname),
        .entry_perm = SANDCELL_FUNCTION(lib, archive_entry_perm),
        .entry_set_filetype = SANDCELL_FUNCTION(lib, archive_entry_set_filetype),
        .entry_set_gid = SANDCELL_FUNCTION(lib, archive_entry_set_gid),
        .entry_set_mode = SANDCELL_FUNCTION(lib, archive_entry_set_mode),
        .entry_set_mtime = SANDCELL_FUNCTION(lib, archive_entry_set_mtime),
        .entry_set_rdev = SANDCELL_FUNCTION(lib, archive_entry_set_rdev),
        .entry_set_size = SANDCELL_FUNCTION(lib, archive_entry_set_size),
        .entry_set_uid = SANDCELL_FUNCTION(lib, archive_entry_set_uid),
        .entry_size = SANDCELL_FUNCTION(lib, archive_entry_size),
        .entry_size_is_set = SANDCELL_FUNCTION(lib, archive_entry_size_is_set),
        .entry_symlink = SANDCELL_FUNCTION(lib, archive_entry_symlink),
        .entry_uid = SANDCELL_FUNCTION(lib, archive_entry_uid),
        .entry_xattr_add_entry = SANDCELL_FUNCTION(lib, archive_entry_xattr_add_entry),
        .entry_xattr_next = SANDCELL_FUNCTION(lib, archive_entry_xattr_next),
        .entry_xattr_reset = SANDCELL_FUNCTION(lib, archive_entry_xattr_reset),
        .error_number = SANDCELL_FUNCTION(lib, archive_errno),
        .error_string = SANDCELL_FUNCTION(lib, archive_error_string),
        .read_data = SANDCELL_FUNCTION(lib, archive_read_data),
        .read_data_block = SANDCELL_FUNCTION(lib, archive_read_data_block),
        .read_free = SANDCELL_FUNCTION(lib, archive_read_free),
        .read_new = SANDCELL_FUNCTION(lib, archive_read_new),
        .read_next_header = SANDCELL_FUNCTION(lib, archive_read_next_header),
        .read_open_filename = SANDCELL_FUNCTION(lib, archive_read_open_filename),
        .read_support_filter_bzip2 = SANDCELL_FUNCTION(lib, archive_read_support_filter_bzip2),
        .read_support_filter_gzip = SANDCELL_FUNCTION(lib, archive_read_support_filter_gzip),
        .read_support_filter_lz4 = SANDCELL_FUNCTION(lib, archive_read_support_filter_lz4),
        .read_support_filter_xz = SANDCELL_FUNCTION(lib, archive_read_support_filter_xz),
        .read_support_filter_zstd = SANDCELL_FUNCTION(lib, archive_read_support_filter_zstd),
        .read_support_format_raw = SANDCELL_FUNCTION(lib, archive_read_support_format_raw),
        .read_support_format_tar = SANDCELL_FUNCTION(lib, archive_read_support_format_tar),
        .set_error = SANDCELL_FUNCTION(lib, archive_set_error),
        .write_add_filter_gzip = SANDCELL_FUNCTION(lib, archive_write_add_filter_gzip),
        .write_close = SANDCELL_FUNCTION(lib, archive_write_close),
        .write_data = SANDCELL_FUNCTION(lib, archive_write_data),
        .write_free = SANDCELL_FUNCTION(lib, archive_write_free),
        .write_header = SANDCELL_FUNCTION(lib, archive_write_header),
        .write_new = SANDCELL_FUNCTION(lib, archive_write_new),
        .write_open = SANDCELL_FUNCTION(lib, archive_write_open),
        .write_open_fd = SANDCELL_FUNCTION(lib, archive_write_open_fd),
        .write_set_bytes_in_last_block =
            SANDCELL_FUNCTION(lib, archive_write_set_bytes_in_last_block),
        .write_set_filter_option = SANDCELL_FUNCTION(lib, archive_write_set_filter_option),
        .write_set_format = SANDCELL_FUNCTION(lib, archive_write_set_format),
        .write_set_format_raw = SANDCELL_FUNCTION(lib, archive_write_set_format_raw),
    };
  }();
  return functions;
}

}  // namespace sandcell
