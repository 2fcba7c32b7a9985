/* fuzz_merge.c - `oomscan merge` on arbitrary bytes: NDJSON records of other runs read, combined into
 * one story, roles elected again, and every writer run over the result. */
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_file(data, size, ".ndjson");
    oomscan_scan *scan = NULL;
    oomscan_diag d = {0};
    oomscan_options opt = {.jobs = 1};
    if (oomscan_scan_new(&scan, fuzz_db(), &opt, &d) == OOMSCAN_OK) {
        const char *paths[] = {path, path}; /* twice: merging merged output must hold too */
        (void)oomscan_scan_merge(scan, paths, 2, &d);
        fuzz_write_all(scan);
    }
    oomscan_scan_free(scan);
    unlink(path);
    return 0;
}
