/* fuzz_scan.c - the scanner's settings windows (src/match/scan.h) on arbitrary text. The windows are
 * shrunk (a 256-byte head, 192 bytes before a failure, 384 after) so that small inputs reach them, and
 * the input is scanned as a live stream, a region per read, so that a window spans regions: the first
 * byte picks the read size (1 to 4065 bytes) and whether the bytes before a window come from the ring
 * or are read again from the input (a regular file's path). The sanitizers are the oracle; the
 * settings read are also walked, so a bad entry is touched. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "db/patterndb.h"
#include "match/config.h"
#include "match/phase.h"
#include "match/scan.h"
#include "story/story.h"
#include "fuzz_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t step = 1 + (size_t)(data[0] & 0x7f) * 32;
    int again = data[0] >> 7;
    story *st = story_new();
    scanner *sc = scanner_new(fuzz_pdb());
    phase_state *ps = phase_new(fuzz_pdb());
    if (!st || !sc || !ps)
        abort();
    scanner_settings_windows(sc, 256, 192, 384);
    fuzz_mem m = {data + 1, size - 1, 0, step}, whole = {data + 1, size - 1, 0, 0};
    scan_source src = {.path = "fuzz.log", .eager = 1, .reread = again ? fuzz_mem_reread : NULL, .reread_ud = &whole};
    scan_result res;
    (void)scanner_run(sc, fuzz_mem_read, &m, &src, ps, story_sink(st), &res, NULL, NULL);
    story_finish(st, "");
    const struct config_store *s = *story_job_settings(st, "");
    size_t sum = 0;
    for (size_t i = 0; s && i < s->n; i++)
        sum += strlen(s->e[i].path) + strlen(s->e[i].value) + (size_t)s->e[i].line;
    if (sum == (size_t)-1)
        abort(); /* keeps the walk */
    scanner_free(sc);
    phase_free(ps);
    story_free(st);
    return 0;
}
