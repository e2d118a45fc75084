#pragma once
// libcurl and libarchive, loaded with dlopen on first use instead of linked
// (sandcell/base/loaded_library.hpp). Every command of sandcell-images mapped them and the
// ~35 libraries they link at each start (+4-5 ms on our CI VM, bench/README.md "Session 13"),
// while most calls (`sandcell code` on an image the store has, `run IMAGE`, `images`) use
// neither: only pulls, pushes, builds, loads, saves and the LLM client do.
//
// A call reads like the C API behind an accessor: libcurl().easy_init() for curl_easy_init(),
// libarchive().read_new() for archive_read_new(). The real headers give the types, constants
// and signatures. Each accessor loads its library once (thread-safe) and throws Error naming
// the library and the Debian package when it or one of its functions is missing.
#include <archive.h>
#include <archive_entry.h>
#include <curl/curl.h>

namespace sandcell {

// libcurl.so.4: registry and URL fetches (registry/, url_fetch.cpp), the agent's LLM client.
struct CurlFunctions {
  decltype(&curl_easy_cleanup) easy_cleanup;
  decltype(&curl_easy_escape) easy_escape;
  decltype(&curl_easy_getinfo) easy_getinfo;
  decltype(&curl_easy_init) easy_init;
  decltype(&curl_easy_nextheader) easy_nextheader;
  decltype(&curl_easy_perform) easy_perform;
  decltype(&curl_easy_reset) easy_reset;
  decltype(&curl_easy_setopt) easy_setopt;
  decltype(&curl_easy_strerror) easy_strerror;
  decltype(&curl_free) free;
  decltype(&curl_global_init) global_init;
  decltype(&curl_slist_append) slist_append;
  decltype(&curl_slist_free_all) slist_free_all;
  decltype(&curl_url) url;
  decltype(&curl_url_cleanup) url_cleanup;
  decltype(&curl_url_get) url_get;
  decltype(&curl_url_set) url_set;
};
const CurlFunctions& libcurl();

// libarchive.so.13: layer tars, docker-archive and OCI archives, ADD of local tars.
struct ArchiveFunctions {
  decltype(&archive_entry_copy_hardlink) entry_copy_hardlink;
  decltype(&archive_entry_copy_pathname) entry_copy_pathname;
  decltype(&archive_entry_copy_symlink) entry_copy_symlink;
  decltype(&archive_entry_filetype) entry_filetype;
  decltype(&archive_entry_free) entry_free;
  decltype(&archive_entry_gid) entry_gid;
  decltype(&archive_entry_hardlink) entry_hardlink;
  decltype(&archive_entry_mtime) entry_mtime;
  decltype(&archive_entry_mtime_nsec) entry_mtime_nsec;
  decltype(&archive_entry_new) entry_new;
  decltype(&archive_entry_pathname) entry_pathname;
  decltype(&archive_entry_perm) entry_perm;
  decltype(&archive_entry_set_filetype) entry_set_filetype;
  decltype(&archive_entry_set_gid) entry_set_gid;
  decltype(&archive_entry_set_mode) entry_set_mode;
  decltype(&archive_entry_set_mtime) entry_set_mtime;
  decltype(&archive_entry_set_rdev) entry_set_rdev;
  decltype(&archive_entry_set_size) entry_set_size;
  decltype(&archive_entry_set_uid) entry_set_uid;
  decltype(&archive_entry_size) entry_size;
  decltype(&archive_entry_size_is_set) entry_size_is_set;
  decltype(&archive_entry_symlink) entry_symlink;
  decltype(&archive_entry_uid) entry_uid;
  decltype(&archive_entry_xattr_add_entry) entry_xattr_add_entry;
  decltype(&archive_entry_xattr_next) entry_xattr_next;
  decltype(&archive_entry_xattr_reset) entry_xattr_reset;
  decltype(&archive_errno) error_number;
  decltype(&archive_error_string) error_string;
  decltype(&archive_read_data) read_data;
  decltype(&archive_read_data_block) read_data_block;
  decltype(&archive_read_free) read_free;
  decltype(&archive_read_new) read_new;
  decltype(&archive_read_next_header) read_next_header;
  decltype(&archive_read_open_filename) read_open_filename;
  decltype(&archive_read_support_filter_bzip2) read_support_filter_bzip2;
  decltype(&archive_read_support_filter_gzip) read_support_filter_gzip;
  decltype(&archive_read_support_filter_lz4) read_support_filter_lz4;
  decltype(&archive_read_support_filter_xz) read_support_filter_xz;
  decltype(&archive_read_support_filter_zstd) read_support_filter_zstd;
  decltype(&archive_read_support_format_raw) read_support_format_raw;
  decltype(&archive_read_support_format_tar) read_support_format_tar;
  decltype(&archive_set_error) set_error;
  decltype(&archive_write_add_filter_gzip) write_add_filter_gzip;
  decltype(&archive_write_close) write_close;
  decltype(&archive_write_data) write_data;
  decltype(&archive_write_free) write_free;
  decltype(&archive_write_header) write_header;
  decltype(&archive_write_new) write_new;
  decltype(&archive_write_open) write_open;
  decltype(&archive_write_open_fd) write_open_fd;
  decltype(&archive_write_set_bytes_in_last_block) write_set_bytes_in_last_block;
  decltype(&archive_write_set_filter_option) write_set_filter_option;
  decltype(&archive_write_set_format) write_set_format;
  decltype(&archive_write_set_format_raw) write_set_format_raw;
};
const ArchiveFunctions& libarchive();

}  // namespace sandcell
