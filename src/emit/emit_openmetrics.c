/* emit_openmetrics.c - counters for dashboards and alerts ("CUDA OOMs per hour by phase"): findings and
 * their occurrences by class, phase, framework and role, and inputs by status.
 *
 * The exposition is the one both consumers here read: node exporter's textfile collector and
 * `promtool check metrics` parse the Prometheus text format, whose HELP and TYPE lines name the sample
 * itself (`oomscan_findings_total`), and accept OpenMetrics' closing `# EOF` as a comment. Series come
 * in a fixed order (taxonomy order), so two runs over the same logs write the same bytes. Writers only
 * read the result. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit/emit.h"

typedef struct {
    uint64_t findings, occurrences;
} cell;

#define CELLS ((size_t)CLS__COUNT * PH__COUNT * FW__COUNT * 2)

static size_t at(int cls, int ph, int fw, int root) { return (((size_t)cls * PH__COUNT + ph) * FW__COUNT + fw) * 2 + root; }

static int put(oomscan_write_fn fn, void *ud, const char *s) { return fn(ud, s, strlen(s)); }

static int family(oomscan_write_fn fn, void *ud, const char *name, const char *help, const cell *c, int occ)
{
    char line[512];
    snprintf(line, sizeof line, "# HELP %s %s\n# TYPE %s counter\n", name, help, name);
    if (put(fn, ud, line))
        return -1;
    for (int k = 0; k < CLS__COUNT; k++)
        for (int p = 0; p < PH__COUNT; p++)
            for (int f = 0; f < FW__COUNT; f++)
                for (int root = 1; root >= 0; root--) {
                    const cell *x = &c[at(k, p, f, root)];
                    if (!x->findings)
                        continue;
                    snprintf(line, sizeof line, "%s{class=\"%s\",phase=\"%s\",framework=\"%s\",role=\"%s\"} %llu\n", name,
                             tax_class_name((tax_class)k), tax_phase_name((tax_phase)p),
                             tax_framework_name((tax_framework)f), root ? "root" : "consequence",
                             (unsigned long long)(occ ? x->occurrences : x->findings));
                    if (put(fn, ud, line))
                        return -1;
                }
    return 0;
}

/* Jobs this run scanned, by outcome: each job a root finding names counts once as "failure"; a run with
 * no finding counts one job, "no_failure" when an input was read and "not_scanned" when none was (an
 * empty folder, a missing path: a dashboard must not count it as healthy). */
static void jobs_by_outcome(const result *r, uint64_t out[3])
{
    out[0] = out[1] = out[2] = 0;
    size_t roots = 0, jobs = r->scan.st->n_jobs;
    for (size_t i = 0; i < r->n; i++)
        roots += r->items[i].is_root != 0;
    if (roots) {
        out[0] = jobs ? jobs : 1;
        return;
    }
    result_tally t;
    result_tally_inputs(r->scan.inputs, r->scan.n_inputs, &t);
    out[t.read ? 1 : 2] = 1;
}

oomscan_status emit_openmetrics(const result *r, long long run_time, oomscan_write_fn fn, void *ud)
{
    cell *c = calloc(CELLS, sizeof *c);
    if (!c)
        return OOMSCAN_ERR_NOMEM;
    for (size_t i = 0; i < r->n; i++) {
        const result_finding *rf = &r->items[i];
        cell *x = &c[at(rf->f->cls, rf->f->phase, rf->framework, rf->is_root ? 1 : 0)];
        x->findings++;
        x->occurrences += rf->f->occurrences;
    }
    uint64_t by_status[3] = {0};
    for (size_t i = 0; i < r->scan.n_inputs; i++)
        by_status[r->scan.inputs[i].status]++;
    int bad = family(fn, ud, "oomscan_findings_total",
                     "Failures found (one finding per failure per job), by class, phase, framework and role.", c, 0) ||
              family(fn, ud, "oomscan_occurrences_total",
                     "Log lines (or dump records) behind those findings, by class, phase, framework and role.", c, 1);
    static const char *names[3] = {"ok", "partial", "error"};
    if (!bad)
        bad = put(fn, ud, "# HELP oomscan_inputs_total Inputs scanned (files, archive members), by how far they were read.\n"
                          "# TYPE oomscan_inputs_total counter\n");
    for (int s = 0; s < 3 && !bad; s++) {
        char line[128];
        snprintf(line, sizeof line, "oomscan_inputs_total{status=\"%s\"} %llu\n", names[s], (unsigned long long)by_status[s]);
        bad = put(fn, ud, line);
    }
    uint64_t jobs[3];
    jobs_by_outcome(r, jobs);
    static const char *outcomes[3] = {"failure", "no_failure", "not_scanned"};
    if (!bad)
        bad = put(fn, ud, "# HELP oomscan_jobs_scanned_total Jobs scanned, by outcome: a failure found, none, or nothing "
                          "could be read.\n# TYPE oomscan_jobs_scanned_total counter\n");
    for (int s = 0; s < 3 && !bad; s++) {
        char line[128];
        snprintf(line, sizeof line, "oomscan_jobs_scanned_total{outcome=\"%s\"} %llu\n", outcomes[s],
                 (unsigned long long)jobs[s]);
        bad = put(fn, ud, line);
    }
    if (!bad && run_time) {
        char line[256];
        snprintf(line, sizeof line, "# HELP oomscan_last_run_timestamp_seconds When oomscan last ran (Unix time).\n"
                 "# TYPE oomscan_last_run_timestamp_seconds gauge\noomscan_last_run_timestamp_seconds %lld\n", run_time);
        bad = put(fn, ud, line);
    }
    if (!bad)
        bad = put(fn, ud, "# EOF\n");
    free(c);
    return bad ? OOMSCAN_ERR_IO : OOMSCAN_OK;
}
