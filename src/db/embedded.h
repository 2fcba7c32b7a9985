/* embedded.h - the default data files, compiled into the binary by src/tools/embed.c.
 * Ownership: static, read-only, lives for the whole program. */
#ifndef OOMSCAN_EMBEDDED_H
#define OOMSCAN_EMBEDDED_H

#include <stddef.h>

typedef struct {
    const char *name; /* path relative to patterns/, e.g. "failures/pytorch.json" */
    const char *data; /* NUL-terminated file contents */
    size_t len;       /* without the terminating NUL */
    /* The same document lean: without its "samples" and "not_samples" members (only
     * --check-patterns runs them) and without whitespace; half the text to parse at start-up. */
    const char *lean;
    size_t lean_len;
} embedded_file;

extern const embedded_file embedded_files[];
extern const size_t embedded_count;

/* The default database's literal prefilters (the whole set, the lean set and the settings' names),
 * compiled and serialized at build time by src/tools/serialize.c (pdb_prefilter_serialize); empty
 * (length 0) in a build without Vectorscan or a cross build. pdb_compile hands each part to the
 * prefilter, which checks it fits. */
extern const unsigned char embedded_prefilter[];
extern const size_t embedded_prefilter_len;

/* Every regex of the default database compiled at build time and serialized (pdb_regex_serialize);
 * empty in a cross build. pdb_compile decodes it when it fits, else compiles. */
extern const unsigned char embedded_regex[];
extern const size_t embedded_regex_len;

/* The settings the embedded checklists name, as prefilter literals (pdb_config_serialize), each
 * NUL-terminated: a lean load reads them here and parses the checklists only when advice is asked
 * for. Empty in a cross build (then nothing waits). */
extern const unsigned char embedded_config[];
extern const size_t embedded_config_len;

#endif
