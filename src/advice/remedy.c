/* remedy.c - the older entry points (kept until every caller asks advice.h) and the Markdown of a
 * checklist for --explain and docs/remediation/. */
#include "advice/remedy.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advice/advice.h"
#include "advice/setting.h"
#include "base/sink.h"
#include "base/jsonget.h"

cJSON *remedy_json(const pdb *db, const finding *f, int fw) { return remedy_json_config(db, f, fw, NULL, ""); }

cJSON *remedy_json_config(const pdb *db, const finding *f, int fw, const struct config_view *cfg, const char *job)
{
    advice *a = advice_resolve(db, f, fw, cfg, job);
    if (!a)
        return NULL;
    cJSON *r = a->remediation;
    a->remediation = NULL;
    advice_free(a);
    return r;
}

cJSON *remedy_diagnosis_json(const pdb *db, const finding *f) { return diagnosis_json(db, f, NULL, ""); }

/* ---- markdown ----------------------------------------------------------------------------- */

typedef sink md;
#define w(m, ...) sink_printf((m), __VA_ARGS__) /* base/sink.h */

int remedy_markdown(const pdb_checklist *c, oomscan_write_fn fn, void *ud)
{
    md m = {fn, ud, 0};
    const cJSON *j = c->json;
    w(&m, "# %s\n\n", json_str(j, "title") ? json_str(j, "title") : c->id);
    w(&m, "Checklist `%s`. Applies to:", c->id);
    const cJSON *a;
    cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(j, "applies"))
    w(&m, " `%s`/`%s`", json_str(a, "class") ? json_str(a, "class") : "?", json_str(a, "phase") ? json_str(a, "phase") : "?");
    w(&m, ".\n\n");
    if (json_str(j, "summary"))
        w(&m, "%s\n\n", json_str(j, "summary"));
    int n = 0;
    const cJSON *st;
    cJSON_ArrayForEach(st, cJSON_GetObjectItemCaseSensitive(j, "steps"))
    {
        w(&m, "## %d. %s\n\n", ++n, json_str(st, "do") ? json_str(st, "do") : "(step)");
        const cJSON *only = cJSON_GetObjectItemCaseSensitive(st, "only_when");
        if (cJSON_GetArraySize(only) > 0) {
            /* a step listed for one cause only (advice.c): the page says when it appears */
            w(&m, "Listed only when the diagnosis supports:");
            const cJSON *o;
            cJSON_ArrayForEach(o, only) if (cJSON_IsString(o)) w(&m, " `%s`", o->valuestring);
            w(&m, " (`memory_leak`: the job's own memory telemetry climbed before the failure, "
                  "`memory_trend` with verdict `growth`); first then.\n\n");
        }
        /* the frameworks a step is given to or kept from (advice.c, step_applies) */
        static const char *const scope[][2] = {{"only_for", "Only for a job of"}, {"not_for", "Not given to a job of"}};
        for (size_t k = 0; k < 2; k++) {
            const cJSON *fws = cJSON_GetObjectItemCaseSensitive(st, scope[k][0]), *x;
            if (cJSON_GetArraySize(fws) == 0)
                continue;
            w(&m, "%s:", scope[k][1]);
            cJSON_ArrayForEach(x, fws) w(&m, " `%s`", cJSON_IsString(x) ? x->valuestring : "?");
            w(&m, ".\n\n");
        }
        if (json_str(st, "why"))
            w(&m, "Why: %s\n\n", json_str(st, "why"));
        if (json_str(st, "tradeoff"))
            w(&m, "Trade-off: %s\n\n", json_str(st, "tradeoff"));
        const cJSON *set = cJSON_GetObjectItemCaseSensitive(st, "settings");
        if (cJSON_GetArraySize(set) > 0) {
            w(&m, "| framework | what to write or do |\n| --- | --- |\n");
            const cJSON *fwk;
            cJSON_ArrayForEach(fwk, set)
            {
                const cJSON *s1;
                cJSON_ArrayForEach(s1, fwk)
                {
                    const char *note = json_str(s1, "note");
                    char text[1024];
                    setting_text(s1, text, sizeof text);
                    /* a table cell cannot hold a bare '|' (shell pipelines in commands) */
                    char cell[1100];
                    size_t k = 0;
                    for (const char *p = text; *p && k + 2 < sizeof cell; p++) {
                        if (*p == '|')
                            cell[k++] = '\\';
                        cell[k++] = *p;
                    }
                    cell[k] = 0;
                    w(&m, "| %s | `%s`%s%s%s |\n", fwk->string, cell, note ? " (" : "", note ? note : "", note ? ")" : "");
                }
            }
            w(&m, "\n");
        }
        const cJSON *src = cJSON_GetObjectItemCaseSensitive(st, "source");
        w(&m, "Source:");
        const cJSON *s2;
        cJSON_ArrayForEach(s2, src) w(&m, " %s", cJSON_IsString(s2) ? s2->valuestring : "?");
        w(&m, "\n\n");
    }
    return m.failed ? -1 : 0;
}
