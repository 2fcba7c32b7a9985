/* lines.h - line handling for the scanner: line ends are \n, \r\n and a bare \r (progress bars);
 * counting them over whole buffers (vectorised), finding a line's bounds and the next line, reading a
 * traceback frame line, and making evidence printable. Pure functions over the caller's bytes.
 *
 * Ownership: nothing is allocated; views returned point into the caller's buffer. */
#ifndef OOMSCAN_LINES_H
#define OOMSCAN_LINES_H

#include <stddef.h>
#include <stdint.h>

/* Count line terminators (\n, \r\n as one, bare \r) in p[0..n). A \r at p[n-1] counts as one. */
uint64_t scan_count_lines(const unsigned char *p, size_t n);

/* Bounds [*start, *end) of the line holding b[pos], within [lo, hi). */
void lines_bounds(const unsigned char *b, size_t lo, size_t hi, size_t pos, size_t *start, size_t *end);

/* The line after one ending at b[end] (its terminator skipped), within [0, hi): 1 and its bounds in
 * *ns, *ne, or 0 when no complete line follows. */
int lines_next(const unsigned char *b, size_t hi, size_t end, size_t *ns, size_t *ne);

/* The first terminator at or after pos, within [pos, hi) (hi when none). */
size_t lines_eol(const unsigned char *b, size_t pos, size_t hi);
/* Start of the line holding pos (just after the terminator before it), not before lo. */
size_t lines_bol(const unsigned char *b, size_t lo, size_t pos);

/* Tests: 0 makes scan_count_lines and lines_eol take their SSE2 loops even where the CPU has AVX2
 * (the answers must be the same), 1 restores the default. Not thread-safe: set it before scanning. */
void lines_use_avx2(int on);

/* Read a traceback frame line (`File "PATH", line N, in FUNC`, or faulthandler's `line N in FUNC`),
 * prefixes already stripped: 1 with views of its path and function into msg, 0 if it is none. */
int lines_parse_frame(const char *msg, size_t n, const char **path, size_t *path_len, const char **func,
                      size_t *func_len);

/* 1 if line s[0..n) goes on with the record above it rather than starting one: a traceback's header
 * or an indented line (its frames, a wrapped message), after the prefix a launcher puts on every line
 * ([default0]:, [rank3]: , [1,0]<stderr>:, Ray's "(pid=42) "). A time stamp belongs to its line and
 * to the lines that go on with it, never to a later record (issue 31). */
int lines_continue_record(const char *s, size_t n);

/* Copy in[0..n) into out (cap bytes) as valid UTF-8 without control characters (NUL and binary
 * junk become '?'), trailing spaces dropped. Returns the length written. */
size_t lines_sanitize(const char *in, size_t n, char *out, size_t cap);

#endif
