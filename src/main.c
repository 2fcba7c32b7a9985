/* main.c - the oomscan command: argv -> options, output sinks, exit codes. The only place that
 * prints to the terminal or exits. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "oomscan.h"

#define EXIT_NONE 0
#define EXIT_FOUND 1
#define EXIT_TROUBLE 2

static void usage(FILE *f)
{
    fprintf(f,
            "usage: oomscan [options] PATH...      (PATH: file, directory, archive, or - for stdin)\n"
            "\n"
            "Tells why a GPU training job died: reads its logs (plain, gzip, zstd, xz, bzip2, tar, zip;\n"
            "directories recursively) and reports each failure, its pipeline phase, the root cause and\n"
            "what to change.\n"
            "\n"
            "  -f, --format FMT       text (default), json or ndjson\n"
            "  -o, --output FILE      write the report to FILE (atomically) instead of stdout\n"
            "  -j, --jobs N           scan N inputs in parallel (default: all cores)\n"
            "  -v, --verbose          text: list every finding, not only the root causes\n"
            "      --color WHEN       auto (default), always, never; NO_COLOR turns it off\n"
            "      --patterns DIR     add the data files in DIR (a pattern with the same id replaces ours)\n"
            "      --check-patterns [DIR]  validate the database (or DIR alone) and run every sample\n"
            "      --list-patterns    list the loaded patterns\n"
            "      --explain ID       print remediation checklist ID (\"list\" lists them)\n"
            "  -q, --quiet            no messages on stderr about unreadable inputs\n"
            "  -V, --version          print the version\n"
            "  -h, --help             this help\n"
            "\n"
            "Exit status: 0 no failure found, 1 failure(s) found, 2 usage error or unreadable input.\n");
}

/* ---- output sinks ------------------------------------------------------------------------ */

static int write_file(void *ud, const char *data, size_t len)
{
    FILE *f = ud;
    if (fwrite(data, 1, len, f) != len)
        return -1;
    return 0;
}

static int write_ndjson_flush(void *ud, const char *data, size_t len)
{
    FILE *f = ud;
    if (fwrite(data, 1, len, f) != len)
        return -1;
    /* each finding line is complete when written: a shipper reading the pipe sees it now */
    if (len && data[len - 1] == '\n' && fflush(f) != 0)
        return -1;
    return 0;
}

typedef struct {
    oomscan_scan *scan;
    FILE *out;
    int broken;
} stream_ctx;

static void on_input_done(void *ud, size_t index)
{
    (void)index;
    stream_ctx *c = ud;
    if (!c->broken && oomscan_scan_write_ndjson_delta(c->scan, write_ndjson_flush, c->out) != OOMSCAN_OK)
        c->broken = 1;
}

static void print_problem(void *ud, const oomscan_check_problem *p)
{
    (void)ud;
    fprintf(stderr, "%s: %s: %s\n", p->file, p->id, p->message);
}

/* ---- main -------------------------------------------------------------------------------- */

enum { OPT_COLOR = 256, OPT_PATTERNS, OPT_CHECK, OPT_LIST, OPT_EXPLAIN };

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"format", required_argument, NULL, 'f'},   {"output", required_argument, NULL, 'o'},
        {"jobs", required_argument, NULL, 'j'},     {"verbose", no_argument, NULL, 'v'},
        {"quiet", no_argument, NULL, 'q'},          {"version", no_argument, NULL, 'V'},
        {"help", no_argument, NULL, 'h'},           {"color", required_argument, NULL, OPT_COLOR},
        {"colour", required_argument, NULL, OPT_COLOR}, {"patterns", required_argument, NULL, OPT_PATTERNS},
        {"check-patterns", no_argument, NULL, OPT_CHECK}, {"list-patterns", no_argument, NULL, OPT_LIST},
        {"explain", required_argument, NULL, OPT_EXPLAIN}, {NULL, 0, NULL, 0},
    };
    oomscan_output out = {.format = OOMSCAN_FMT_TEXT};
    const char *outfile = NULL, *explain = NULL;
    const char *user_dirs[32];
    size_t n_user = 0;
    int color_mode = 0; /* 0 auto, 1 always, -1 never */
    int check = 0, list = 0, quiet = 0;
    long jobs = 0;
    int c;
    while ((c = getopt_long(argc, argv, "f:o:j:vqVh", longopts, NULL)) != -1) {
        switch (c) {
        case 'f':
            if (strcmp(optarg, "text") == 0)
                out.format = OOMSCAN_FMT_TEXT;
            else if (strcmp(optarg, "json") == 0)
                out.format = OOMSCAN_FMT_JSON;
            else if (strcmp(optarg, "ndjson") == 0)
                out.format = OOMSCAN_FMT_NDJSON;
            else {
                fprintf(stderr, "oomscan: unknown format '%s' (text, json or ndjson)\n", optarg);
                return EXIT_TROUBLE;
            }
            break;
        case 'o': outfile = optarg; break;
        case 'j': {
            char *end;
            jobs = strtol(optarg, &end, 10);
            if (*end || jobs < 1 || jobs > 64) {
                fprintf(stderr, "oomscan: -j needs a number from 1 to 64\n");
                return EXIT_TROUBLE;
            }
            break;
        }
        case 'v': out.verbose = 1; break;
        case 'q': quiet = 1; break;
        case 'V':
            printf("oomscan %s (schema %s, gzip: %s)\n", OOMSCAN_VERSION, OOMSCAN_SCHEMA, oomscan_gzip_backend());
            return EXIT_NONE;
        case 'h': usage(stdout); return EXIT_NONE;
        case OPT_COLOR:
            if (strcmp(optarg, "always") == 0)
                color_mode = 1;
            else if (strcmp(optarg, "never") == 0)
                color_mode = -1;
            else if (strcmp(optarg, "auto") == 0)
                color_mode = 0;
            else {
                fprintf(stderr, "oomscan: --color takes auto, always or never\n");
                return EXIT_TROUBLE;
            }
            break;
        case OPT_PATTERNS:
            if (n_user == sizeof user_dirs / sizeof *user_dirs) {
                fprintf(stderr, "oomscan: too many --patterns\n");
                return EXIT_TROUBLE;
            }
            user_dirs[n_user++] = optarg;
            break;
        case OPT_CHECK: check = 1; break;
        case OPT_LIST: list = 1; break;
        case OPT_EXPLAIN: explain = optarg; break;
        default: usage(stderr); return EXIT_TROUBLE;
        }
    }
    /* A closed pipe (| head) ends the program quietly through a failed write, not a signal. */
    signal(SIGPIPE, SIG_IGN);

    oomscan_diag diag = {0};
    oomscan_db *db = NULL;
    oomscan_status st;
    /* --check-patterns DIR checks that folder alone; without DIR, the built-in database. */
    if (check && optind < argc)
        st = oomscan_db_new_empty(&db, &diag);
    else
        st = oomscan_db_new(&db, &diag);
    for (size_t i = 0; !st && i < n_user; i++)
        st = oomscan_db_add_dir(db, user_dirs[i], &diag);
    if (!st && check)
        for (int i = optind; !st && i < argc; i++)
            st = oomscan_db_add_dir(db, argv[i], &diag);
    if (!st)
        st = oomscan_db_compile(db, &diag);
    if (st) {
        fprintf(stderr, "oomscan: %s: %s\n", diag.where[0] ? diag.where : "patterns", diag.msg);
        oomscan_db_free(db);
        return EXIT_TROUBLE;
    }
    if (check) {
        size_t runs = 0;
        size_t problems = oomscan_db_check(db, print_problem, NULL, &runs);
        printf("%zu patterns, %zu checklists, %zu samples run: %zu problem(s)\n", oomscan_db_pattern_count(db),
               oomscan_db_checklist_count(db), runs, problems);
        oomscan_db_free(db);
        return problems ? EXIT_TROUBLE : EXIT_NONE;
    }
    if (list) {
        for (size_t i = 0; i < oomscan_db_pattern_count(db); i++) {
            oomscan_pattern_info pi;
            oomscan_db_pattern_info(db, i, &pi);
            printf("%-44s %-22s %s\n", pi.id, pi.class_name, pi.file);
        }
        oomscan_db_free(db);
        return EXIT_NONE;
    }
    if (explain) {
        int rc = EXIT_NONE;
        if (strcmp(explain, "list") == 0) {
            for (size_t i = 0; i < oomscan_db_checklist_count(db); i++)
                printf("%s\n", oomscan_db_checklist_id(db, i));
        } else if (oomscan_explain(db, explain, write_file, stdout, &diag) != OOMSCAN_OK) {
            if (errno != EPIPE) /* a closed pipe is the reader's choice */
                fprintf(stderr, "oomscan: %s: %s\n", diag.where, diag.msg);
            rc = EXIT_TROUBLE;
        }
        oomscan_db_free(db);
        return rc;
    }

    const char *stdin_only[] = {"-"};
    const char *const *paths = (const char *const *)argv + optind;
    size_t n_paths = (size_t)(argc - optind);
    if (n_paths == 0) {
        if (isatty(STDIN_FILENO)) {
            usage(stderr);
            oomscan_db_free(db);
            return EXIT_TROUBLE;
        }
        paths = stdin_only; /* `... | oomscan` reads the pipe */
        n_paths = 1;
    }

    /* Output goes to a temporary file beside the target and is renamed into place at the end, so a
     * reader never sees half a report. */
    FILE *dest = stdout;
    char *tmpname = NULL;
    if (outfile) {
        size_t len = strlen(outfile) + 16;
        tmpname = malloc(len);
        if (!tmpname) {
            oomscan_db_free(db);
            return EXIT_TROUBLE;
        }
        snprintf(tmpname, len, "%s.XXXXXX", outfile);
        int fd = mkstemp(tmpname);
        if (fd < 0 || !(dest = fdopen(fd, "w"))) {
            fprintf(stderr, "oomscan: %s: cannot create: %s\n", outfile, strerror(errno));
            if (fd >= 0) {
                close(fd);
                unlink(tmpname);
            }
            free(tmpname);
            oomscan_db_free(db);
            return EXIT_TROUBLE;
        }
    }
    const char *no_color = getenv("NO_COLOR");
    out.color = color_mode == 1 || (color_mode == 0 && !outfile && isatty(STDOUT_FILENO) && !(no_color && *no_color));
    if (no_color && *no_color && color_mode != 1)
        out.color = 0;

    stream_ctx sctx = {.out = dest};
    oomscan_options opt = {.jobs = (unsigned)jobs};
    if (out.format == OOMSCAN_FMT_NDJSON) {
        opt.on_input = on_input_done;
        opt.ud = &sctx;
    }
    oomscan_scan *scan = NULL;
    st = oomscan_scan_new(&scan, db, &opt, &diag);
    sctx.scan = scan;
    if (!st)
        st = oomscan_scan_paths(scan, paths, n_paths, &diag);
    int rc = EXIT_NONE;
    if (st) {
        fprintf(stderr, "oomscan: %s\n", diag.msg);
        rc = EXIT_TROUBLE;
    }
    if (scan) {
        for (size_t i = 0; i < oomscan_scan_input_errors(scan); i++)
            if (!quiet)
                fprintf(stderr, "oomscan: %s\n", oomscan_scan_input_error(scan, i));
        oomscan_status wst = OOMSCAN_OK;
        if (!sctx.broken)
            wst = oomscan_scan_write(scan, &out, out.format == OOMSCAN_FMT_NDJSON ? write_ndjson_flush : write_file, dest);
        if (!rc && oomscan_scan_finding_count(scan) > 0)
            rc = EXIT_FOUND;
        if (oomscan_scan_input_errors(scan) > 0)
            rc = EXIT_TROUBLE;
        if (fflush(dest) != 0 || wst != OOMSCAN_OK || sctx.broken) {
            /* a closed pipe is the reader's choice, not an error worth a message */
            if (errno != EPIPE && outfile) {
                fprintf(stderr, "oomscan: %s: write failed: %s\n", outfile, strerror(errno));
                rc = EXIT_TROUBLE;
            }
        }
    }
    if (outfile) {
        int bad = fclose(dest) != 0;
        if (bad || rename(tmpname, outfile) != 0) {
            fprintf(stderr, "oomscan: %s: cannot write: %s\n", outfile, strerror(errno));
            unlink(tmpname);
            rc = EXIT_TROUBLE;
        }
        free(tmpname);
    }
    oomscan_scan_free(scan);
    oomscan_db_free(db);
    return rc;
}
