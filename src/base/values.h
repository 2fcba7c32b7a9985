/* values.h - turning captured text into typed values: sizes with units into bytes, integers, numbers.
 * Ownership: functions return new cJSON items owned by the caller (or NULL when out of memory). */
#ifndef OOMSCAN_VALUES_H
#define OOMSCAN_VALUES_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

/* Parse a size such as "20.00 MiB", "1.5GB", "0 bytes", "512 KiB", "4kB", "123" into bytes.
 * KB/MB/GB/TB and KiB/... are powers of 1024, as PyTorch, the kernel and Slurm mean them.
 * `default_unit` (may be NULL) applies when the text has no unit. Returns 0 on success. */
int values_parse_size(const char *s, size_t n, const char *default_unit, double *bytes);

/* Convert capture `name` = text[0..n) into a JSON value by the naming rules of docs/data-formats.md:
 * `*_bytes` -> integer bytes, plain integer -> integer, decimal -> number, else string.
 * `unit` is the pattern's declared unit for this capture or NULL. */
cJSON *values_convert(const char *name, const char *text, size_t n, const char *unit);

/* Format bytes for people: "12.8 GiB", "512 MiB", "0 B". `buf` gets at most `cap` bytes. */
void values_human_bytes(double bytes, char *buf, size_t cap);

#endif
