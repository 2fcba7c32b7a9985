#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* scandir, alphasort, strdup, fileno */
#endif
/* summary_cmd.c - `oomscan summary`: the fleet view over many runs' NDJSON (or logs scanned here).
 *
 * An input that holds oomscan NDJSON (a file whose first record is a JSON object, or a folder of
 * *.ndjson such as the Slurm epilog's spool) is summarised as it is; any other input is a log, and all
 * such logs are scanned together first, as `oomscan --format ndjson LOG...` would. */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "oomscan.h"
#include "oomscan_summary.h"
#include "opterr.h"
#include "summary_cmd.h"
#include "membuf.h"

static int write_stdout(void *ud, const char *data, size_t len)
{
    (void)ud;
    return fwrite(data, 1, len, stdout) != len;
}

/* Read all of `f` into `b` (cleared first). */
static int slurp(FILE *f, membuf *b)
{
    char chunk[65536];
    size_t n;
    b->len = 0;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        if (membuf_write(b, chunk, n))
            return -1;
    return ferror(f) ? -1 : 0;
}

/* NDJSON of oomscan when the first non-blank byte opens a JSON object. */
static int looks_ndjson(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    int c;
    while ((c = fgetc(f)) == ' ' || c == '\n' || c == '\r' || c == '\t')
        ;
    fclose(f);
    return c == '{';
}

typedef struct {
    oomscan_summary *sum;
    membuf buf;
    int rc;
} ctx_t;

static void add_file(ctx_t *c, const char *path, FILE *f, time_t mtime)
{
    oomscan_diag d = {0};
    if (slurp(f, &c->buf)) {
        fprintf(stderr, "oomscan summary: %s: %s\n", path, strerror(errno ? errno : EIO));
        c->rc = 2;
        return;
    }
    oomscan_status st = oomscan_summary_add_ndjson(c->sum, path, c->buf.data ? c->buf.data : "", c->buf.len, mtime, &d);
    if (st != OOMSCAN_OK) {
        fprintf(stderr, "oomscan summary: %s: %s\n", d.where[0] ? d.where : path, d.msg);
        c->rc = 2;
    }
}

static void add_path(ctx_t *c, const char *path)
{
    struct stat sb;
    FILE *f = fopen(path, "rb");
    if (!f || fstat(fileno(f), &sb) != 0) {
        fprintf(stderr, "oomscan summary: %s: %s\n", path, strerror(errno));
        if (f)
            fclose(f);
        c->rc = 2;
        return;
    }
    add_file(c, path, f, sb.st_mtime);
    fclose(f);
}

typedef struct {
    char **v;
    size_t n;
} list_t;

static void list_add(list_t *l, const char *path)
{
    char **v = realloc(l->v, (l->n + 1) * sizeof *v);
    if (v) {
        l->v = v;
        if ((v[l->n] = strdup(path)))
            l->n++;
    }
}

/* Sort an input into oomscan output (NDJSON or a JSON document) or logs; folders are walked in name
 * order, regular files only (a FIFO or device in a spool folder must not block the summary), and
 * symlinked folders inside them are not followed. */
static void classify(const char *path, list_t *json, list_t *logs, int depth)
{
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode) || depth > 16) {
        list_add(S_ISREG(sb.st_mode) && looks_ndjson(path) ? json : logs, path);
        return;
    }
    struct dirent **ents;
    int k = scandir(path, &ents, NULL, alphasort);
    for (int i = 0; i < k; i++) {
        char sub[4096];
        struct stat eb;
        /* a symlinked folder is not followed, as the scan does not: two links back to "." walked 2^16
         * folders, three never ended; a symlinked file is read */
        if (ents[i]->d_name[0] != '.' &&
            snprintf(sub, sizeof sub, "%s/%s", path, ents[i]->d_name) < (int)sizeof sub && lstat(sub, &eb) == 0 &&
            (S_ISDIR(eb.st_mode) || S_ISREG(eb.st_mode) || (S_ISLNK(eb.st_mode) && stat(sub, &eb) == 0 && S_ISREG(eb.st_mode))))
            classify(sub, json, logs, depth + 1);
        free(ents[i]);
    }
    if (k >= 0)
        free(ents);
}

static void usage(FILE *f)
{
    fputs("Usage: oomscan summary [--format text|json] INPUT...\n"
          "Count failures across many jobs: by class, phase and framework, and the fingerprints that\n"
          "recur across jobs. INPUT: oomscan NDJSON (a file, a folder of *.ndjson such as the epilog's\n"
          "spool, - for stdin) or logs, which are scanned first.\n",
          f);
}

/* long: the summary subcommand's options, inputs and exit status in one place, as main's. */
int summary_main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"format", required_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    oomscan_summary_format fmt = OOMSCAN_SUMMARY_TEXT;
    int opt;
    optind = 1;
    opterr = 0; /* cli_option_error says it in one line */
    while ((opt = getopt_long(argc, argv, ":f:h", longopts, NULL)) != -1) {
        if (opt == 'h') {
            usage(stdout);
            return 0;
        }
        if (opt == 'f' && (!strcmp(optarg, "text") || !strcmp(optarg, "json"))) {
            fmt = !strcmp(optarg, "json") ? OOMSCAN_SUMMARY_JSON : OOMSCAN_SUMMARY_TEXT;
            continue;
        }
        if (opt == 'f')
            fprintf(stderr, "oomscan summary: --format takes text or json, not '%s'\n", optarg);
        else
            cli_option_error("oomscan summary", "oomscan summary --help", opt, argv, longopts);
        return 2;
    }
    if (optind >= argc) {
        fprintf(stderr, "oomscan summary: no input (NDJSON files, a spool folder, logs, or - for stdin)\n");
        return 2;
    }

    ctx_t c = {0};
    oomscan_diag d = {0};
    list_t json = {0}, logs = {0};
    if (oomscan_summary_new(&c.sum, &d) != OOMSCAN_OK) {
        fprintf(stderr, "oomscan summary: %s\n", d.msg);
        return 2;
    }
    for (int i = optind; i < argc; i++) {
        if (!strcmp(argv[i], "-"))
            add_file(&c, "(standard input)", stdin, 0);
        else
            classify(argv[i], &json, &logs, 0);
    }
    for (size_t i = 0; i < json.n; i++)
        add_path(&c, json.v[i]);
    size_t n_logs = logs.n;
    char **logv = logs.v;

    if (n_logs) {
        oomscan_db *db = NULL;
        oomscan_scan *scan = NULL;
        oomscan_options so = {0};
        oomscan_output out = {.format = OOMSCAN_FMT_NDJSON};
        membuf nd = {0};
        if (oomscan_db_new(&db, &d) != OOMSCAN_OK || oomscan_db_compile(db, &d) != OOMSCAN_OK ||
            oomscan_scan_new(&scan, db, &so, &d) != OOMSCAN_OK ||
            oomscan_scan_paths(scan, (const char *const *)logv, n_logs, &d) != OOMSCAN_OK ||
            oomscan_scan_write(scan, &out, membuf_write, &nd) != OOMSCAN_OK) {
            fprintf(stderr, "oomscan summary: %s%s%s\n", d.where, d.where[0] ? ": " : "", d.msg);
            c.rc = 2;
        } else {
            for (size_t i = 0; i < oomscan_scan_input_errors(scan); i++) {
                fprintf(stderr, "oomscan summary: %s\n", oomscan_scan_input_error(scan, i));
                c.rc = 2;
            }
            if (oomscan_summary_add_ndjson(c.sum, "(logs)", nd.data ? nd.data : "", nd.len, 0, &d) != OOMSCAN_OK) {
                fprintf(stderr, "oomscan summary: %s\n", d.msg);
                c.rc = 2;
            }
        }
        free(nd.data);
        oomscan_scan_free(scan);
        oomscan_db_free(db);
    }

    if (oomscan_summary_write(c.sum, fmt, write_stdout, NULL, &d) != OOMSCAN_OK || fflush(stdout) != 0) {
        fprintf(stderr, "oomscan summary: %s\n", d.msg[0] ? d.msg : "write failed");
        c.rc = 2;
    }
    for (size_t i = 0; i < json.n; i++)
        free(json.v[i]);
    for (size_t i = 0; i < logs.n; i++)
        free(logs.v[i]);
    free(json.v);
    free(logs.v);
    free(c.buf.data);
    oomscan_summary_free(c.sum);
    return c.rc;
}
