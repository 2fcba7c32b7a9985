/* timefmt.h - timestamps in the common log formats, normalised.
 * Ownership: plain values, no allocation. */
#ifndef OOMSCAN_TIMEFMT_H
#define OOMSCAN_TIMEFMT_H

#include <stddef.h>

typedef struct {
    int has_date;    /* year, month and day known */
    int has_md;      /* month and day known, year not (glog, syslog) */
    int has_clock;   /* hour:min:sec known */
    int uptime_only; /* dmesg "[12345.678]": seconds since boot, no wall clock */
    int year, month, day, hour, min;
    double sec;
    double uptime;
    double key; /* for ordering: seconds, comparable between stamps of the same kind */
} timefmt;

/* Parse a timestamp in any supported form (ISO 8601, Python logging, glog "MMDD hh:mm:ss.uuuuuu",
 * syslog "May  1 12:00:00", dmesg uptime "12345.678901" and wall clock "Mon May  1 12:00:00 2024",
 * Slurm "2024-05-01T12:00:00.123"; surrounding brackets are ignored). Returns 0 on success. */
int timefmt_parse(const char *s, size_t n, timefmt *out);

/* 1 when s[0..n) may hold a stamp timefmt_parse accepts (somewhere in it), 0 when it surely holds
 * none: every accepted form has a digit followed by ':', '.', '-', '/' or 'x', or a '.' followed by
 * a digit ("12:00:00", "2024-05-01", "12345.678", ".5", "0x1.8p3"). A line without any such pair need not be
 * searched for a stamp at all: most lines of a dump of settings. Vectorised; no allocation. */
int timefmt_may_hold(const char *s, size_t n);

#define TIMEFMT_INCOMPARABLE 2

/* Order two stamps: -1, 0 or 1, or TIMEFMT_INCOMPARABLE when they cannot be ordered (uptime against
 * wall clock, a bare clock against a dated stamp). A stamp without a year (glog, syslog) takes the year
 * of a dated stamp it is compared with, and two yearless stamps are compared within one year. Uptimes
 * compare with uptimes only; whether both come from the same boot is the caller's business. */
int timefmt_cmp(const timefmt *a, const timefmt *b);

/* As timefmt_cmp, but stamps less than `slack` seconds apart compare equal (0). */
int timefmt_cmp_slack(const timefmt *a, const timefmt *b, double slack);

/* Normalised text: "2024-05-01T12:00:00.123" (date known), "05-01T12:00:00" (no year),
 * "uptime+12345.678s" (dmesg). */
void timefmt_format(const timefmt *t, char *buf, size_t cap);

#endif
