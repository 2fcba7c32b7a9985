/* safe.h - output that stays valid and inert whatever bytes the logs held: JSON strings made valid
 * UTF-8 (invalid bytes become U+FFFD, and for names a consumer must match byte for byte - "path",
 * "member" - the raw form is kept beside them as an escaped "<key>_raw"), and text for a terminal with
 * control characters escaped (a log line holding ESC ] 0;title BEL or ESC [2J must not reach it raw).
 *
 * Ownership: safe_json changes the tree in place; safe_text fills the caller's buffer. */
#ifndef OOMSCAN_SAFE_H
#define OOMSCAN_SAFE_H

#include <stddef.h>

#include <cjson/cJSON.h>

/* Length of the valid UTF-8 sequence at s[0..n) (1 to 4), or 0 when s[0] does not start one. */
size_t safe_utf8_len(const unsigned char *s, size_t n);

/* Make every string in the tree valid UTF-8; a "path" or "member" string that was not gets a sibling
 * "path_raw" / "member_raw" holding its bytes with each invalid one written \xNN (and \ as \\).
 * Returns 0, -1 out of memory (the tree is then still valid, possibly without some _raw keys). */
int safe_json(cJSON *tree);

/* `s` for a terminal, into buf (always terminated, cut at a character when long): control characters
 * (C0 but tab, DEL, C1) and invalid UTF-8 bytes written \xNN, a backslash kept as is. Returns buf. */
char *safe_text(char *buf, size_t cap, const char *s);

#endif
