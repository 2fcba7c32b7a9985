/* archive_lib.h - libarchive, opened when the first archive is met, not at start-up.
 * Ownership: the function table is static and lives for the whole program once loaded.
 *
 * libarchive pulls in libxml2, ICU, nettle, acl and more; loading and relocating them was a tenth of
 * an empty run, though most inputs are plain or compressed text (decoded by our own code). So the
 * archive reader reaches libarchive through this table, filled by dlopen on first use (as systemd
 * opens its optional libraries), or by the linked functions when built with
 * -DOOMSCAN_ARCHIVE_DLOPEN=OFF. */
#ifndef OOMSCAN_ARCHIVE_LIB_H
#define OOMSCAN_ARCHIVE_LIB_H

#include <archive.h>
#include <archive_entry.h>
#include <stddef.h>

/* Each member has the type of the libarchive function it names (archive_<member>). */
typedef struct {
    __typeof__(archive_read_new) *read_new;
    __typeof__(archive_read_free) *read_free;
    __typeof__(archive_read_support_format_tar) *read_support_format_tar;
    __typeof__(archive_read_support_format_zip_streamable) *read_support_format_zip_streamable;
    __typeof__(archive_read_open) *read_open;
    __typeof__(archive_read_next_header) *read_next_header;
    __typeof__(archive_read_data) *read_data;
    __typeof__(archive_error_string) *error_string;
    __typeof__(archive_set_error) *set_error;
    __typeof__(archive_format) *format;
    __typeof__(archive_entry_filetype) *entry_filetype;
    __typeof__(archive_entry_hardlink) *entry_hardlink;
    __typeof__(archive_entry_pathname) *entry_pathname;
    __typeof__(archive_entry_pathname_utf8) *entry_pathname_utf8;
} archive_lib;

/* The table, loading the library on the first call (thread-safe, once). NULL when it cannot be
 * loaded; then archive_lib_error() says why, naming the library. */
const archive_lib *archive_lib_get(void);
const char *archive_lib_error(void);

/* 1 once the library has been loaded (tests: a plain input must not load it). */
int archive_lib_loaded(void);

/* Tests: load `soname` instead of the one the build found; only before the first archive_lib_get(). */
void archive_lib_use(const char *soname);

#endif
