/* check_emit.c - the writers (text, JSON, tickets) over one result: they state the same thing, and
 * each only formats what the result says. Scans run through the public API on real fixtures. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "oomscan.h"
#include "check_main.h"

typedef struct {
    char *p;
    size_t len;
} mbuf;

static int mbuf_write(void *ud, const char *data, size_t len)
{
    mbuf *b = ud;
    char *g = realloc(b->p, b->len + len + 1);
    if (!g)
        return -1;
    memcpy(g + b->len, data, len);
    b->p = g;
    b->len += len;
    b->p[b->len] = '\0';
    return 0;
}

static oomscan_db *g_db;

static void db_setup(void)
{
    oomscan_diag d = {0};
    ck_assert_int_eq(oomscan_db_new(&g_db, &d), OOMSCAN_OK);
    ck_assert_int_eq(oomscan_db_compile(g_db, &d), OOMSCAN_OK);
}

static void db_teardown(void) { oomscan_db_free(g_db); }

/* Scan `path` and write it in `fmt` (ticket style `style`); the caller frees the text. */
static char *render(const char *path, oomscan_format fmt, oomscan_ticket_style style)
{
    oomscan_scan *s;
    oomscan_diag d = {0};
    oomscan_options opt = {.jobs = 1};
    ck_assert_int_eq(oomscan_scan_new(&s, g_db, &opt, &d), OOMSCAN_OK);
    const char *paths[] = {path};
    ck_assert_int_eq(oomscan_scan_paths(s, paths, 1, &d), OOMSCAN_OK);
    oomscan_output out = {.format = fmt, .ticket_style = style, .jira_project = "OPS"};
    mbuf b = {0};
    ck_assert_int_eq(oomscan_scan_write(s, &out, mbuf_write, &b), OOMSCAN_OK);
    oomscan_scan_free(s);
    return b.p ? b.p : strdup("");
}

/* A ticket's body (for each style, where the tracker keeps it), with markup escapes removed. */
static char *ticket_body(const char *line, oomscan_ticket_style style)
{
    cJSON *t = cJSON_Parse(line);
    ck_assert_ptr_nonnull(t);
    const cJSON *body = style == OOMSCAN_TICKET_JIRA
                            ? cJSON_GetObjectItem(cJSON_GetObjectItem(t, "fields"), "description")
                            : cJSON_GetObjectItem(t, "body");
    ck_assert(cJSON_IsString(body));
    /* as the tracker renders it: a backslash before punctuation is markup escaping ("-\\>") */
    char *copy = strdup(body->valuestring), *o = copy;
    for (const char *p = body->valuestring; *p; p++)
        if (!(*p == '\\' && p[1] && strchr("\\`*_{}[]()<>#+-.!|^~?", p[1])))
            *o++ = *p;
    *o = '\0';
    cJSON_Delete(t);
    return copy;
}

#define FIXTURE(name) OOMSCAN_SOURCE_DIR "/fixtures/" name

/* vLLM printed gpu_memory_utilization=0.90; the checklist proposes 0.95. The text report, the JSON and
 * every ticket style must state that same change (a ticket used to say only "increase"). */
START_TEST(test_emit_text_json_ticket_same_change)
{
    const char *path = FIXTURE("corpus/kv_cache_oom-vllm-10517.log");
    char *json = render(path, OOMSCAN_FMT_JSON, OOMSCAN_TICKET_PLAIN);
    cJSON *doc = cJSON_Parse(json);
    ck_assert_ptr_nonnull(doc);
    const cJSON *f0 = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "findings"), 0);
    const cJSON *step, *set;
    char change[256] = "";
    cJSON_ArrayForEach(step, cJSON_GetObjectItem(cJSON_GetObjectItem(f0, "remediation"), "steps"))
    cJSON_ArrayForEach(set, cJSON_GetObjectItem(step, "settings"))
    {
        /* the setting as the user types it, with the job's value (advice/setting.h) */
        const char *text = cJSON_GetStringValue(cJSON_GetObjectItem(set, "text"));
        const char *prop = cJSON_GetStringValue(cJSON_GetObjectItem(set, "proposed"));
        if (text && prop && !change[0])
            snprintf(change, sizeof change, "%s", text);
    }
    cJSON_Delete(doc);
    free(json);
    ck_assert_msg(strstr(change, "gpu_memory_utilization=0.95") && strstr(change, "(0.90 -> 0.95)"), "JSON text: %s", change);

    char *text = render(path, OOMSCAN_FMT_TEXT, OOMSCAN_TICKET_PLAIN);
    ck_assert_msg(strstr(text, change), "text report lacks '%s':\n%s", change, text);
    free(text);

    /* in a ticket the same text is set as code (Jira: {{...}}) */
    static const oomscan_ticket_style styles[] = {OOMSCAN_TICKET_PLAIN, OOMSCAN_TICKET_GITHUB, OOMSCAN_TICKET_JIRA};
    for (size_t i = 0; i < sizeof styles / sizeof *styles; i++) {
        char *t = render(path, OOMSCAN_FMT_TICKET, styles[i]);
        char *body = ticket_body(t, styles[i]);
        const char *want = change;
        ck_assert_msg(strstr(body, want), "ticket style %zu lacks '%s':\n%s", i, want, body);
        free(body);
        free(t);
    }
}
END_TEST

/* The framework and job of a finding read the same in the JSON and in a ticket's labels and title. */
START_TEST(test_emit_ticket_labels_follow_json)
{
    const char *path = FIXTURE("corpus/kv_cache_oom-vllm-10517.log");
    char *json = render(path, OOMSCAN_FMT_JSON, OOMSCAN_TICKET_PLAIN);
    cJSON *doc = cJSON_Parse(json);
    const cJSON *f0 = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "findings"), 0);
    char label[96];
    snprintf(label, sizeof label, "\"framework:%s\"", cJSON_GetStringValue(cJSON_GetObjectItem(f0, "framework")));
    char *t = render(path, OOMSCAN_FMT_TICKET, OOMSCAN_TICKET_PLAIN);
    ck_assert_msg(strstr(t, label), "ticket lacks %s", label);
    ck_assert_msg(strstr(t, cJSON_GetStringValue(cJSON_GetObjectItem(f0, "id"))), "ticket lacks the finding id");
    free(t);
    cJSON_Delete(doc);
    free(json);
}
END_TEST

START_TEST(test_emit_text_says_no_failure)
{
    char path[] = "/tmp/check_emit_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    fputs("epoch 1 loss 0.5\nall good\n", f);
    fclose(f);
    char *text = render(path, OOMSCAN_FMT_TEXT, OOMSCAN_TICKET_PLAIN);
    ck_assert_msg(strncmp(text, "No failure found.\n", 18) == 0, "%s", text);
    free(text);
    char *tickets = render(path, OOMSCAN_FMT_TICKET, OOMSCAN_TICKET_PLAIN);
    ck_assert_str_eq(tickets, "");
    free(tickets);
    unlink(path);
}
END_TEST

static Suite *emit_suite(void)
{
    Suite *s = suite_create("emit");
    TCase *tc = tcase_create("writers");
    tcase_add_unchecked_fixture(tc, db_setup, db_teardown);
    tcase_add_test(tc, test_emit_text_json_ticket_same_change);
    tcase_add_test(tc, test_emit_ticket_labels_follow_json);
    tcase_add_test(tc, test_emit_text_says_no_failure);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return check_run(emit_suite()); }
