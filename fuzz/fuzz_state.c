/* fuzz_state.c - the --state reader on arbitrary bytes: the state is opened (locked, read, parsed),
 * used for a scan of a small log (which resumes from what it says when it matches), written out and
 * saved again. */
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char LOG[] = "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. "
                          "GPU 0 has a total capacity of 79.10 GiB of which 6.00 MiB is free.\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char logpath[64];
    if (!logpath[0]) {
        snprintf(logpath, sizeof logpath, "/tmp/oomscan-fuzz-%d.log", (int)getpid());
        FILE *f = fopen(logpath, "wb");
        if (!f || fwrite(LOG, 1, sizeof LOG - 1, f) != sizeof LOG - 1)
            abort();
        fclose(f);
    }
    const char *path = fuzz_file(data, size, ".state");
    oomscan_state *state = NULL;
    oomscan_scan *scan = NULL;
    oomscan_diag d = {0};
    oomscan_options opt = {.jobs = 1};
    if (oomscan_state_open(&state, path, &d) == OOMSCAN_OK && oomscan_scan_new(&scan, fuzz_db(), &opt, &d) == OOMSCAN_OK &&
        oomscan_scan_use_state(scan, state) == OOMSCAN_OK) {
        const char *paths[] = {logpath};
        (void)oomscan_scan_paths(scan, paths, 1, &d);
        fuzz_write_all(scan);
        (void)oomscan_state_save(state, scan, &d);
    }
    oomscan_scan_free(scan);
    oomscan_state_free(state);
    unlink(path);
    char lock[80];
    snprintf(lock, sizeof lock, "%s.lock", path);
    unlink(lock);
    return 0;
}
