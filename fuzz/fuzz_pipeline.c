/* fuzz_pipeline.c - the whole pipeline on arbitrary bytes: container sniffing and decoding (gzip, xz,
 * zstd, bzip2, tar, zip, nested), line splitting, prefilter, matching, phases, the story, advice and
 * every writer. Limits are small so a bomb in the corpus costs milliseconds, not minutes. */
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_file(data, size, ".in");
    oomscan_options opt = {.jobs = 1};
    opt.limits.max_bytes = 8u << 20;
    opt.limits.max_members = 256;
    oomscan_scan *scan = NULL;
    oomscan_diag d = {0};
    if (oomscan_scan_new(&scan, fuzz_db(), &opt, &d) == OOMSCAN_OK) {
        const char *paths[] = {path};
        (void)oomscan_scan_paths(scan, paths, 1, &d);
        fuzz_write_all(scan);
    }
    oomscan_scan_free(scan);
    unlink(path);
    return 0;
}
