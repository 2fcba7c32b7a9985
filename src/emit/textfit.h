/* textfit.h - fitting the text report's lines to the terminal: a long line wraps at a blank under its
 * own indent (and bullet), an evidence line is cut at a word with an ellipsis instead, and colour
 * (ANSI SGR sequences, which take no column) is reset before every newline and taken up again on the
 * next piece of a wrapped line, so a pager or a `| head` never shows colour bleeding into the next line.
 *
 * Ownership: nothing is kept; the line is only read, its pieces go to the caller's writer. */
#ifndef OOMSCAN_TEXTFIT_H
#define OOMSCAN_TEXTFIT_H

#include <stddef.h>

#include "oomscan.h"

/* Columns `s[0..len)` takes: SGR sequences none, a UTF-8 character one (wide characters are rare in
 * logs and counted as one). */
size_t textfit_columns(const char *s, size_t len);

/* How a line too long for the width is written. */
enum {
    TEXTFIT_WRAP = 0, /* prose: wrapped at a blank; a word (a path, a setting) or a number with its unit
                       * ("1.50 GiB") is never split: such a piece runs past the width, as ripgrep
                       * prints a long match */
    TEXTFIT_CUT = 1,  /* one line only, cut at a word with "…" (quoted evidence) */
    TEXTFIT_KEEP = 2, /* written whole (a setting or command to paste) */
};

/* Write one logical line `s[0..len)` (no newline in it) as lines of at most `width` columns (at least
 * 20 is used) as `mode` says, each ended by "\n". Returns 0, or -1 when fn refused. */
int textfit_line(const char *s, size_t len, unsigned width, int mode, oomscan_write_fn fn, void *ud);

#endif
