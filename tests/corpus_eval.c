/* corpus_eval.c - runs oomscan over the real-log corpus and reports, per class, how many expected
 * findings it recalled and how many findings it made that were not expected (precision).
 *
 * usage: corpus_eval FIXTURES_DIR [--min-recall R] [--min-precision P]
 * A case is fixtures/{corpus,clean}/<name>.log with <name>.meta.json; the comparison is on the set of
 * classes (a class expected once and found once is one true positive). Every clean log must give no
 * finding at all. Exits 1 when a clean log has a finding or a floor is not met. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "oomscan.h"
#include "session.h"
#include "taxonomy.h"

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

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: corpus_eval FIXTURES_DIR [--min-recall R] [--min-precision P]\n");
        return 2;
    }
    double min_recall = 0, min_precision = 0;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--min-recall") == 0)
            min_recall = atof(argv[i + 1]);
        else if (strcmp(argv[i], "--min-precision") == 0)
            min_precision = atof(argv[i + 1]);
    }
    oomscan_db *db;
    oomscan_diag d = {0};
    if (oomscan_db_new(&db, &d) || oomscan_db_compile(db, &d)) {
        fprintf(stderr, "database: %s: %s\n", d.where, d.msg);
        return 2;
    }
    unsigned tp[CLS__COUNT] = {0}, fp[CLS__COUNT] = {0}, fn[CLS__COUNT] = {0}, cases[CLS__COUNT] = {0};
    int clean_bad = 0, n_cases = 0, n_clean = 0;
    static const char *const dirs[] = {"corpus", "clean"};
    for (int di = 0; di < 2; di++) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/%s", argv[1], dirs[di]);
        DIR *dp = opendir(dir);
        if (!dp)
            continue;
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
            cJSON_Delete(meta);
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
            if (di == 1) {
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
    oomscan_db_free(db);
    return clean_bad || below ? 1 : 0;
}
