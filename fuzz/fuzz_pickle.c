/* fuzz_pickle.c - libFuzzer target for the safe pickle reader (src/dumps/pickle.h) and the memory
 * snapshot reader over it (src/dumps/memsnap.c): any input must decode or fail with a status, without a
 * crash, a leak, undefined behaviour or unbounded work. Each input is read both ways a scan reads one:
 * in memory and expanded into a tree (a flight recorder), and streamed with the memo counted first and
 * root["device_traces"] handed to the snapshot's trace reader, then summarised as a snapshot.
 * Build: cmake -DCMAKE_C_COMPILER=clang-14 -DOOMSCAN_FUZZ=ON; run: fuzz_pickle fuzz/corpus/pickle. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dumps/common.h"
#include "dumps/pickle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct {
    const uint8_t *p;
    size_t n, pos;
} mem_in;

/* reads of at most 7 bytes, so that the reader's window refills inside every opcode */
static ssize_t small_reads(void *ud, void *buf, size_t cap)
{
    mem_in *m = ud;
    size_t k = m->n - m->pos;
    if (k > cap)
        k = cap;
    if (k > 7)
        k = 7;
    memcpy(buf, m->p + m->pos, k);
    m->pos += k;
    return (ssize_t)k;
}

static ssize_t reread(void *ud, void *buf, size_t n, uint64_t off)
{
    const mem_in *m = ud;
    if (off > m->n || n > m->n - off)
        return -1;
    memcpy(buf, m->p + off, n);
    return (ssize_t)n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* small bounds so that a budget-sized input is reached quickly and each run stays fast */
    pickle_limits lim = {
        .max_input = 1u << 20, .max_nodes = 1u << 16, .max_bytes = 1u << 24, .max_string = 1u << 16, .max_depth = 64};
    cJSON *v = NULL;
    oomscan_diag d;
    if (pickle_decode(data, size, &lim, &v, &d) == OOMSCAN_OK) {
        char *s = cJSON_PrintUnformatted(v); /* the tree must also be sound to walk */
        cJSON_free(s);
    }
    cJSON_Delete(v);

    mem_in a = {data, size, 0}, b = {data, size, 0};
    memsnap_trace *tr = memsnap_trace_new();
    pickle_input in = {.read = small_reads, .read_ud = &a, .reread = reread, .reread_ud = &b,
                       .stream_key = "device_traces", .item = memsnap_trace_item, .item_ud = tr};
    pickle_doc *doc = NULL;
    if (tr && pickle_parse(&in, &lim, &doc, &d) == OOMSCAN_OK) {
        struct dumps_acc acc = {.fr = cJSON_CreateArray(), .snap = cJSON_CreateArray()};
        scan_source src = {.path = "fuzz.pickle"};
        char *why = NULL;
        if (acc.snap)
            memsnap_summarise(doc, tr, &src, &acc, &why);
        free(why);
        cJSON_Delete(acc.fr);
        cJSON_Delete(acc.snap);
    }
    pickle_doc_free(doc);
    memsnap_trace_free(tr);
    return 0;
}
