/* serialize.c - build-time tool: compiles the embedded database and writes what a run would
 * otherwise compile at every start, serialized, for embed.c to turn into C (docs/performance.md,
 * start-up): the literal prefilters as Vectorscan's databases (pdb_prefilter_serialize; the file is empty
 * when the prefilter runs the portable engine) and every regex in PCRE2's serialized form
 * (pdb_regex_serialize); and the settings the checklists name, so that a scan parses the
 * checklists only for advice (pdb_config_serialize).
 * Usage: serialize PREFILTER_OUT REGEX_OUT CONFIG_OUT
 * Linked with the library's objects and no_prefilter.c (empty blobs), so what it compiles is
 * exactly what pdb_compile builds at run time. */
#include <stdio.h>
#include <stdlib.h>

#include "db/patterndb.h"

static int write_blob(const char *path, const unsigned char *blob, size_t len)
{
    FILE *out = fopen(path, "wb");
    if (!out || (len && fwrite(blob, 1, len, out) != len) || fclose(out) != 0) {
        perror(path);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: serialize PREFILTER_OUT REGEX_OUT CONFIG_OUT\n");
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
    if (pdb_prefilter_serialize(db, &blob, &len) != 0)
        fprintf(stderr, "serialize: the prefilter runs the %s engine; nothing to serialize\n",
                prefilter_engine_name(db->pf));
    int rc = write_blob(argv[1], blob, len);
    free(blob);
    blob = NULL;
    len = 0;
    if (pdb_regex_serialize(db, &blob, &len) != 0) {
        fprintf(stderr, "serialize: the regexes could not be serialized\n");
        rc = 1;
    } else
        rc |= write_blob(argv[2], blob, len);
    free(blob);
    blob = NULL;
    if (pdb_config_serialize(db, &blob, &len) != 0) {
        fprintf(stderr, "serialize: out of memory\n");
        rc = 1;
    } else
        rc |= write_blob(argv[3], blob, len);
    free(blob);
    pdb_free(db);
    return rc;
}
