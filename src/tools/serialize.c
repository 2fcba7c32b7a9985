/* serialize.c - build-time tool: compiles the embedded database's literal prefilter with Vectorscan
 * and writes its serialized form (prefilter_serialize) to OUT, which embed.c then turns into C, so a
 * run loads the compiled set instead of compiling it (docs/performance.md, start-up). OUT is empty
 * when the prefilter runs the portable engine: every run then compiles, as before.
 * Usage: serialize OUT
 * Linked with the library's objects and no_prefilter.c (an empty blob), so the set it compiles is
 * exactly the one pdb_compile builds at run time. */
#include <stdio.h>
#include <stdlib.h>

#include "db/patterndb.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: serialize OUT\n");
        return 2;
    }
    oomscan_diag diag = {0};
    pdb *db = pdb_new();
    if (!db || pdb_load_embedded(db, &diag) || pdb_compile(db, &diag)) {
        fprintf(stderr, "serialize: %s: %s\n", diag.where[0] ? diag.where : "database", diag.msg);
        pdb_free(db);
        return 1;
    }
    unsigned char *blob = NULL;
    size_t len = 0;
    if (prefilter_serialize(db->pf, &blob, &len) != 0)
        fprintf(stderr, "serialize: the prefilter runs the %s engine; nothing to serialize\n",
                prefilter_engine_name(db->pf));
    FILE *out = fopen(argv[1], "wb");
    int rc = 0;
    if (!out || (len && fwrite(blob, 1, len, out) != len) || fclose(out) != 0) {
        perror(argv[1]);
        rc = 1;
    }
    free(blob);
    pdb_free(db);
    return rc;
}
