/* setting.c - a checklist setting in the user's own syntax. */
#include "advice/setting.h"
#include "base/jsonget.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The word a rule becomes when no value can be written. */
static const char *verb(const char *change)
{
    static const char *const map[][2] = {
        {"halve", "halve"},      {"double", "double"}, {"decrease", "lower"}, {"increase", "raise"},
        {"enable", "turn on"},   {"disable", "turn off"}, {"run", "run"},      {"check", "check"},
        {"read", "read"},        {"compare", "compare"}, {"find", "find"},    {"compute", "compute"},
        {"adjust", "adjust"},
    };
    for (size_t i = 0; i < sizeof map / sizeof *map; i++)
        if (strcmp(change, map[i][0]) == 0)
            return map[i][1];
    return strncmp(change, "set:", 4) == 0 ? "set" : change;
}

/* The value a switch takes, spelled as the form expects it. */
static const char *switch_value(const char *form, int on)
{
    if (strcmp(form, "env") == 0)
        return on ? "1" : "0";
    if (strcmp(form, "json") == 0)
        return on ? "true" : "false";
    return on ? "True" : "False";
}

static int bare_json(const char *v)
{
    if (!strcmp(v, "true") || !strcmp(v, "false") || !strcmp(v, "null"))
        return 1;
    char *end;
    strtod(v, &end);
    return *v && !*end;
}

/* `key=value` etc. for one value; 0 when the form cannot carry a value (words). */
static int typed(const char *form, const char *key, const char *v, int is_switch, int on, char *buf, size_t cap)
{
    if (!strcmp(form, "override"))
        snprintf(buf, cap, "%s=%s", key, v);
    else if (!strcmp(form, "kwarg")) /* a config object's field, also a flag of HfArgumentParser scripts */
        snprintf(buf, cap, "%s=%s (config field; --%s %s on the command line)", key, v, key, v);
    else if (!strcmp(form, "env"))
        snprintf(buf, cap, "export %s=%s", key, v);
    else if (!strcmp(form, "directive"))
        snprintf(buf, cap, "%s=%s", key, v);
    else if (!strcmp(form, "flag")) {
        if (is_switch && on)
            snprintf(buf, cap, "%s", key);
        else if (is_switch)
            snprintf(buf, cap, "remove %s", key);
        else
            snprintf(buf, cap, "%s %s", key, v);
    } else if (!strcmp(form, "engine_arg")) {
        char dashed[128];
        snprintf(dashed, sizeof dashed, "%s", key);
        for (char *p = dashed; *p; p++)
            if (*p == '_')
                *p = '-';
        if (is_switch && on)
            snprintf(buf, cap, "--%s (vllm serve) or %s=True (LLM(...))", dashed, key);
        else
            snprintf(buf, cap, "--%s %s (vllm serve) or %s=%s (LLM(...))", dashed, v, key, v);
    } else if (!strcmp(form, "json")) {
        /* zero_optimization.offload_param.device -> "zero_optimization": {"offload_param": {"device": "cpu"}} */
        size_t n = 0, depth = 0;
        const char *p = key;
        while (n < cap) {
            const char *dot = strchr(p, '.');
            size_t len = dot ? (size_t)(dot - p) : strlen(p);
            n += (size_t)snprintf(buf + n, cap - n, "\"%.*s\": %s", (int)len, p, dot ? "{" : "");
            if (!dot)
                break;
            depth++;
            p = dot + 1;
        }
        if (n < cap)
            n += (size_t)snprintf(buf + n, cap - n, bare_json(v) ? "%s" : "\"%s\"", v);
        while (depth-- && n < cap)
            n += (size_t)snprintf(buf + n, cap - n, "}");
        if (n < cap)
            snprintf(buf + n, cap - n, " (DeepSpeed config)");
    } else
        return 0;
    return 1;
}

void setting_text(const cJSON *set, char *buf, size_t cap)
{
    const char *key = json_str(set, "key") ? json_str(set, "key") : "";
    const char *form = json_str(set, "form") ? json_str(set, "form") : "words";
    const char *change = json_str(set, "change") ? json_str(set, "change") : "";
    const char *example = json_str(set, "example");
    const char *cur = json_str(set, "current"), *pro = json_str(set, "proposed");
    int is_switch = !strcmp(change, "enable") || !strcmp(change, "disable");
    int on = !strcmp(change, "enable");
    const char *v = pro;
    if (!v && !strncmp(change, "set:", 4))
        v = change + 4;
    else if (!v && is_switch && !cur && strcmp(form, "words") != 0 && strcmp(form, "python") != 0)
        v = switch_value(form, on);
    char line[700];
    if (cur && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(set, "already"))) {
        snprintf(buf, cap, "%s is already %s in this job: nothing to change here", key, cur);
        return;
    }
    if (!strcmp(form, "command")) {
        snprintf(buf, cap, "%s", key);
        return;
    }
    const char *sug = json_str(set, "suggested"), *def = json_str(set, "default");
    if (!cur && !v && sug && def && typed(form, key, sug, 0, 0, line, sizeof line)) {
        snprintf(buf, cap, "%s  (a suggestion: the default is %s; the log did not print this job's value)", line, def);
        return;
    }
    if (v && typed(form, key, v, is_switch && !pro, on, line, sizeof line)) {
        if (cur && pro)
            snprintf(buf, cap, "%s  (%s -> %s)", line, cur, pro);
        else
            snprintf(buf, cap, "%s", line);
        return;
    }
    /* a count already at 0 cannot be lowered: "lower num_workers (now 0)" told a job whose loader runs in
     * the main process to use fewer workers (issue 31) */
    if (cur && *cur && !strcmp(change, "decrease") && strspn(cur, "0") == strlen(cur)) {
        snprintf(buf, cap, "%s is already %s in this job: nothing to lower", key, cur);
        return;
    }
    /* the form the user types (DataLoader(..., num_workers=<fewer>)), with the job's value beside it */
    if (example) {
        if (cur)
            snprintf(buf, cap, "%s  (now %s)", example, cur);
        else
            snprintf(buf, cap, "%s", example);
        return;
    }
    /* no value to write: the direction in words, with the job's value when the log showed it */
    if (cur && (!strcmp(change, "read") || !strcmp(change, "check") || !strcmp(change, "find"))) {
        snprintf(buf, cap, "%s %s: %s", verb(change), key, cur);
        return;
    }
    if (v)
        snprintf(line, sizeof line, "set %s to %s", key, v);
    else
        snprintf(line, sizeof line, "%s %s", verb(change), key);
    if (cur)
        snprintf(buf, cap, "%s (now %s)", line, cur);
    else
        snprintf(buf, cap, "%s", line);
}

int setting_publish(cJSON *set)
{
    char text[1024];
    setting_text(set, text, sizeof text);
    const char *change = json_str(set, "change");
    char word[32] = "";
    char *value = NULL;
    if (change && !strncmp(change, "set:", 4)) {
        snprintf(word, sizeof word, "set");
        if (!(value = strdup(change + 4)))
            return -1;
    } else if (change)
        snprintf(word, sizeof word, "%s", change);
    cJSON_DeleteItemFromObjectCaseSensitive(set, "example");
    cJSON_DeleteItemFromObjectCaseSensitive(set, "change");
    int ok = cJSON_AddStringToObject(set, "change", word) != NULL;
    if (ok && value)
        ok = cJSON_AddStringToObject(set, "value", value) != NULL;
    if (ok)
        ok = cJSON_AddStringToObject(set, "text", text) != NULL;
    free(value);
    return ok ? 0 : -1;
}
