/* main.c - the oomscan command: argv -> options, output sinks, exit codes. The only place that
 * prints to the terminal or exits. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "oomscan.h"
#include "opterr.h"
#include "progress.h"
#include "summary_cmd.h"
#include "membuf.h"

#define EXIT_NONE 0
#define EXIT_FOUND 1
#define EXIT_TROUBLE 2

/* One screen (at most 24 lines of at most 80 columns) listing every option; docs/oomscan.1 has the
 * rest. tests/conventions.sh holds it to that. */
static void usage(FILE *f)
{
    fputs("usage: oomscan [OPTION]... [PATH]...  PATH: file, directory, archive, - (stdin)\n"
          "       oomscan merge [OPTION]... [NDJSON]...;  oomscan summary [-f FMT] INPUT...\n"
          "Tells why a GPU training job died, from its logs. More: man oomscan.\n"
          "  -f, --format FMT      text, json, ndjson, ticket, markdown or openmetrics\n"
          "  -o, --output FILE     write the report to FILE, atomically\n"
          "  -j, --jobs N          scan N inputs in parallel (default: all cores)\n"
          "  -v, --verbose         every finding and input;  -q, --quiet: exit status only\n"
          "      --color WHEN      auto (a terminal, not TERM=dumb), always or never\n"
          "      --no-progress     no progress line on a terminal (shown after a second)\n"
          "      --job-id ID       the job's id, for findings whose logs state none\n"
          "      --label NAME      the name standard input is read under (\"<stdin>\")\n"
          "      --follow FILE     follow FILE as it grows, NDJSON as findings complete\n"
          "      --state FILE      report only what earlier runs with FILE did not\n"
          "      --full-checklist  NDJSON: every step, not only the checklist id\n"
          "      --exclude GLOB    skip files, folders so named; --binary: read binary ones\n"
          "      --max-filesize N  skip files larger than N bytes (suffix K, M, G or T)\n"
          "      --limit NAME=N    bound the work, e.g. bytes=64G, ratio=1000 (man page)\n"
          "      --ticket-style S  plain, github, jira, jira-cloud; implies -f ticket\n"
          "      --jira-project KEY  Jira project key (default: $OOMSCAN_JIRA_PROJECT)\n"
          "      --roots, --class C[,C], --job ID, --since/--until TIME  only those\n"
          "      --patterns DIR  add data files; --check-patterns [DIR], --list-patterns\n"
          "      --explain ID [PATH]  checklist (\"list\" lists them), or finding ID in PATH\n"
          "  -V, --version  print the version;  -h, --help  print this help\n"
          "Exit: 0 no failure found, 1 failure(s) found, 2 trouble or nothing read.\n",
          f);
}

/* ---- output sinks ------------------------------------------------------------------------ */

/* -q: no message either, only the exit status (grep's -q); usage errors are still said */
static int g_quiet;

static void complain(const char *fmt, ...)
{
    if (g_quiet)
        return;
    va_list ap;
    va_start(ap, fmt);
    fputs("oomscan: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

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

/* NDJSON records written by this run: with --state, 1 means "something new" (docs/streaming.md) */
static size_t g_records;

static int write_ndjson_flush(void *ud, const char *data, size_t len)
{
    FILE *f = ud;
    g_records += len && data[len - 1] == '\n';
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
            complain("%s: cannot write: %s; the previous report is unchanged", outfile, strerror(e));
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
    OPT_FULL_CHECKLIST,
    OPT_BINARY,
    OPT_EXCLUDE,
    OPT_MAX_FILESIZE,
    OPT_LABEL,
    OPT_NO_PROGRESS,
    OPT_ROOTS,
    OPT_CLASS,
    OPT_JOB,
    OPT_SINCE,
    OPT_UNTIL,
};

/* N[KMGT] (powers of 1024), N > 0, into *out. Returns 0, or -1. */
static int parse_size(const char *arg, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(arg, &end, 10);
    unsigned shift = *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : *end == 'T' ? 40 : 0;
    if (shift)
        end++;
    if (errno || end == arg || *end || arg[0] == '-' || v == 0 || v > (UINT64_MAX >> shift))
        return -1;
    *out = (uint64_t)v << shift;
    return 0;
}

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
        uint64_t n;
        if (parse_size(eq + 1, &n) != 0)
            goto bad;
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
        else if (strcmp(it, "record") == 0)
            l->max_record_bytes = n;
        else
            goto bad;
    }
    return 0;
bad:
    fprintf(stderr, "oomscan: --limit '%s': takes NAME=N (N > 0, suffix K, M, G or T), NAME one of bytes, ratio, "
                    "members, depth (up to 16), findings, regex, state, lock-wait (seconds, up to 86400), record\n",
            arg);
    return -1;
}

/* SIGTERM / SIGINT: stop reading, write what was found (the inputs not finished marked so), exit as
 * usual. A second one ends the program at once (SA_RESETHAND). */
static oomscan_scan *volatile g_streaming;

/* The -o temporary file while it exists; a signal before the scan begins (waiting for the --state
 * lock), or during a merge, removes it and ends the run: there is nothing to write yet. */
static char *volatile g_tmpname;

static void on_stop_signal(int sig)
{
    (void)sig;
    if (g_streaming) {
        oomscan_scan_cancel(g_streaming);
        return;
    }
    if (g_tmpname)
        unlink(g_tmpname); /* async-signal-safe, as _exit is */
    _exit(EXIT_TROUBLE);
}

/* What the command line asks for. */
typedef struct {
    oomscan_output out;
    const char *outfile, *explain, *job_id, *follow, *state_file, *label;
    const char *user_dirs[32];
    size_t n_user;
    int color_mode; /* 0 auto, 1 always, -1 never */
    int check, list, quiet, merge_mode, full_checklist, binary, no_progress, roots, format_given;
    int explain_finding; /* --explain took a finding's id: scan PATHs, then explain that finding */
    const char *classes, *only_job, *since, *until;
    const char *exclude[64];
    size_t n_exclude;
    uint64_t max_filesize;
    long jobs;
    oomscan_limits limits;
} cli_opts;

/* One option a line; every one is listed by usage(), docs/oomscan.1 and the bash completion
 * (tests/conventions.sh checks). "colour" is an alias and listed nowhere. */
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
    {"full-checklist", no_argument, NULL, OPT_FULL_CHECKLIST},
    {"binary", no_argument, NULL, OPT_BINARY},
    {"exclude", required_argument, NULL, OPT_EXCLUDE},
    {"max-filesize", required_argument, NULL, OPT_MAX_FILESIZE},
    {"label", required_argument, NULL, OPT_LABEL},
    {"no-progress", no_argument, NULL, OPT_NO_PROGRESS},
    {"roots", no_argument, NULL, OPT_ROOTS},
    {"class", required_argument, NULL, OPT_CLASS},
    {"job", required_argument, NULL, OPT_JOB},
    {"since", required_argument, NULL, OPT_SINCE},
    {"until", required_argument, NULL, OPT_UNTIL},
    {NULL, 0, NULL, 0},
};

static int parse_format(const char *arg, oomscan_format *f)
{
    static const struct {
        const char *name;
        oomscan_format f;
    } fmts[] = {{"text", OOMSCAN_FMT_TEXT},         {"json", OOMSCAN_FMT_JSON},         {"ndjson", OOMSCAN_FMT_NDJSON},
                {"ticket", OOMSCAN_FMT_TICKET},     {"markdown", OOMSCAN_FMT_MARKDOWN}, {"md", OOMSCAN_FMT_MARKDOWN},
                {"openmetrics", OOMSCAN_FMT_OPENMETRICS}};
    for (size_t i = 0; i < sizeof fmts / sizeof *fmts; i++)
        if (strcmp(arg, fmts[i].name) == 0) {
            *f = fmts[i].f;
            return 0;
        }
    fprintf(stderr, "oomscan: unknown format '%s' (text, json, ndjson, ticket, markdown or openmetrics)\n", arg);
    return -1;
}

static int parse_ticket_style(const char *arg, oomscan_ticket_style *t)
{
    if (strcmp(arg, "plain") == 0)
        *t = OOMSCAN_TICKET_PLAIN;
    else if (strcmp(arg, "github") == 0)
        *t = OOMSCAN_TICKET_GITHUB;
    else if (strcmp(arg, "jira") == 0)
        *t = OOMSCAN_TICKET_JIRA;
    else if (strcmp(arg, "jira-cloud") == 0)
        *t = OOMSCAN_TICKET_JIRA_CLOUD;
    else {
        fprintf(stderr, "oomscan: --ticket-style takes plain, github, jira or jira-cloud\n");
        return -1;
    }
    return 0;
}

/* argv -> o. Returns -1 to go on, or the exit status (after --help, --version or a usage error,
 * which has been reported in one line).
 * long: one getopt loop, then the checks between options that can only be made once all are read. */
static int parse_options(int argc, char **argv, cli_opts *o)
{
    int c, format_given = 0;
    opterr = 0; /* cli_option_error says it in one line */
    while ((c = getopt_long(argc, argv, ":f:o:j:vqVh", longopts, NULL)) != -1) {
        switch (c) {
        case 'f':
            if (parse_format(optarg, &o->out.format) != 0)
                return EXIT_TROUBLE;
            format_given = 1;
            break;
        case 'o': o->outfile = optarg; break;
        case 'j': {
            char *end;
            o->jobs = strtol(optarg, &end, 10);
            if (*end || o->jobs < 1 || o->jobs > 64) {
                fprintf(stderr, "oomscan: -j needs a number from 1 to 64\n");
                return EXIT_TROUBLE;
            }
            break;
        }
        case 'v': o->out.verbose = 1; break;
        case 'q': o->quiet = 1; break;
        case 'V':
            printf("oomscan %s (schema %s, gzip: %s)\n", OOMSCAN_VERSION, OOMSCAN_SCHEMA, oomscan_gzip_backend());
            return EXIT_NONE;
        case 'h': usage(stdout); return EXIT_NONE;
        case OPT_COLOR:
            if (strcmp(optarg, "always") == 0)
                o->color_mode = 1;
            else if (strcmp(optarg, "never") == 0)
                o->color_mode = -1;
            else if (strcmp(optarg, "auto") == 0)
                o->color_mode = 0;
            else {
                fprintf(stderr, "oomscan: --color takes auto, always or never\n");
                return EXIT_TROUBLE;
            }
            break;
        case OPT_PATTERNS:
            if (o->n_user == sizeof o->user_dirs / sizeof *o->user_dirs) {
                fprintf(stderr, "oomscan: too many --patterns\n");
                return EXIT_TROUBLE;
            }
            o->user_dirs[o->n_user++] = optarg;
            break;
        case OPT_CHECK: o->check = 1; break;
        case OPT_LIST: o->list = 1; break;
        case OPT_EXPLAIN: o->explain = optarg; break;
        case OPT_TICKET_STYLE:
            if (parse_ticket_style(optarg, &o->out.ticket_style) != 0)
                return EXIT_TROUBLE;
            o->out.format = OOMSCAN_FMT_TICKET;
            format_given = 1;
            break;
        case OPT_JIRA_PROJECT: o->out.jira_project = optarg; break;
        case OPT_JOB_ID:
            if (!*optarg || strlen(optarg) > 31) {
                fprintf(stderr, "oomscan: --job-id takes 1 to 31 characters\n");
                return EXIT_TROUBLE;
            }
            o->job_id = optarg;
            break;
        case OPT_FOLLOW: o->follow = optarg; break;
        case OPT_STATE: o->state_file = optarg; break;
        case OPT_LIMIT:
            if (parse_limit(optarg, &o->limits) != 0)
                return EXIT_TROUBLE;
            break;
        case OPT_FULL_CHECKLIST: o->full_checklist = 1; break;
        case OPT_BINARY: o->binary = 1; break;
        case OPT_NO_PROGRESS: o->no_progress = 1; break;
        case OPT_ROOTS: o->roots = 1; break;
        case OPT_CLASS: o->classes = optarg; break;
        case OPT_JOB: o->only_job = optarg; break;
        case OPT_SINCE: o->since = optarg; break;
        case OPT_UNTIL: o->until = optarg; break;
        case OPT_LABEL:
            if (!*optarg) {
                fprintf(stderr, "oomscan: --label takes a name\n");
                return EXIT_TROUBLE;
            }
            o->label = optarg;
            break;
        case OPT_EXCLUDE:
            if (o->n_exclude == sizeof o->exclude / sizeof *o->exclude) {
                fprintf(stderr, "oomscan: too many --exclude (64 at most)\n");
                return EXIT_TROUBLE;
            }
            o->exclude[o->n_exclude++] = optarg;
            break;
        case OPT_MAX_FILESIZE:
            if (parse_size(optarg, &o->max_filesize) != 0) {
                fprintf(stderr, "oomscan: --max-filesize takes a size > 0, with an optional K, M, G or T\n");
                return EXIT_TROUBLE;
            }
            break;
        default: /* '?' or ':' */
            cli_option_error("oomscan", "oomscan --help", c, argv, longopts);
            return EXIT_TROUBLE;
        }
    }
    o->format_given = format_given;
    /* merge and --follow write NDJSON unless told otherwise: both feed other programs */
    if ((o->merge_mode || o->follow) && !format_given)
        o->out.format = OOMSCAN_FMT_NDJSON;
    if ((o->follow || o->state_file) && (o->merge_mode || (o->out.format != OOMSCAN_FMT_NDJSON))) {
        fprintf(stderr, "oomscan: --follow and --state go with --format ndjson (and not with merge)\n");
        return EXIT_TROUBLE;
    }
    if (o->follow && (o->state_file || optind < argc)) {
        fprintf(stderr, "oomscan: --follow FILE reads that one file: no other PATH, no --state\n");
        return EXIT_TROUBLE;
    }
    oomscan_output *out = &o->out;
    if (out->format == OOMSCAN_FMT_TICKET &&
        (out->ticket_style == OOMSCAN_TICKET_JIRA || out->ticket_style == OOMSCAN_TICKET_JIRA_CLOUD)) {
        if (!out->jira_project)
            out->jira_project = getenv("OOMSCAN_JIRA_PROJECT");
        if (!out->jira_project || !*out->jira_project) {
            fprintf(stderr, "oomscan: --ticket-style jira needs --jira-project KEY or OOMSCAN_JIRA_PROJECT\n");
            return EXIT_TROUBLE;
        }
        const char *type = getenv("OOMSCAN_JIRA_ISSUETYPE");
        out->jira_issuetype = type && *type ? type : NULL;
    }
    return -1;
}

/* Colour by default only on a terminal that shows it: not into a file or pipe, not with NO_COLOR
 * (no-color.org), not on TERM=dumb or with no TERM; --color=always wins over all of these. */
static int want_color(int mode, int to_file)
{
    if (mode)
        return mode > 0;
    const char *no_color = getenv("NO_COLOR"), *term = getenv("TERM");
    return !to_file && isatty(STDOUT_FILENO) && !(no_color && *no_color) && term && *term && strcmp(term, "dumb") != 0;
}

/* The text report's width: COLUMNS when set, else the terminal's, else 80 (a file, a pipe). */
static unsigned report_width(int to_file)
{
    const char *cols = getenv("COLUMNS");
    char *end;
    long n = cols && *cols ? strtol(cols, &end, 10) : 0;
    if (n > 0 && !*end)
        return n > 1000 ? 1000 : (unsigned)n;
    struct winsize ws;
    if (!to_file && isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    return 80;
}

/* -q: the report goes nowhere, only the exit status tells */
static int write_nothing(void *ud, const char *data, size_t len)
{
    (void)ud;
    g_records += len && data[len - 1] == '\n'; /* what would have been written still counts */
    return 0;
}

/* A finding's id (docs/output.md, "The fingerprint"): 16 lowercase hex digits. */
static int is_finding_id(const char *s)
{
    size_t n = strspn(s, "0123456789abcdef");
    return n == 16 && !s[n];
}

/* --explain as Markdown (into a pipe: the page docs/remediation/ holds, or -f markdown) or rendered for
 * a person (a terminal, or -f text). */
static int explain_as_text(const cli_opts *o)
{
    if (o->format_given)
        return o->out.format == OOMSCAN_FMT_TEXT;
    return isatty(STDOUT_FILENO);
}

static unsigned report_width(int to_file);
static int want_color(int mode, int to_file);

/* --explain CHECKLIST: the page, as Markdown or rendered for a terminal. */
static oomscan_status explain_checklist(const oomscan_db *db, const cli_opts *o, oomscan_diag *diag)
{
    if (!explain_as_text(o))
        return oomscan_explain(db, o->explain, write_file, stdout, diag);
    membuf m = {0};
    oomscan_status st = oomscan_explain(db, o->explain, membuf_write, &m, diag);
    if (!st)
        st = oomscan_explain_page_text(m.data ? m.data : "", m.len, want_color(o->color_mode, 0), report_width(0), write_file,
                                       stdout);
    free(m.data);
    return st;
}

/* The pattern database, and the commands that only read it (--check-patterns, --list-patterns,
 * --explain). Returns -1 with *dbp set to go on scanning, or the exit status (*dbp then to be freed,
 * NULL when loading failed). */
static int load_db(const cli_opts *o, int argc, char **argv, oomscan_db **dbp)
{
    oomscan_diag diag = {0};
    oomscan_db *db = NULL;
    oomscan_status st;
    /* --check-patterns DIR checks that folder alone; without DIR, the built-in database. */
    if (o->check && optind < argc)
        st = oomscan_db_new_empty(&db, &diag);
    else if (o->check)
        st = oomscan_db_new(&db, &diag);
    else /* the samples are for --check-patterns alone */
        st = oomscan_db_new_lean(&db, &diag);
    for (size_t i = 0; !st && i < o->n_user; i++)
        st = oomscan_db_add_dir(db, o->user_dirs[i], &diag);
    if (!st && o->check)
        for (int i = optind; !st && i < argc; i++)
            st = oomscan_db_add_dir(db, argv[i], &diag);
    if (!st)
        st = oomscan_db_compile(db, &diag);
    if (st) {
        fprintf(stderr, "oomscan: %s: %s\n", diag.where[0] ? diag.where : "patterns", diag.msg);
        oomscan_db_free(db);
        return EXIT_TROUBLE;
    }
    *dbp = db;
    if (o->check) {
        size_t runs = 0;
        size_t problems = oomscan_db_check(db, print_problem, NULL, &runs);
        printf("%zu patterns, %zu checklists, %zu samples run: %zu problem(s)\n", oomscan_db_pattern_count(db),
               oomscan_db_checklist_count(db), runs, problems);
        return problems ? EXIT_TROUBLE : EXIT_NONE;
    }
    if (o->list) {
        for (size_t i = 0; i < oomscan_db_pattern_count(db); i++) {
            oomscan_pattern_info pi;
            oomscan_db_pattern_info(db, i, &pi);
            printf("%-44s %-22s %s\n", pi.id, pi.class_name, pi.file);
        }
        return EXIT_NONE;
    }
    if (o->explain) {
        int rc = EXIT_NONE;
        if (strcmp(o->explain, "list") == 0) {
            /* with titles for a person at a terminal; ids alone into a pipe, as ls does, for the
             * completion and scripts (install.sh, remediation_docs.sh read them) */
            int titles = isatty(STDOUT_FILENO);
            for (size_t i = 0; i < oomscan_db_checklist_count(db); i++)
                printf(titles ? "%-32s %s\n" : "%s\n", oomscan_db_checklist_id(db, i), oomscan_db_checklist_title(db, i));
        } else if (is_finding_id(o->explain)) {
            return -1; /* a finding's id: main scans the PATHs and explains it */
        } else if (explain_checklist(db, o, &diag) != OOMSCAN_OK) {
            const char *near = errno == EPIPE ? NULL : oomscan_db_checklist_closest(db, o->explain);
            if (near)
                complain("%s: no checklist with this id; did you mean %s? (oomscan --explain list)", o->explain, near);
            else if (errno != EPIPE) /* a closed pipe is the reader's choice */
                complain("%s: %s", diag.where, diag.msg);
            rc = EXIT_TROUBLE;
        }
        return rc;
    }
    return -1;
}

/* --explain FINDING-ID PATH...: the scan's JSON document is made in memory and the finding with that
 * id is explained, rendered (or its JSON object with -f json). *rc becomes 2 when no finding has that
 * id; 0 otherwise (it is an explanation, not a scan's verdict). */
static oomscan_status explain_finding(oomscan_scan *scan, const cli_opts *o, const oomscan_output *out, FILE *dest,
                                      int *rc)
{
    oomscan_output js = *out;
    js.format = OOMSCAN_FMT_JSON;
    membuf m = {0};
    oomscan_status st = oomscan_scan_write(scan, &js, membuf_write, &m);
    cJSON *doc = st ? NULL : cJSON_ParseWithLength(m.data ? m.data : "", m.len);
    free(m.data);
    const cJSON *f = NULL, *it;
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(doc, "findings"))
    {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "id");
        if (cJSON_IsString(id) && strcmp(id->valuestring, o->explain) == 0)
            f = it;
    }
    if (!f) {
        complain("%s: no finding with this id in what was scanned (%d finding(s); oomscan -f json PATH | jq '.findings[].id')",
                 o->explain, cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "findings")));
        cJSON_Delete(doc);
        *rc = EXIT_TROUBLE;
        return st;
    }
    char *text = cJSON_PrintUnformatted(f);
    if (!text)
        st = OOMSCAN_ERR_NOMEM;
    else if (o->format_given && out->format == OOMSCAN_FMT_JSON)
        st = write_file(dest, text, strlen(text)) || write_file(dest, "\n", 1) ? OOMSCAN_ERR_IO : OOMSCAN_OK;
    else
        st = oomscan_explain_finding_text(text, strlen(text), out->color, out->width, write_file, dest);
    free(text);
    cJSON_Delete(doc);
    return st;
}

/* Many inputs (several paths, a folder): the heap grows 4 MiB at a time. What a run keeps of each
 * input (its record, its settings, its findings) grew a worker thread's arena a page at a time, an
 * mprotect each: a twentieth of a run over 512 rank files (docs/performance.md, item 17). Pages are
 * resident only once written; the pad left untrimmed costs the peak RSS about a MiB. Not for one
 * file, a log shipper's or an epilog's call: there the pad cost a start-up 120 page faults (4%). */
static void grow_heap_in_steps(const char *const *paths, size_t n)
{
#if defined(__GLIBC__)
    struct stat sb;
    if (n > 1 || (n == 1 && strcmp(paths[0], "-") != 0 && stat(paths[0], &sb) == 0 && S_ISDIR(sb.st_mode)))
        (void)mallopt(M_TOP_PAD, 4 << 20);
#else
    (void)paths;
    (void)n;
#endif
}

/* long: the program's steps in order (options, database, output file, scan, exit status), each a few lines;
 * what it opens is closed on the way out here. */
int main(int argc, char **argv)
{
    cli_opts o = {.out = {.format = OOMSCAN_FMT_TEXT}};
    if (argc > 1 && strcmp(argv[1], "summary") == 0)
        return summary_main(argc - 1, argv + 1);
    /* `oomscan merge ...`: the inputs are NDJSON from other runs */
    o.merge_mode = argc > 1 && strcmp(argv[1], "merge") == 0;
    if (o.merge_mode) {
        argv[1] = argv[0];
        argc--;
        argv++;
    }
    int parsed = parse_options(argc, argv, &o);
    if (parsed >= 0)
        return parsed;
    oomscan_output out = o.out;
    const char *outfile = o.outfile, *follow = o.follow, *state_file = o.state_file;
    int quiet = o.quiet, merge_mode = o.merge_mode;
    g_quiet = quiet;
    /* A closed pipe (| head) ends the program quietly through a failed write, not a signal. */
    signal(SIGPIPE, SIG_IGN);

    oomscan_db *db = NULL;
    int db_rc = load_db(&o, argc, argv, &db);
    if (db_rc >= 0) {
        oomscan_db_free(db);
        return db_rc;
    }
    oomscan_diag diag = {0};
    oomscan_status st;
    const char *stdin_only[] = {"-"};
    const char *const *paths = (const char *const *)argv + optind;
    size_t n_paths = (size_t)(argc - optind);
    o.explain_finding = o.explain != NULL; /* load_db went on: the id is a finding's */
    if (o.explain_finding && (follow || merge_mode || state_file)) {
        fprintf(stderr, "oomscan: --explain FINDING-ID scans PATHs: not with --follow, --state or merge\n");
        oomscan_db_free(db);
        return EXIT_TROUBLE;
    }
    if (n_paths == 0 && !follow) {
        if (isatty(STDIN_FILENO) && o.explain_finding) {
            fprintf(stderr, "oomscan: %s is a finding's id: give the logs it was found in (oomscan --explain ID PATH...)\n",
                    o.explain);
            oomscan_db_free(db);
            return EXIT_TROUBLE;
        }
        if (isatty(STDIN_FILENO)) {
            fprintf(stderr, "oomscan: no PATH, and standard input is a terminal; usage: oomscan --help\n");
            oomscan_db_free(db);
            return EXIT_TROUBLE;
        }
        paths = stdin_only; /* `... | oomscan` reads the pipe */
        n_paths = 1;
    }
    grow_heap_in_steps(paths, n_paths);

    /* Output goes to a temporary file beside the target and is renamed into place at the end, so a
     * reader never sees half a report. */
    FILE *dest = stdout;
    char *tmpname = NULL;
    /* The handler is in place before the temporary file exists, and the file is known to it as soon
     * as it does (signals held in between): a run killed at any point leaves none behind. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal; /* no SA_RESTART: a blocked read returns and sees the stop */
    sa.sa_flags = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    sigset_t stops, old_mask;
    sigemptyset(&stops);
    sigaddset(&stops, SIGTERM);
    sigaddset(&stops, SIGINT);
    sigprocmask(SIG_BLOCK, &stops, &old_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    if (outfile && !(dest = report_open(outfile, &tmpname))) {
        complain("%s: cannot create: %s", outfile, strerror(errno));
        oomscan_db_free(db);
        return EXIT_TROUBLE;
    }
    g_tmpname = tmpname;
    sigprocmask(SIG_SETMASK, &old_mask, NULL);
    out.color = want_color(o.color_mode, outfile != NULL);
    out.width = report_width(outfile != NULL);
    /* SOURCE_DATE_EPOCH (reproducible-builds.org) pins the time, so the same logs give the same bytes */
    const char *sde = getenv("SOURCE_DATE_EPOCH");
    out.run_time = sde && *sde ? strtoll(sde, NULL, 10) : (long long)time(NULL);
    /* -q: no report on standard output (grep's -q); one asked for with -o is still written */
    oomscan_write_fn report_fn = quiet && !outfile ? write_nothing
                                 : out.format == OOMSCAN_FMT_NDJSON ? write_ndjson_flush
                                                                    : write_file;

    int broken = 0; /* the reader of a live stream went away */
    oomscan_options opt = {
        .jobs = (unsigned)o.jobs, .job_id = o.job_id, .limits = o.limits, .ndjson_steps = o.full_checklist,
        .read_binary = o.binary, .exclude = o.exclude, .n_exclude = o.n_exclude, .max_filesize = o.max_filesize,
        .stdin_label = o.label, .roots_only = o.roots, .classes = o.classes, .only_job = o.only_job,
        .since = o.since, .until = o.until};
    /* a progress line for a person watching a long scan: never into a pipe, a file or a stream, nor on
     * a terminal that cannot erase a line (TERM=dumb, no TERM: \e[K would show as garbage) */
    const char *term = getenv("TERM");
    int show_progress = !quiet && !o.no_progress && !follow && !merge_mode && isatty(STDERR_FILENO) && term &&
                        *term && strcmp(term, "dumb") != 0;
    if (show_progress)
        opt.on_progress = progress_update;
    /* Over files NDJSON is written once, at the end: each finding once, final (docs/streaming.md); a
     * record written after each input was later updated, and a consumer selecting roots got the wrong
     * ones. Records as findings complete are for live streams. */
    oomscan_scan *scan = NULL;
    oomscan_state *state = NULL;
    st = oomscan_scan_new(&scan, db, &opt, &diag);
    /* A live stream (--follow, or NDJSON from a pipe): records go out as findings complete. */
    struct stat in_sb;
    int live = follow || (out.format == OOMSCAN_FMT_NDJSON && !merge_mode && !state_file && n_paths == 1 &&
                          strcmp(paths[0], "-") == 0 && fstat(STDIN_FILENO, &in_sb) == 0 && !S_ISREG(in_sb.st_mode));
    if (!st && state_file) {
        st = oomscan_state_open_limited(&state, state_file, &o.limits, &diag);
        if (!st && oomscan_state_warning(state))
            complain("%s", oomscan_state_warning(state));
        if (!st)
            st = oomscan_scan_use_state(scan, state);
    }
    if (!st && !merge_mode)
        g_streaming = scan; /* from now on a signal stops the scan, and the report is written */
    if (!st && merge_mode) {
        st = oomscan_scan_merge(scan, paths, n_paths, &diag);
    } else if (!st && live) {
        st = oomscan_scan_stream(scan, follow ? follow : "-", follow != NULL, 0, report_fn, dest, &diag);
        if (st == OOMSCAN_ERR_IO) {
            broken = 1; /* the reader went away */
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
        complain("%s", diag.msg);
        rc = EXIT_TROUBLE;
    }
    if (scan) {
        for (size_t i = 0; i < oomscan_scan_input_errors(scan); i++)
            complain("%s", oomscan_scan_input_error(scan, i));
        oomscan_status wst = OOMSCAN_OK;
        if (o.explain_finding)
            wst = explain_finding(scan, &o, &out, dest, &rc);
        else if (!broken)
            wst = oomscan_scan_write(scan, &out, report_fn, dest);
        /* --state reports only what earlier runs did not: a re-run with nothing new found nothing new */
        if (!rc && !o.explain_finding && oomscan_scan_finding_count(scan) > 0 && (!state || g_records > 0))
            rc = EXIT_FOUND;
        if (oomscan_scan_input_errors(scan) > 0)
            rc = EXIT_TROUBLE;
        /* Nothing read is not "no failure found": an epilog pointed at the wrong folder must not report
         * a healthy job (docs/output.md, "Exit status") */
        oomscan_input_counts ic;
        oomscan_scan_input_counts(scan, &ic);
        if (!st && ic.read == 0) {
            char why[200];
            size_t n = 0;
            const struct {
                size_t count;
                const char *what;
            } parts[] = {{ic.unreadable, "unreadable"},     {ic.binary, "binary (--binary reads them)"},
                         {ic.excluded, "excluded by --exclude"}, {ic.too_large, "over --max-filesize"},
                         {ic.own_output, "oomscan's own output (oomscan merge reads it)"}};
            for (size_t k = 0; k < sizeof parts / sizeof *parts; k++)
                if (parts[k].count)
                    n += (size_t)snprintf(why + n, sizeof why - n, "%s%zu %s", n ? ", " : "", parts[k].count,
                                          parts[k].what);
            complain("nothing scanned (%s): this is not \"no failure found\"", n ? why : "no input");
            rc = EXIT_TROUBLE;
        }
        if (fflush(dest) != 0)
            write_failed_now();
        int write_failed = g_write_errno || wst != OOMSCAN_OK || broken;
        /* a closed pipe is the reader's choice, not an error worth a message; a full disk is */
        if (write_failed && g_write_errno != EPIPE) {
            complain("%s: write failed: %s%s", outfile ? outfile : "standard output",
                    strerror(g_write_errno ? g_write_errno : EIO),
                    outfile ? "; the previous report is unchanged" : "");
            rc = EXIT_TROUBLE;
        }
        write_ok = !write_failed;
        /* The state moves on only once the report is out: a lost report is reported again next time. */
        report_out = !st && !write_failed;
        if (state && report_out && !outfile && oomscan_state_save(state, scan, &diag) != OOMSCAN_OK) {
            complain("%s: %s", diag.where, diag.msg);
            rc = EXIT_TROUBLE;
        }
    }
    g_tmpname = NULL; /* report_close renames or removes it */
    if (outfile && report_close(dest, outfile, tmpname, write_ok) != 0) {
        rc = EXIT_TROUBLE;
        report_out = 0;
    }
    if (state && outfile && report_out && oomscan_state_save(state, scan, &diag) != OOMSCAN_OK) {
        complain("%s: %s", diag.where, diag.msg);
        rc = EXIT_TROUBLE;
    }
    oomscan_state_free(state);
    g_streaming = NULL;
    oomscan_scan_free(scan);
    oomscan_db_free(db);
    return rc;
}
