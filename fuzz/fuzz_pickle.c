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
#include "fuzz_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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

    fuzz_mem a = {data, size, 0, 7}, b = {data, size, 0, 0}; /* reads of at most 7 bytes: the window refills inside every opcode */
    memsnap_trace *tr = memsnap_trace_new();
    pickle_input in = {.read = fuzz_mem_read, .read_ud = &a, .reread = fuzz_mem_reread, .reread_ud = &b,
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
