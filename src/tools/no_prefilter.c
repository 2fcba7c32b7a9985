/* no_prefilter.c - empty serialized forms, for the build-time tool that makes the real ones
 * (serialize.c): linked in their place, they make pdb_compile compile everything. */
#include "db/embedded.h"

const unsigned char embedded_prefilter[1] = {0};
const size_t embedded_prefilter_len = 0;
const unsigned char embedded_regex[1] = {0};
const size_t embedded_regex_len = 0;
const unsigned char embedded_config[1] = {0};
const size_t embedded_config_len = 0;
