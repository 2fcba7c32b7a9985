/* configkey.h - how a setting that a checklist names is spelled: the components of its name, and the
 * text to search a log for (config_literal). The database asks it when it compiles the prefilter's
 * literals (db/compile.c); the settings store (match/config.h) when it looks a key up. It sits in db/,
 * below match/, because the database is the first to need it.
 *
 * Ownership: no state; every answer is written into the caller's buffers. */
#ifndef OOMSCAN_CONFIGKEY_H
#define OOMSCAN_CONFIGKEY_H

#include <stddef.h>

#define CONFIG_MAX_COMPONENTS 8
#define CONFIG_COMP_CAP 96

/* A setting's name split at its dots, each component normalised ('-' -> '_'). */
typedef struct {
    char c[CONFIG_MAX_COMPONENTS][CONFIG_COMP_CAP];
    size_t n;
} config_comps;

/* The bytes of a name by their value: 'i' a letter, digit or '_' (isalnum in the C locale, which
 * oomscan never changes, or '_'), 'n' the '.' and '-' a dotted or dashed name also holds, '.' none.
 * A lookup, not a call or a chain of compares: the walks back over a dotted prefix test every byte. */
extern const char CONFIG_NAME_CLASS[257];

/* A letter, digit or '_'. */
static inline int config_ident(int c) { return CONFIG_NAME_CLASS[(unsigned char)c] == 'i'; }

/* Split setting name `key` into normalised components in *out. 0 when it is not a key a log can print
 * (prose, a command, an environment variable, which shows up in hint texts more than in dumps). */
int config_key_comps(const char *key, config_comps *out);

/* The text to search the log for when a checklist names setting `key`, written into lit (cap bytes),
 * and a second spelling into alt ("max-tokens-per-gpu" for "--max-tokens-per-gpu", else "").
 * Returns 1 when the key can be read from a log (a real key, long enough to be rare), else 0. */
int config_literal(const char *key, char *lit, size_t cap, char *alt, size_t altcap);

#endif
