/* corpus_eval.c - runs oomscan over the real-log corpus and reports, per class, how many expected
 * findings it recalled and how many findings it made that were not expected (precision).
 *
 * usage: corpus_eval FIXTURES_DIR [--set NAME]... [--min-recall R] [--min-precision P] [--min-phase A]
 *        [--max-phase-wrong W] [--max-phase-invented N] [--min-framework F] [--min-sizes S] [--max-sizes-wrong N]
 * A case is FIXTURES_DIR/<set>/<name>.log with <name>.meta.json; the sets are "corpus" and "clean" unless
 * --set names others (the held-out set is run as `--set heldout --set clean`). The comparison is on the
 * set of classes (a class expected once and found once is one true positive). Every log of the set
 * named "clean" must give no finding at all. Phase (with its confidence), framework and sizes are
 * compared with the meta of the matching finding, right / unknown / wrong counted apart (docs/accuracy.md).
 * Exits 1 when a clean log has a finding or a floor is not met; 2 on an unknown option or a set it cannot
 * read (a misspelt floor or set must not measure nothing and pass). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "oomscan.h"
#include "pipeline/session.h"
#include "base/taxonomy.h"
#include "result/result.h"

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    if (b)
        b[n] = '\0';
    fclose(f);
    return b;
}

static int cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Phase and role against the meta's expectations. A stated phase found right is `right`, found
 * `unknown` a `miss`, found as another phase `wrong`; a meta phase "unknown" (the log does not state it)
 * found as some phase is `invented`. Both wrong and invented are errors: a wrong phase is worse than none. */
typedef struct {
    unsigned stated, right, miss, wrong, unstated, honest, invented, roles, role_wrong;
    unsigned conf_stated, conf_right;          /* phase right and confidence stated: confidence agrees */
    unsigned fw_shown, fw_right, fw_miss, fw_wrong, fw_unshown, fw_invented;
    unsigned sz_values, sz_right, sz_miss, sz_wrong;
} phase_tally;

/* finding `got`'s value for a meta memory key, as a number; `pid` keys of other_processes are matched
 * by pid. Returns 1 found. */
static int mem_number(const cJSON *mem, const char *key, double *v)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(mem, key);
    if (!cJSON_IsNumber(it))
        return 0;
    *v = it->valuedouble;
    return 1;
}

/* Sizes: every value the meta's `memory` states (other_processes entry by entry) against the finding's
 * `memory`; a value within 1 byte per 1e6 is right (the printed figures are rounded). */
static void size_check(const cJSON *want, const cJSON *got, const char *name, phase_tally *t)
{
    const cJSON *w;
    cJSON_ArrayForEach(w, want)
    {
        if (strcmp(w->string, "pid") == 0)
            continue;
        if (strcmp(w->string, "other_processes") == 0) {
            const cJSON *p;
            cJSON_ArrayForEach(p, w)
            {
                double pid = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(p, "pid"));
                double b = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(p, "in_use_bytes"));
                int found = 0;
                const cJSON *q;
                cJSON_ArrayForEach(q, cJSON_GetObjectItemCaseSensitive(got, "other_processes"))
                {
                    if (cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(q, "pid")) == pid) {
                        double g = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(q, "in_use_bytes"));
                        found = 1 + (g > b * (1 + 1e-6) + 1 || g < b * (1 - 1e-6) - 1);
                    }
                }
                t->sz_values++;
                if (found == 1)
                    t->sz_right++;
                else if (found == 0)
                    t->sz_miss++, printf("  %s: size other_processes pid %.0f not read\n", name, pid);
                else
                    t->sz_wrong++, printf("  %s: size other_processes pid %.0f wrong\n", name, pid);
            }
            continue;
        }
        if (!cJSON_IsNumber(w))
            continue;
        double g, b = w->valuedouble;
        t->sz_values++;
        if (!mem_number(got, w->string, &g))
            t->sz_miss++, printf("  %s: size %s not read\n", name, w->string);
        else if (g > b * (1 + 1e-6) + 1 || g < b * (1 - 1e-6) - 1)
            t->sz_wrong++, printf("  %s: size %s %.0f, want %.0f\n", name, w->string, g, b);
        else
            t->sz_right++;
    }
}

static void phase_check(const cJSON *meta, oomscan_scan *scan, const char *name, phase_tally *t)
{
    size_t *order = malloc((scan->st->n + 1) * sizeof *order);
    if (!order)
        return;
    story_order(scan->st, order);
    const cJSON *m;
    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(meta, "findings"))
    {
        int c = tax_class_from_name(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "class")));
        const char *want_phase = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "phase"));
        const char *want_role = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "role"));
        if (c < 0)
            continue;
        /* the finding of that class with the stated role, else the first of that class */
        const finding *got = NULL;
        for (size_t i = 0; i < scan->st->n; i++) {
            const finding *f = &scan->st->f[order[i]];
            if ((int)f->cls != c)
                continue;
            if (!got)
                got = f;
            if (want_role && strcmp(want_role, f->is_root ? "root" : "consequence") == 0) {
                got = f;
                break;
            }
        }
        if (!got) { /* a recall miss (counted above): what the log states is not given either */
            const char *want_fw = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "framework"));
            if (want_phase && strcmp(want_phase, "unknown") != 0)
                t->stated++, t->miss++, printf("  %s: %s not found, phase %s not given\n", name, tax_class_name((tax_class)c), want_phase);
            else if (want_phase)
                t->unstated++, t->honest++;
            if (want_fw && strcmp(want_fw, "unknown") != 0)
                t->fw_shown++, t->fw_miss++;
            else if (want_fw)
                t->fw_unshown++;
            const cJSON *want_mem = cJSON_GetObjectItemCaseSensitive(m, "memory");
            if (cJSON_IsObject(want_mem)) {
                cJSON *none = cJSON_CreateObject();
                size_check(want_mem, none, name, t);
                cJSON_Delete(none);
            }
            continue;
        }
        const char *gp = tax_phase_name(got->phase);
        const char *want_conf = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "phase_confidence"));
        const char *want_fw = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "framework"));
        if (want_fw) {
            const char *gf = tax_framework_name(result_framework(scan->votes, got));
            if (strcmp(want_fw, "unknown") != 0) {
                t->fw_shown++;
                if (strcmp(gf, want_fw) == 0)
                    t->fw_right++;
                else if (strcmp(gf, "unknown") == 0)
                    t->fw_miss++, printf("  %s: framework unknown, log shows %s\n", name, want_fw);
                else
                    t->fw_wrong++, printf("  %s: framework %s, want %s\n", name, gf, want_fw);
            } else {
                t->fw_unshown++;
                if (strcmp(gf, "unknown") != 0)
                    t->fw_invented++, printf("  %s: framework %s, the log shows none\n", name, gf);
            }
        }
        const cJSON *want_mem = cJSON_GetObjectItemCaseSensitive(m, "memory");
        if (cJSON_IsObject(want_mem))
            size_check(want_mem, got->memory, name, t);
        if (want_phase && strcmp(want_phase, "unknown") != 0) {
            t->stated++;
            if (strcmp(gp, want_phase) == 0) {
                t->right++;
                if (want_conf) {
                    t->conf_stated++;
                    const char *gc = got->phase_weak ? "weak" : "strong";
                    if (strcmp(gc, want_conf) == 0)
                        t->conf_right++;
                    else
                        printf("  %s: %s phase %s confidence '%s', want %s\n", name, tax_class_name((tax_class)c), gp, gc,
                               want_conf);
                }
            }
            else if (got->phase == PH_UNKNOWN)
                t->miss++, printf("  %s: %s phase unknown, log states %s\n", name, tax_class_name((tax_class)c), want_phase);
            else
                t->wrong++, printf("  %s: %s phase %s, want %s\n", name, tax_class_name((tax_class)c), gp, want_phase);
        } else if (want_phase) {
            t->unstated++;
            if (got->phase == PH_UNKNOWN)
                t->honest++;
            else
                t->invented++, printf("  %s: %s phase %s, the log states none\n", name, tax_class_name((tax_class)c), gp);
        }
        if (want_role) {
            t->roles++;
            if (strcmp(want_role, got->is_root ? "root" : "consequence") != 0)
                t->role_wrong++, printf("  %s: %s role %s, want %s\n", name, tax_class_name((tax_class)c),
                                        got->is_root ? "root" : "consequence", want_role);
        }
    }
    free(order);
}

static int usage(FILE *to, int status)
{
    fprintf(to, "usage: corpus_eval FIXTURES_DIR [--set NAME]... [--min-recall R] [--min-precision P] [--min-phase A]\n"
                "       [--max-phase-wrong F] [--max-phase-invented N] [--min-framework F] [--min-sizes F]\n"
                "       [--max-sizes-wrong N] [--max-role-wrong N] [--max-confidence-disagree N]\n");
    return status;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0))
        return usage(stdout, 0);
    if (argc < 2 || argv[1][0] == '-')
        return usage(stderr, 2);
    double min_recall = 0, min_precision = 0, min_phase = 0, max_phase_wrong = 0, min_framework = 0, min_sizes = 0;
    unsigned max_invented = 0, max_sizes_wrong = 0, max_role_wrong = 0;
    long max_conf_disagree = -1; /* -1: not checked (older sets were floored before confidence was read) */
    const char *dirs[8] = {"corpus", "clean"};
    int n_dirs = 0;
    /* a floor misspelt or a set misnamed must fail, not measure nothing and pass */
    for (int i = 2; i < argc; i += 2) {
        if (i + 1 >= argc) {
            fprintf(stderr, "corpus_eval: %s needs a value\n", argv[i]);
            return usage(stderr, 2);
        }
        if (strcmp(argv[i], "--set") == 0 && n_dirs < 8)
            dirs[n_dirs++] = argv[i + 1];
        else if (strcmp(argv[i], "--min-recall") == 0)
            min_recall = atof(argv[i + 1]);
        else if (strcmp(argv[i], "--min-precision") == 0)
            min_precision = atof(argv[i + 1]);
        else if (strcmp(argv[i], "--min-phase") == 0)
            min_phase = atof(argv[i + 1]);
        else if (strcmp(argv[i], "--max-phase-wrong") == 0)
            max_phase_wrong = atof(argv[i + 1]);
        else if (strcmp(argv[i], "--max-phase-invented") == 0)
            max_invented = (unsigned)atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--min-framework") == 0)
            min_framework = atof(argv[i + 1]);
        else if (strcmp(argv[i], "--min-sizes") == 0)
            min_sizes = atof(argv[i + 1]);
        else if (strcmp(argv[i], "--max-sizes-wrong") == 0)
            max_sizes_wrong = (unsigned)atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--max-role-wrong") == 0)
            max_role_wrong = (unsigned)atoi(argv[i + 1]); /* a set measured with known wrong roles */
        else if (strcmp(argv[i], "--max-confidence-disagree") == 0)
            max_conf_disagree = atol(argv[i + 1]); /* right phase, strong/weak not the label's */
        else {
            fprintf(stderr, "corpus_eval: unknown option %s\n", argv[i]);
            return usage(stderr, 2);
        }
    }
    if (n_dirs == 0)
        n_dirs = 2;
    for (int di = 0; di < n_dirs; di++) { /* before anything is allocated: an error leaves nothing behind */
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/%s", argv[1], dirs[di]);
        DIR *dp = opendir(dir);
        if (!dp) {
            fprintf(stderr, "corpus_eval: %s: cannot read the set (%s)\n", dir, strerror(errno));
            return 2;
        }
        closedir(dp);
    }
    oomscan_db *db;
    oomscan_diag d = {0};
    if (oomscan_db_new(&db, &d) || oomscan_db_compile(db, &d)) {
        fprintf(stderr, "database: %s: %s\n", d.where, d.msg);
        return 2;
    }
    unsigned tp[CLS__COUNT] = {0}, fp[CLS__COUNT] = {0}, fn[CLS__COUNT] = {0}, cases[CLS__COUNT] = {0};
    int clean_bad = 0, n_cases = 0, n_clean = 0;
    phase_tally ph = {0};
    for (int di = 0; di < n_dirs; di++) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/%s", argv[1], dirs[di]);
        DIR *dp = opendir(dir);
        if (!dp)
            continue; /* checked before the database was made: gone since */
        char **names = NULL;
        size_t nn = 0;
        struct dirent *e;
        while ((e = readdir(dp))) {
            size_t l = strlen(e->d_name);
            if (l > 4 && strcmp(e->d_name + l - 4, ".log") == 0) {
                names = realloc(names, (nn + 1) * sizeof *names);
                names[nn++] = strdup(e->d_name);
            }
        }
        closedir(dp);
        if (nn > 1)
            qsort(names, nn, sizeof *names, cmp);
        for (size_t k = 0; k < nn; k++) {
            char logp[4352], metap[4352];
            snprintf(logp, sizeof logp, "%s/%s", dir, names[k]);
            snprintf(metap, sizeof metap, "%s/%.*s.meta.json", dir, (int)(strlen(names[k]) - 4), names[k]);
            char *mt = slurp(metap);
            cJSON *meta = mt ? cJSON_Parse(mt) : NULL;
            free(mt);
            int want[CLS__COUNT] = {0}, got[CLS__COUNT] = {0};
            const cJSON *f;
            cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(meta, "findings"))
            {
                int c = tax_class_from_name(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(f, "class")));
                if (c >= 0)
                    want[c] = 1;
            }
            oomscan_scan *scan;
            oomscan_options opt = {.jobs = 1};
            const char *paths[] = {logp};
            if (oomscan_scan_new(&scan, db, &opt, &d) || oomscan_scan_paths(scan, paths, 1, &d)) {
                fprintf(stderr, "%s: %s\n", logp, d.msg);
                return 2;
            }
            oomscan_scan_finding_count(scan);
            for (size_t i = 0; i < scan->st->n; i++)
                got[scan->st->f[i].cls] = 1;
            phase_check(meta, scan, names[k], &ph);
            cJSON_Delete(meta);
            oomscan_scan_free(scan);
            int any = 0;
            char line[1024] = "";
            for (int c = 0; c < CLS__COUNT; c++) {
                cases[c] += want[c];
                if (want[c] && got[c])
                    tp[c]++;
                else if (want[c]) {
                    fn[c]++;
                    snprintf(line + strlen(line), sizeof line - strlen(line), " missed %s", tax_class_name((tax_class)c));
                } else if (got[c]) {
                    fp[c]++;
                    any = 1;
                    snprintf(line + strlen(line), sizeof line - strlen(line), " extra %s", tax_class_name((tax_class)c));
                }
            }
            if (line[0])
                printf("  %s/%s:%s\n", dirs[di], names[k], line);
            if (strcmp(dirs[di], "clean") == 0) {
                n_clean++;
                clean_bad += any;
            } else {
                n_cases++;
            }
            free(names[k]);
        }
        free(names);
    }
    printf("\n%-22s %6s %6s %6s %6s %8s %10s\n", "class", "cases", "tp", "fn", "fp", "recall", "precision");
    int below = 0;
    unsigned TP = 0, FN = 0, FP = 0;
    for (int c = 0; c < CLS__COUNT; c++) {
        double r = tp[c] + fn[c] ? (double)tp[c] / (tp[c] + fn[c]) : 1.0;
        double p = tp[c] + fp[c] ? (double)tp[c] / (tp[c] + fp[c]) : 1.0;
        printf("%-22s %6u %6u %6u %6u %7.1f%% %9.1f%%\n", tax_class_name((tax_class)c), cases[c], tp[c], fn[c], fp[c],
               100 * r, 100 * p);
        TP += tp[c];
        FN += fn[c];
        FP += fp[c];
        if (cases[c] >= 5 && (r < min_recall || p < min_precision))
            below++;
    }
    printf("%-22s %6s %6u %6u %6u %7.1f%% %9.1f%%\n", "all", "", TP, FN, FP, 100.0 * TP / (TP + FN ? TP + FN : 1),
           100.0 * TP / (TP + FP ? TP + FP : 1));
    printf("\n%d corpus cases, %d clean logs (%d with a finding)\n", n_cases, n_clean, clean_bad);
    double phase_acc = ph.stated ? (double)ph.right / ph.stated : 1.0;
    printf("phase, where the log states it: %u cases, %u right, %u unknown (missed), %u wrong: %.1f%% right\n",
           ph.stated, ph.right, ph.miss, ph.wrong, 100 * phase_acc);
    printf("phase, where the log does not state it: %u cases, %u unknown, %u given a phase (errors)\n", ph.unstated,
           ph.honest, ph.invented);
    printf("phase confidence, where stated and the phase is right: %u cases, %u agree\n", ph.conf_stated, ph.conf_right);
    printf("role: %u cases, %u wrong\n", ph.roles, ph.role_wrong);
    double fw_acc = ph.fw_shown ? (double)ph.fw_right / ph.fw_shown : 1.0;
    printf("framework, where the log shows it: %u cases, %u right, %u unknown, %u wrong: %.1f%% right\n", ph.fw_shown,
           ph.fw_right, ph.fw_miss, ph.fw_wrong, 100 * fw_acc);
    printf("framework, where the log shows none: %u cases, %u given one\n", ph.fw_unshown, ph.fw_invented);
    printf("sizes: %u values, %u read right, %u not read, %u wrong\n", ph.sz_values, ph.sz_right, ph.sz_miss, ph.sz_wrong);
    double wrong_rate = ph.stated ? (double)ph.wrong / ph.stated : 0.0;
    int phase_bad = ph.role_wrong > max_role_wrong || phase_acc < min_phase || wrong_rate > max_phase_wrong ||
                    ph.invented > max_invented || fw_acc < min_framework || ph.sz_wrong > max_sizes_wrong ||
                    (min_sizes > 0 && ph.sz_right < min_sizes * ph.sz_values) ||
                    (max_conf_disagree >= 0 && ph.conf_stated - ph.conf_right > (unsigned long)max_conf_disagree);
    oomscan_db_free(db);
    return clean_bad || below || phase_bad ? 1 : 0;
}
