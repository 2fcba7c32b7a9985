/* archive_lib.c - libarchive's functions, looked up when the first archive is met. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "input/archive_lib.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#ifdef OOMSCAN_ARCHIVE_DLOPEN
#include <dlfcn.h>
#endif

#ifndef OOMSCAN_LIBARCHIVE_SONAME
#define OOMSCAN_LIBARCHIVE_SONAME "libarchive.so.13"
#endif

static archive_lib g_lib;
static int g_ok;
static char g_error[512];
static const char *g_soname = OOMSCAN_LIBARCHIVE_SONAME;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

#ifdef OOMSCAN_ARCHIVE_DLOPEN
static void load(void)
{
    void *h = dlopen(g_soname, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        snprintf(g_error, sizeof g_error, "libarchive cannot be loaded (%s), so archives cannot be read; "
                 "install it (Debian: libarchive13) or unpack the archive", why ? why : g_soname);
        return;
    }
    /* dlsym's void * converted to a function pointer: POSIX guarantees this works */
#define SYM(m)                                                                                          \
    do {                                                                                                \
        void *p = dlsym(h, "archive_" #m);                                                              \
        if (!p) {                                                                                       \
            snprintf(g_error, sizeof g_error, "libarchive (%s) has no archive_" #m "; archives cannot be " \
                     "read", g_soname);                                                                 \
            return;                                                                                     \
        }                                                                                               \
        memcpy(&g_lib.m, &p, sizeof p);                                                                 \
    } while (0)
    SYM(read_new);
    SYM(read_free);
    SYM(read_support_format_tar);
    SYM(read_support_format_zip_streamable);
    SYM(read_open);
    SYM(read_next_header);
    SYM(read_data);
    SYM(error_string);
    SYM(set_error);
    SYM(format);
    SYM(entry_filetype);
    SYM(entry_hardlink);
    SYM(entry_pathname);
    SYM(entry_pathname_utf8);
#undef SYM
    __atomic_store_n(&g_ok, 1, __ATOMIC_RELEASE); /* the handle stays open: used until the program ends */
}
#else
static void load(void)
{
    archive_lib l = {.read_new = archive_read_new, .read_free = archive_read_free,
                     .read_support_format_tar = archive_read_support_format_tar,
                     .read_support_format_zip_streamable = archive_read_support_format_zip_streamable,
                     .read_open = archive_read_open, .read_next_header = archive_read_next_header,
                     .read_data = archive_read_data, .error_string = archive_error_string,
                     .set_error = archive_set_error, .format = archive_format,
                     .entry_filetype = archive_entry_filetype, .entry_hardlink = archive_entry_hardlink,
                     .entry_pathname = archive_entry_pathname, .entry_pathname_utf8 = archive_entry_pathname_utf8};
    (void)g_soname;
    g_lib = l;
    __atomic_store_n(&g_ok, 1, __ATOMIC_RELEASE);
}
#endif

const archive_lib *archive_lib_get(void)
{
    pthread_once(&g_once, load);
    return g_ok ? &g_lib : NULL;
}

const char *archive_lib_error(void) { return g_error; }

int archive_lib_loaded(void)
{
    return __atomic_load_n(&g_ok, __ATOMIC_ACQUIRE);
}

void archive_lib_use(const char *soname) { g_soname = soname; }
