/* configkey.c - how a setting a checklist names is spelled: its components, and the text a log is
 * searched for (config_literal). The database asks it when it compiles; the settings store (match/config*.c)
 * when it looks a key up. No state. */
#include "db/configkey.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#define MIN_LEAF 10 /* shorter key names ("stage", "backend") are too common to scan for */

/* The bytes of a name by their value: 'i' a letter, digit or '_' (isalnum in the C locale, which
 * oomscan never changes, or '_'), 'n' the '.' and '-' a dotted or dashed name also holds, '.' none.
 * A lookup, not a call or a chain of compares: the walks back over a dotted prefix test every byte. */
const char CONFIG_NAME_CLASS[257] =
    "................" /* 00 */
    "................" /* 10 */
    ".............nn." /* 20 */
    "iiiiiiiiii......" /* 30 */
    ".iiiiiiiiiiiiiii" /* 40 */
    "iiiiiiiiiii....i" /* 50 */
    ".iiiiiiiiiiiiiii" /* 60 */
    "iiiiiiiiiii....." /* 70 */
    "................" /* 80 */
    "................" /* 90 */
    "................" /* a0 */
    "................" /* b0 */
    "................" /* c0 */
    "................" /* d0 */
    "................" /* e0 */
    "................" /* f0 */;

/* Split a setting name into normalised components. 0 when it is not a key a log can print
 * (prose, a command, an environment variable, which shows up in hint texts more than in dumps). */
int config_key_comps(const char *key, config_comps *out)
{
    out->n = 0;
    if (strncmp(key, "#SBATCH --", 10) == 0) {
        /* one opaque component: the directive as written */
        if (strlen(key) >= CONFIG_COMP_CAP || strchr(key + 10, ' '))
            return 0;
        snprintf(out->c[0], CONFIG_COMP_CAP, "%s", key);
        for (char *q = out->c[0]; *q; q++)
            if (*q == '-')
                *q = '_';
        out->n = 1;
        return 1;
    }
    while (*key == '-' || *key == '+')
        key++;
    if (!(isalpha((unsigned char)*key) || *key == '_') || isupper((unsigned char)*key))
        return 0;
    const char *s = key;
    while (*s) {
        const char *dot = strchr(s, '.');
        size_t len = dot ? (size_t)(dot - s) : strlen(s);
        if (len == 0 || len >= CONFIG_COMP_CAP || out->n == CONFIG_MAX_COMPONENTS)
            return 0;
        for (size_t i = 0; i < len; i++)
            if (!(config_ident(s[i]) || s[i] == '-'))
                return 0;
        char *c = out->c[out->n++];
        for (size_t i = 0; i < len; i++)
            c[i] = s[i] == '-' ? '_' : s[i];
        c[len] = '\0';
        if (!dot)
            break;
        s = dot + 1;
    }
    return out->n > 0;
}

int config_literal(const char *key, char *lit, size_t cap, char *alt, size_t altcap)
{
    config_comps k;
    if (!key || !config_key_comps(key, &k))
        return 0;
    if (altcap)
        alt[0] = '\0';
    if (key[0] == '#') {
        snprintf(lit, cap, "%s", key);
        return strlen(key) < cap;
    }
    const char *leaf = k.c[k.n - 1];
    if (strlen(leaf) < MIN_LEAF || strlen(leaf) >= cap)
        return 0;
    snprintf(lit, cap, "%s", leaf);
    /* the dashed spelling of a command-line flag ("--max-tokens-per-gpu") */
    const char *raw = strrchr(key, '.');
    raw = raw ? raw + 1 : key;
    while (*raw == '-')
        raw++;
    if (strchr(raw, '-') && strlen(raw) < altcap)
        snprintf(alt, altcap, "%s", raw);
    return 1;
}
