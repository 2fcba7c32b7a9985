/* textfit.c - lines fitted to a width (textfit.h). */
#include "emit/textfit.h"

#include <string.h>

#define RST "\033[0m"

/* Length of the SGR sequence at s (ESC [ params m), 0 when there is none. */
static size_t sgr_len(const char *s, size_t left)
{
    if (left < 3 || s[0] != '\033' || s[1] != '[')
        return 0;
    for (size_t i = 2; i < left; i++) {
        if (s[i] == 'm')
            return i + 1;
        if (!((s[i] >= '0' && s[i] <= '9') || s[i] == ';'))
            return 0;
    }
    return 0;
}

size_t textfit_columns(const char *s, size_t len)
{
    size_t cols = 0;
    for (size_t i = 0; i < len;) {
        size_t k = sgr_len(s + i, len - i);
        if (k) {
            i += k;
            continue;
        }
        cols += ((unsigned char)s[i] & 0xC0) != 0x80;
        i++;
    }
    return cols;
}

typedef struct {
    oomscan_write_fn fn;
    void *ud;
    int failed;
    char sgr[64]; /* the colour in force: the SGR sequences since the last reset */
    size_t sgr_n;
} sink;

static void put(sink *k, const char *s, size_t n)
{
    if (!k->failed && n && k->fn(k->ud, s, n) != 0)
        k->failed = 1;
}

/* Copy s[a..b) out, keeping track of the colour in force. */
static void put_span(sink *k, const char *s, size_t a, size_t b)
{
    put(k, s + a, b - a);
    for (size_t i = a; i < b;) {
        size_t q = sgr_len(s + i, b - i);
        if (!q) {
            i++;
            continue;
        }
        if (q == 4 && s[i + 2] == '0') /* ESC[0m */
            k->sgr_n = 0;
        else if (k->sgr_n + q <= sizeof k->sgr) {
            memcpy(k->sgr + k->sgr_n, s + i, q);
            k->sgr_n += q;
        }
        i += q;
    }
}

/* End a physical line: the colour is reset before the newline, never after it. */
static void end_line(sink *k)
{
    if (k->sgr_n)
        put(k, RST, sizeof RST - 1);
    put(k, "\n", 1);
}

/* Byte offset in s[from..len) where `cols` more columns end (at a character, past any SGR there). */
static size_t advance(const char *s, size_t from, size_t len, size_t cols)
{
    size_t i = from, c = 0;
    while (i < len) {
        size_t q = sgr_len(s + i, len - i);
        if (q) {
            i += q;
            continue;
        }
        if (c == cols)
            break;
        c++;
        i++;
        while (i < len && ((unsigned char)s[i] & 0xC0) == 0x80)
            i++;
    }
    return i;
}

/* The indent of a continuation: under the text after a bullet ("- ", "> ", "12. "), else two more
 * than the line's own, so that a continuation never reads as a line of its own. */
static size_t hanging_indent(const char *s, size_t len)
{
    size_t i = 0;
    while (i < len && s[i] == ' ')
        i++;
    if (i + 1 < len && (s[i] == '-' || s[i] == '>') && s[i + 1] == ' ')
        return i + 2;
    size_t d = i;
    while (d < len && s[d] >= '0' && s[d] <= '9')
        d++;
    if (d > i && d + 1 < len && s[d] == '.' && s[d + 1] == ' ')
        return d + 2;
    return i + 2;
}

/* A unit after a number: the blank between them does not break ("1.50 GiB", "13 lines", "300 s"). */
static int unit_after(const char *s, size_t b, size_t len)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "KB", "MB", "GB", "TB", "bytes",
                                        "%", "s", "ms", "lines", "line(s)", "time(s)", "finding(s)"};
    if (b == 0 || s[b - 1] < '0' || s[b - 1] > '9')
        return 0;
    size_t e = b + 1;
    while (e < len && s[e] != ' ' && s[e] != ',' && s[e] != ')' && s[e] != ';' && s[e] != '.')
        e++;
    for (size_t i = 0; i < sizeof units / sizeof *units; i++)
        if (strlen(units[i]) == e - b - 1 && memcmp(s + b + 1, units[i], e - b - 1) == 0)
            return 1;
    return 0;
}

/* Whether s[a..b) holds more than blanks: a piece that keeps a word */
static int has_word(const char *s, size_t a, size_t b)
{
    for (size_t i = a; i < b; i++)
        if (s[i] != ' ')
            return 1;
    return 0;
}

/* Whether the line may break at the blank s[b]: not between a number and its unit, not inside a
 * `command` quoted in backticks. */
static int breaks_at(const char *s, size_t b, size_t len)
{
    if (s[b] != ' ' || unit_after(s, b, len))
        return 0;
    size_t ticks = 0;
    for (size_t i = 0; i < b; i++)
        ticks += s[i] == '`';
    return ticks % 2 == 0;
}

/* long: one line fitted to the width: the cut, a number kept with its unit and the indented rest share the
 * positions worked out at the top. */
int textfit_line(const char *s, size_t len, unsigned width, int mode, oomscan_write_fn fn, void *ud)
{
    sink k = {.fn = fn, .ud = ud};
    size_t wcols = width < 20 ? 20 : width;
    int cut = mode == TEXTFIT_CUT;
    if (mode == TEXTFIT_KEEP || textfit_columns(s, len) <= wcols) {
        put_span(&k, s, 0, len);
        end_line(&k);
        return k.failed ? -1 : 0;
    }
    if (cut) {
        /* room for the ellipsis; back to the blank before the word that does not fit, unless that
         * throws away more than a third of the line */
        size_t end = advance(s, 0, len, wcols - 1), b = end;
        while (b > 0 && !breaks_at(s, b, len)) /* never between a number and its unit */
            b--;
        if (b > 0 && textfit_columns(s, b) >= (wcols * 2) / 3)
            end = b;
        /* a number the cut would drop goes with its unit: the quote keeps its figures ("you tried to
         * allocate 268435456 bytes"), a few columns past the width */
        if (end < len && s[end] == ' ' && end + 1 < len && s[end + 1] >= '0' && s[end + 1] <= '9') {
            size_t e = end + 1;
            while (e < len && s[e] != ' ')
                e++;
            if (e < len && unit_after(s, e, len))
                for (e++; e < len && s[e] != ' '; e++)
                    ;
            if (textfit_columns(s + end, e - end) <= 24)
                end = e;
        }
        while (end > 0 && s[end - 1] == ' ')
            end--;
        put_span(&k, s, 0, end);
        put(&k, "\xe2\x80\xa6", 3);
        end_line(&k);
        return k.failed ? -1 : 0;
    }
    size_t ind = hanging_indent(s, len);
    if (ind > wcols / 2)
        ind = 4;
    static const char blanks[] = "                                                            ";
    size_t pos = 0, first = 1;
    while (pos < len) {
        size_t room = first ? wcols : wcols - ind;
        if (!first) {
            put(&k, blanks, ind < sizeof blanks - 1 ? ind : sizeof blanks - 1);
            put(&k, k.sgr, k.sgr_n); /* the colour goes on where it was cut */
        }
        size_t end = advance(s, pos, len, room);
        if (end < len && s[end] != ' ') {
            /* the last blank that fits and may break, if the piece keeps some words; else the word
             * runs on to its end: a path or a setting split in two cannot be pasted */
            size_t b = end;
            while (b > pos && !breaks_at(s, b, len))
                b--;
            if (b > pos && has_word(s, pos, b)) {
                end = b;
            } else {
                while (end < len && !breaks_at(s, end, len))
                    end++;
            }
        } else if (end < len && !breaks_at(s, end, len)) {
            size_t b = end; /* a blank between a number and its unit: back to the one before */
            while (b > pos && !breaks_at(s, b, len))
                b--;
            if (b > pos && has_word(s, pos, b))
                end = b;
            else
                while (end < len && !breaks_at(s, end, len))
                    end++;
        }
        size_t stop = end;
        while (stop > pos && stop < len && s[stop - 1] == ' ')
            stop--;
        put_span(&k, s, pos, stop);
        end_line(&k);
        pos = end;
        while (pos < len && s[pos] == ' ')
            pos++;
        first = 0;
    }
    return k.failed ? -1 : 0;
}
