/* main.c - the oomscan command: argv -> options, output sinks, exit codes. The only place that
 * prints to the terminal or exits. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "oomscan.h"
#include "progress.h"
#include "summary_cmd.h"

#define EXIT_NONE 0
#define EXIT_FOUND 1
#define EXIT_TROUBLE 2

/* One screen (at most 24 lines of at most 80 columns) listing every option; docs/oomscan.1 has the
 * rest. tests/conventions.sh holds it to that. */
static void usage(FILE *f)
{
    fputs("usage: oomscan [OPTION]... [PATH]...  PATH: file, directory, archive, - (stdin)\n"
          "       oomscan merge [OPTION]... [NDJSON]...  combine per-node NDJSON output\n"
          "       oomscan summary [--format text|json] INPUT...  failures across many jobs\n"
          "Tells why a GPU training job died, from its logs. More: man oomscan.\n"
          "\n"
          "  -f, --format FMT        text, json, ndjson, ticket, markdown or openmetrics\n"
          "  -o, --output FILE       write the report to FILE, atomically\n"
          "  -j, --jobs N            scan N inputs in parallel (default: all cores)\n"
          "  -v, --verbose           text: every finding, not only the root causes\n"
          "  -q, --quiet             no messages about unreadable inputs\n"
          "      --color WHEN        auto (default), always or never; NO_COLOR: never\n"
          "      --job-id ID         the job's id, for findings whose logs state none\n"
          "      --follow FILE       follow FILE as it grows (NDJSON as findings complete)\n"
          "      --state FILE        report only what earlier runs with FILE did not\n"
          "      --limit NAME=N      bound the work, e.g. bytes=64G, ratio=1000 (man page)\n"
          "      --ticket-style S    plain, github, jira, jira-cloud; implies -f ticket\n"
          "      --jira-project KEY  Jira project key (default: $OOMSCAN_JIRA_PROJECT)\n"
          "      --patterns DIR      add the pattern data files in DIR\n"
          "      --check-patterns [DIR]  check the database (or DIR alone), run samples\n"
          "      --list-patterns     list the loaded patterns\n"
          "      --explain ID        print remediation checklist ID (\"list\" lists them)\n"
          "  -V, --version           print the version\n"
          "  -h, --help              print this help\n"
          "Exit: 0 no failure found, 1 failure(s) found, 2 usage or unreadable input.\n",
          f);
}

/* ---- output sinks ------------------------------------------------------------------------ */

/* errno of the first failed write of the report: later calls may change errno before it is shown */
static int g_write_errno;

static int write_failed_now(void)
{
    if (!g_write_errno)
        g_write_errno = errno ? errno : EIO;
    return -1;
}

static int write_file(void *ud, const char *data, size_t len)
{
    FILE *f = ud;
    if (fwrite(data, 1, len, f) != len)
        return write_failed_now();
    return 0;
}

static int write_ndjson_flush(void *ud, const char *data, size_t len)
{
    FILE *f = ud;
    if (fwrite(data, 1, len, f) != len)
        return write_failed_now();
    /* each finding line is complete when written: a shipper reading the pipe sees it now */
    if (len && data[len - 1] == '\n' && fflush(f) != 0)
        return write_failed_now();
    return 0;
}

/* -o FILE: the report goes to a temporary file beside FILE, made with the mode a plain create would
 * give (0666 less the umask; mkstemp's is 0600), and replaces FILE only once complete and on disk. */
static FILE *report_open(const char *outfile, char **tmpname)
{
    size_t len = strlen(outfile) + 16;
    if (!(*tmpname = malloc(len)))
        return NULL;
    snprintf(*tmpname, len, "%s.XXXXXX", outfile);
    int fd = mkstemp(*tmpname);
    mode_t um = umask(0);
    umask(um);
    FILE *f = NULL;
    if (fd >= 0 && fchmod(fd, 0666 & ~um) == 0)
        f = fdopen(fd, "w");
    if (!f) {
        int e = errno;
        if (fd >= 0) {
            close(fd);
            unlink(*tmpname);
        }
        free(*tmpname);
        *tmpname = NULL;
        errno = e;
    }
    return f;
}

/* Finish -o: `ok` says the report was written whole. Then it is synced and renamed over FILE (and
 * the folder synced, so the rename survives a crash); otherwise FILE, if any, is left as it was. */
static int report_close(FILE *f, const char *outfile, char *tmpname, int ok)
{
    int e = 0;
    if (fflush(f) != 0 || fsync(fileno(f)) != 0)
        e = errno;
    if (fclose(f) != 0 && !e)
        e = errno;
    if (ok && !e && rename(tmpname, outfile) != 0)
        e = errno;
    if (!ok || e) {
        if (ok)
            fprintf(stderr, "oomscan: %s: cannot write: %s; the previous report is unchanged\n", outfile, strerror(e));
        unlink(tmpname);
        free(tmpname);
        return -1;
    }
    char *dir = strdup(outfile);
    int dfd = dir ? open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (dfd >= 0) {
        (void)fsync(dfd); /* best effort: some file systems refuse it on a folder */
        close(dfd);
    }
    free(dir);
    free(tmpname);
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

/* Long options without a short form. */
enum {
    OPT_COLOR = 256,
    OPT_PATTERNS,
    OPT_CHECK,
    OPT_LIST,
    OPT_EXPLAIN,
    OPT_TICKET_STYLE,
    OPT_JIRA_PROJECT,
    OPT_JOB_ID,
    OPT_FOLLOW,
    OPT_STATE,
    OPT_LIMIT,
};

/* --limit NAME=N[KMGT], repeatable, or NAME=N,NAME=N. Returns 0, or -1 with a message printed. */
static int parse_limit(const char *arg, oomscan_limits *l)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", arg);
    for (char *save = NULL, *it = strtok_r(buf, ",", &save); it; it = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(it, '=');
        if (!eq)
            goto bad;
        *eq = '\0';
        char *end;
        errno = 0;
        unsigned long long v = strtoull(eq + 1, &end, 10);
        unsigned shift = *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : *end == 'T' ? 40 : 0;
        if (shift)
            end++;
        if (errno || end == eq + 1 || *end || eq[1] == '-' || v == 0 || v > (UINT64_MAX >> shift))
            goto bad;
        uint64_t n = (uint64_t)v << shift;
        if (strcmp(it, "bytes") == 0)
            l->max_bytes = n;
        else if (strcmp(it, "ratio") == 0)
            l->max_ratio = n;
        else if (strcmp(it, "members") == 0)
            l->max_members = n;
        else if (strcmp(it, "depth") == 0 && n <= 16)
            l->max_depth = (unsigned)n;
        else if (strcmp(it, "findings") == 0)
            l->max_findings = n;
        else if (strcmp(it, "regex") == 0)
            l->regex_budget = n;
        else if (strcmp(it, "state") == 0)
            l->max_state_bytes = n;
        else if (strcmp(it, "lock-wait") == 0 && n <= 86400)
            l->lock_wait_s = (unsigned)n;
        else
            goto bad;
    }
    return 0;
bad:
    fprintf(stderr, "oomscan: --limit '%s': takes NAME=N (N > 0, suffix K, M, G or T), NAME one of bytes, ratio, "
                    "members, depth (up to 16), findings, regex, state, lock-wait (seconds, up to 86400)\n",
            arg);
    return -1;
}

/* SIGTERM / SIGINT: stop reading, write what was found (the inputs not finished marked so), exit as
 * usual. A second one ends the program at once (SA_RESETHAND). */
static oomscan_scan *volatile g_streaming;

static void on_stop_signal(int sig)
{
    (void)sig;
    oomscan_scan_cancel(g_streaming);
}

int main(int argc, char **argv)
{
    /* One option a line; every one is listed by usage(), docs/oomscan.1 and the bash completion
     * (tests/manpage.sh checks). "colour" is an alias and listed nowhere. */
    static const struct option longopts[] = {
        {"format", required_argument, NULL, 'f'},
        {"output", required_argument, NULL, 'o'},
        {"jobs", required_argument, NULL, 'j'},
        {"verbose", no_argument, NULL, 'v'},
        {"quiet", no_argument, NULL, 'q'},
        {"version", no_argument, NULL, 'V'},
        {"help", no_argument, NULL, 'h'},
        {"color", required_argument, NULL, OPT_COLOR},
        {"colour", required_argument, NULL, OPT_COLOR},
        {"patterns", required_argument, NULL, OPT_PATTERNS},
        {"check-patterns", no_argument, NULL, OPT_CHECK},
        {"list-patterns", no_argument, NULL, OPT_LIST},
        {"explain", required_argument, NULL, OPT_EXPLAIN},
        {"ticket-style", required_argument, NULL, OPT_TICKET_STYLE},
        {"jira-project", required_argument, NULL, OPT_JIRA_PROJECT},
        {"job-id", required_argument, NULL, OPT_JOB_ID},
        {"follow", required_argument, NULL, OPT_FOLLOW},
        {"state", required_argument, NULL, OPT_STATE},
        {"limit", required_argument, NULL, OPT_LIMIT},
        {NULL, 0, NULL, 0},
    };
    oomscan_output out = {.format = OOMSCAN_FMT_TEXT};
    const char *outfile = NULL, *explain = NULL, *job_id = NULL;
    const char *user_dirs[32];
    size_t n_user = 0;
    int color_mode = 0; /* 0 auto, 1 always, -1 never */
    int check = 0, list = 0, quiet = 0;
    long jobs = 0;
    oomscan_limits limits = {0};
    const char *follow = NULL, *state_file = NULL;
    if (argc > 1 && strcmp(argv[1], "summary") == 0)
        return summary_main(argc - 1, argv + 1);
    /* `oomscan merge ...`: the inputs are NDJSON from other runs; output NDJSON unless told otherwise */
    int merge_mode = argc > 1 && strcmp(argv[1], "merge") == 0, format_given = 0;
    if (merge_mode) {
        argv[1] = argv[0];
        argc--;
        argv++;
    }
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
            else if (strcmp(optarg, "ticket") == 0)
                out.format = OOMSCAN_FMT_TICKET;
            else if (strcmp(optarg, "markdown") == 0 || strcmp(optarg, "md") == 0)
                out.format = OOMSCAN_FMT_MARKDOWN;
            else if (strcmp(optarg, "openmetrics") == 0)
                out.format = OOMSCAN_FMT_OPENMETRICS;
            else {
                fprintf(stderr, "oomscan: unknown format '%s' (text, json, ndjson, ticket, markdown or openmetrics)\n", optarg);
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
        case OPT_TICKET_STYLE:
            if (strcmp(optarg, "plain") == 0)
                out.ticket_style = OOMSCAN_TICKET_PLAIN;
            else if (strcmp(optarg, "github") == 0)
                out.ticket_style = OOMSCAN_TICKET_GITHUB;
            else if (strcmp(optarg, "jira") == 0)
                out.ticket_style = OOMSCAN_TICKET_JIRA;
            else if (strcmp(optarg, "jira-cloud") == 0)
                out.ticket_style = OOMSCAN_TICKET_JIRA_CLOUD;
            else {
                fprintf(stderr, "oomscan: --ticket-style takes plain, github, jira or jira-cloud\n");
                return EXIT_TROUBLE;
            }
            out.format = OOMSCAN_FMT_TICKET;
            break;
        case OPT_JIRA_PROJECT: out.jira_project = optarg; break;
        case OPT_JOB_ID:
            if (!*optarg || strlen(optarg) > 31) {
                fprintf(stderr, "oomscan: --job-id takes 1 to 31 characters\n");
                return EXIT_TROUBLE;
            }
            job_id = optarg;
            break;
        case OPT_FOLLOW: follow = optarg; break;
        case OPT_STATE: state_file = optarg; break;
        case OPT_LIMIT:
            if (parse_limit(optarg, &limits) != 0)
                return EXIT_TROUBLE;
            break;
        default: usage(stderr); return EXIT_TROUBLE;
        }
        if (c == 'f' || c == OPT_TICKET_STYLE)
            format_given = 1;
    }
    if (merge_mode && !format_given)
        out.format = OOMSCAN_FMT_NDJSON;
    if ((follow || state_file) && (merge_mode || (out.format != OOMSCAN_FMT_NDJSON))) {
        fprintf(stderr, "oomscan: --follow and --state go with --format ndjson (and not with merge)\n");
        return EXIT_TROUBLE;
    }
    if (follow && (state_file || optind < argc)) {
        fprintf(stderr, "oomscan: --follow FILE reads that one file: no other PATH, no --state\n");
        return EXIT_TROUBLE;
    }
    if (out.format == OOMSCAN_FMT_TICKET &&
        (out.ticket_style == OOMSCAN_TICKET_JIRA || out.ticket_style == OOMSCAN_TICKET_JIRA_CLOUD)) {
        if (!out.jira_project)
            out.jira_project = getenv("OOMSCAN_JIRA_PROJECT");
        if (!out.jira_project || !*out.jira_project) {
            fprintf(stderr, "oomscan: --ticket-style jira needs --jira-project KEY or OOMSCAN_JIRA_PROJECT\n");
            return EXIT_TROUBLE;
        }
        const char *type = getenv("OOMSCAN_JIRA_ISSUETYPE");
        out.jira_issuetype = type && *type ? type : NULL;
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
    if (n_paths == 0 && !follow) {
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
    if (outfile && !(dest = report_open(outfile, &tmpname))) {
        fprintf(stderr, "oomscan: %s: cannot create: %s\n", outfile, strerror(errno));
        oomscan_db_free(db);
        return EXIT_TROUBLE;
    }
    const char *no_color = getenv("NO_COLOR");
    out.color = color_mode == 1 || (color_mode == 0 && !outfile && isatty(STDOUT_FILENO) && !(no_color && *no_color));
    if (no_color && *no_color && color_mode != 1)
        out.color = 0;

    stream_ctx sctx = {.out = dest};
    oomscan_options opt = {.jobs = (unsigned)jobs, .job_id = job_id, .limits = limits};
    /* a progress line for a person watching a long scan: never into a pipe, a file or a stream */
    int show_progress = !quiet && !follow && !merge_mode && isatty(STDERR_FILENO);
    if (show_progress)
        opt.on_progress = progress_update;
    if (out.format == OOMSCAN_FMT_NDJSON) {
        opt.on_input = on_input_done;
        opt.ud = &sctx;
    }
    oomscan_scan *scan = NULL;
    oomscan_state *state = NULL;
    st = oomscan_scan_new(&scan, db, &opt, &diag);
    sctx.scan = scan;
    /* A live stream (--follow, or NDJSON from a pipe): records go out as findings complete. */
    struct stat in_sb;
    int live = follow || (out.format == OOMSCAN_FMT_NDJSON && !merge_mode && !state_file && n_paths == 1 &&
                          strcmp(paths[0], "-") == 0 && fstat(STDIN_FILENO, &in_sb) == 0 && !S_ISREG(in_sb.st_mode));
    if (!st && state_file) {
        st = oomscan_state_open_limited(&state, state_file, &limits, &diag);
        if (!st && oomscan_state_warning(state) && !quiet)
            fprintf(stderr, "oomscan: %s\n", oomscan_state_warning(state));
        if (!st)
            st = oomscan_scan_use_state(scan, state);
    }
    if (!st && !merge_mode) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_stop_signal; /* no SA_RESTART: a blocked read returns and sees the stop */
        sa.sa_flags = SA_RESETHAND;
        sigemptyset(&sa.sa_mask);
        g_streaming = scan;
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGINT, &sa, NULL);
    }
    if (!st && merge_mode) {
        st = oomscan_scan_merge(scan, paths, n_paths, &diag);
    } else if (!st && live) {
        st = oomscan_scan_stream(scan, follow ? follow : "-", follow != NULL, 0, write_ndjson_flush, dest, &diag);
        if (st == OOMSCAN_ERR_IO) {
            sctx.broken = 1; /* the reader went away */
            st = OOMSCAN_OK;
        }
    } else if (!st) {
        if (show_progress)
            progress_begin(stderr, paths, n_paths);
        st = oomscan_scan_paths(scan, paths, n_paths, &diag);
        if (show_progress)
            progress_end();
    }
    int rc = EXIT_NONE, report_out = 0, write_ok = 0;
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
        if (fflush(dest) != 0)
            write_failed_now();
        int write_failed = g_write_errno || wst != OOMSCAN_OK || sctx.broken;
        /* a closed pipe is the reader's choice, not an error worth a message; a full disk is */
        if (write_failed && g_write_errno != EPIPE) {
            fprintf(stderr, "oomscan: %s: write failed: %s%s\n", outfile ? outfile : "standard output",
                    strerror(g_write_errno ? g_write_errno : EIO),
                    outfile ? "; the previous report is unchanged" : "");
            rc = EXIT_TROUBLE;
        }
        write_ok = !write_failed;
        /* The state moves on only once the report is out: a lost report is reported again next time. */
        report_out = !st && !write_failed;
        if (state && report_out && !outfile && oomscan_state_save(state, scan, &diag) != OOMSCAN_OK) {
            fprintf(stderr, "oomscan: %s: %s\n", diag.where, diag.msg);
            rc = EXIT_TROUBLE;
        }
    }
    if (outfile && report_close(dest, outfile, tmpname, write_ok) != 0) {
        rc = EXIT_TROUBLE;
        report_out = 0;
    }
    if (state && outfile && report_out && oomscan_state_save(state, scan, &diag) != OOMSCAN_OK) {
        fprintf(stderr, "oomscan: %s: %s\n", diag.where, diag.msg);
        rc = EXIT_TROUBLE;
    }
    oomscan_state_free(state);
    g_streaming = NULL;
    oomscan_scan_free(scan);
    oomscan_db_free(db);
    return rc;
}
