/* config_propose.c - the concrete change a checklist step asks for ("32 -> 16"), from the value the
 * job used (config_propose). No state. */
#include <ctype.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "match/config_impl.h"

static int is_true(const char *v)
{
    return !strcasecmp(v, "true") || !strcmp(v, "1") || !strcasecmp(v, "yes") || !strcasecmp(v, "on");
}
static int is_false(const char *v)
{
    return !strcasecmp(v, "false") || !strcmp(v, "0") || !strcasecmp(v, "no") || !strcasecmp(v, "off");
}
static int is_none(const char *v) { return !strcmp(v, "None") || !strcmp(v, "null") || !strcmp(v, "~"); }

/* Spell a boolean the way the dump spells its values (Python True, YAML true, 1). */
static const char *spell_bool(const char *cur, int on)
{
    if (!strcmp(cur, "0") || !strcmp(cur, "1"))
        return on ? "1" : "0";
    if (!strcmp(cur, "null") || islower((unsigned char)cur[0]))
        return on ? "true" : "false";
    return on ? "True" : "False";
}

static void fmt_num(double v, int integer, const char *unit, char *out, size_t cap)
{
    if (integer) {
        snprintf(out, cap, "%.0f%s", v, unit);
        return;
    }
    char t[64];
    snprintf(t, sizeof t, "%.2f", v);
    char *e = t + strlen(t) - 1;
    while (*e == '0')
        *e-- = '\0';
    if (*e == '.')
        *e = '\0';
    snprintf(out, cap, "%s%s", t, unit);
}

config_verdict config_propose(const char *change, const char *current, char *out, size_t cap)
{
    out[0] = '\0';
    if (!change || !current)
        return CONFIG_NO_PROPOSAL;
    if (!strcmp(change, "enable") || !strcmp(change, "disable")) {
        int on = change[0] == 'e';
        if (on ? is_true(current) : is_false(current))
            return CONFIG_ALREADY;
        if (!(on ? is_false(current) : is_true(current)) && !is_none(current))
            return CONFIG_NO_PROPOSAL;
        snprintf(out, cap, "%s", spell_bool(current, on));
        return CONFIG_PROPOSED;
    }
    if (!strncmp(change, "set:", 4)) {
        const char *v = change + 4;
        if (!*v || *v == '<')
            return CONFIG_NO_PROPOSAL;
        if (!strcasecmp(v, current))
            return CONFIG_ALREADY;
        snprintf(out, cap, "%s", v);
        return CONFIG_PROPOSED;
    }
    char *end;
    double n = strtod(current, &end);
    if (end == current || !isfinite(n) || n <= 0)
        return CONFIG_NO_PROPOSAL;
    /* a unit may follow the number (#SBATCH --mem=64G); anything else is not a number */
    const char *unit = end;
    for (const char *u = unit; *u; u++)
        if (!isalpha((unsigned char)*u))
            return CONFIG_NO_PROPOSAL;
    int integer = strcspn(current, ".eE") >= (size_t)(end - current);
    int fraction = !integer && n < 1;
    double v;
    if (!strcmp(change, "halve")) {
        v = integer ? floor(n / 2) : n / 2;
    } else if (!strcmp(change, "double")) {
        v = n * 2;
    } else if (!strcmp(change, "decrease")) {
        /* a memory fraction steps down by 0.1; a count or budget goes to three quarters */
        v = fraction ? n - 0.1 : (integer ? floor(n * 0.75) : n * 0.75);
        if (fraction && v < 0.05)
            return CONFIG_NO_PROPOSAL;
    } else if (!strcmp(change, "increase")) {
        /* a memory fraction steps up by 0.05 and stays at or under 0.95; a count grows by half */
        v = fraction ? fmin(n + 0.05, 0.95) : (integer ? ceil(n * 1.5) : n * 1.5);
        if (v <= n)
            return CONFIG_NO_PROPOSAL;
    } else {
        return CONFIG_NO_PROPOSAL;
    }
    if (v <= 0 || v == n)
        return CONFIG_NO_PROPOSAL;
    fmt_num(v, integer, unit, out, cap);
    return CONFIG_PROPOSED;
}

