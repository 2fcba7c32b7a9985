/* fuzz_pickle.c - libFuzzer target for the safe pickle reader (src/dumps/pickle.h): any input must
 * decode or fail with a status, without a crash, a leak, undefined behaviour or unbounded work.
 * Build: cmake -DCMAKE_C_COMPILER=clang-14 -DOOMSCAN_FUZZ=ON; run: fuzz_pickle fuzz/corpus/pickle. */
#include <stddef.h>
#include <stdint.h>

#include "dumps/pickle.h"

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
    return 0;
}
