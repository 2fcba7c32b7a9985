/* fuzz_dumps.c - libFuzzer target for the crash-dump readers read together (src/dumps/): flight
 * recorder dumps of several ranks (JSON or pickle), error files, memory snapshots, JSON-lines logs,
 * each sniffed by its content and read as the driver reads it, then finished together (the ranks
 * compared, snapshots attached to their OOM). Items 1 and 13 of issue 35 (a field of the wrong type, a
 * number out of range) were one small input away from the seeds of fuzz_pickle, which decodes only;
 * here the values reach the readers. The input is several sources split at the line "--dump--"; the
 * i-th is named nccl_trace_rank_<i> (readers take a rank from the name). fuzz/dumps.dict holds the
 * dumps' keys; fuzz/seeds.sh makes seeds shaped like real dumps and like their wrong-typed variants.
 * Any input must end without a crash, a leak, undefined behaviour or unbounded work. */
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dumps/dumps.h"
#include "fuzz_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void read_source(const uint8_t *p, size_t n, size_t i, scanner *sc, phase_state *ps, story *st, dumps_acc *acc)
{
    char name[48];
    snprintf(name, sizeof name, "fr/nccl_trace_rank_%zu", i);
    size_t nh = n < DUMPS_SNIFF_BYTES ? n : DUMPS_SNIFF_BYTES;
    dump_kind k = dumps_sniff(p, nh);
    scan_source src = {.path = name, .input = i};
    scan_result res;
    phase_reset_source(ps);
    if (k == DUMP_NONE || k == DUMP_OOMSCAN) {
        fuzz_mem m = {p, n, 0, 0};
        (void)scanner_run(sc, fuzz_mem_read, &m, &src, ps, story_sink(st), &res, NULL, NULL);
        return;
    }
    fuzz_mem m = {p + nh, n - nh, 0, 0};
    char *why = NULL;
    (void)dumps_read(k, p, nh, fuzz_mem_read, &m, sc, ps, &src, st, acc, &res, &why);
    free(why);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char sep[] = "\n--dump--\n";
    pdb *db = fuzz_pdb();
    scanner *sc = scanner_new(db);
    phase_state *ps = phase_new(db);
    story *st = story_new();
    dumps_acc *acc = dumps_acc_new();
    if (!sc || !ps || !st || !acc)
        abort();
    size_t i = 0, at = 0;
    while (at <= size && i < 16) {
        const uint8_t *s = memmem(data + at, size - at, sep, sizeof sep - 1);
        size_t end = s ? (size_t)(s - data) : size;
        read_source(data + at, end - at, i++, sc, ps, st, acc);
        if (!s)
            break;
        at = end + sizeof sep - 1;
    }
    (void)dumps_acc_finish(acc, db, st);
    (void)story_finish(st, "");
    dumps_acc_free(acc);
    story_free(st);
    phase_free(ps);
    scanner_free(sc);
    return 0;
}
