/* fuzz_patterns.c - the pattern loader on arbitrary bytes: one data file as a user's --patterns folder
 * would hold it, over the shipped database, then compiled and checked (every sample run). */
#include "fuzz_util.h"

#include "db/patterndb.h"
#include "pipeline/session.h" /* struct oomscan_db: a handle over the pdb for oomscan_db_check */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* The first byte picks the kind of file the loader takes it for (its folder in patterns/). */
    static const char *names[] = {"failures/fuzz.json", "context/fuzz.json", "remediation/fuzz.json", "fuzz.json"};
    if (size == 0)
        return 0;
    const char *name = names[data[0] % 4];
    pdb *db = pdb_new();
    oomscan_diag d = {0};
    if (db && pdb_load_text(db, name, (const char *)data + 1, size - 1, &d) == OOMSCAN_OK &&
        pdb_compile(db, &d) == OOMSCAN_OK) {
        struct oomscan_db handle = {db};
        size_t runs = 0;
        (void)oomscan_db_check(&handle, NULL, NULL, &runs);
    }
    pdb_free(db);
    return 0;
}
