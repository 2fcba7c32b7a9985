/* no_prefilter.c - an empty serialized prefilter, for the build-time tool that makes the real one
 * (serialize.c): linked in its place, it makes pdb_compile compile the set. */
#include "db/embedded.h"

const unsigned char embedded_prefilter[1] = {0};
const size_t embedded_prefilter_len = 0;
