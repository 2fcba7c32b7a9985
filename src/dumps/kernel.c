/* kernel.c - kernel logs: which text is one (dmesg with uptime or -T stamps, dmesg --time-format iso,
 * journalctl -k, kern.log / syslog "host kernel:" lines), and the oom-killer block read as one event.
 *
 * The block, as mm/oom_kill.c prints it (format strings of Linux 4.19 to 6.x):
 *   "%s invoked oom-killer: gfp_mask=%#x(%pGg), order=%d, oom_score_adj=%hd"   (dump_header)
 *   "oom-kill:constraint=%s,nodemask=%*pbl,cpuset=...,mems_allowed=...,{oom_memcg=...|global_oom},
 *    task_memcg=...,task=%s,pid=%d,uid=%d"                                        (dump_oom_victim)
 *   "%s: Killed process %d (%s) total-vm:%lukB, anon-rss:%lukB, file-rss:%lukB, shmem-rss:%lukB,
 *    UID:%u pgtables:%lukB oom_score_adj:%hd"                                     (__oom_kill_process;
 *    UID/pgtables/oom_score_adj are absent before ~5.1, shmem-rss before 4.5)
 *   "memory: usage %llukB, limit %llukB, failcnt %lu"                            (cgroup v1 memcg)
 *   "oom_reaper: reaped process %d (%s), now anon-rss:%lukB, ..."
 * The scanner already makes one finding of the kill; this adds every figure of the block to it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dumps/common.h"

#define KB_LINE_CAP 4096
#define KB_MAX_PIDS 1024

struct kernel_blocks {
    char line[KB_LINE_CAP];
    size_t len;
    int cut;
    cJSON *by_pid;  /* "pid" -> {figures} */
    cJSON *pending; /* from the block's header lines, for the next victim */
    char host[96];
};

static int is_digit(char c) { return c >= '0' && c <= '9'; }

/* Length of a leading "[ 123.456789]" or "[Thu Mar 14 01:57:55 2019]" stamp (with one space after),
 * or 0. */
static size_t bracket_stamp(const char *s, size_t n)
{
    if (n < 3 || s[0] != '[')
        return 0;
    const char *close = memchr(s, ']', n < 40 ? n : 40);
    if (!close)
        return 0;
    size_t k = 1;
    while (k < (size_t)(close - s) && s[k] == ' ')
        k++;
    int digits = 0, dot = 0, alpha = 0;
    for (size_t i = k; i < (size_t)(close - s); i++) {
        if (is_digit(s[i]))
            digits++;
        else if (s[i] == '.')
            dot++;
        else if ((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z'))
            alpha++;
        else if (s[i] != ' ' && s[i] != ':')
            return 0;
    }
    if (!((dot == 1 && digits >= 2 && alpha == 0) || (alpha >= 6 && digits >= 10)))
        return 0;
    size_t end = (size_t)(close - s) + 1;
    if (end < n && s[end] == ' ')
        end++;
    return end;
}

/* dmesg --time-format iso: "2024-04-29T14:55:41,679700+02:00 " */
static size_t iso_comma_stamp(const char *s, size_t n)
{
    if (n < 33 || !is_digit(s[0]) || s[4] != '-' || s[10] != 'T' || s[19] != ',')
        return 0;
    const char *sp = memchr(s, ' ', n < 40 ? n : 40);
    return sp ? (size_t)(sp - s) + 1 : 0;
}

/* Start of the kernel's own message in a line, or -1 when the line is not a kernel line; the host of
 * a syslog / journal line into host (if given). */
static long kernel_message(const char *s, size_t n, char *host, size_t hcap)
{
    size_t lim = n < 120 ? n : 120;
    /* " kernel: " by its 'k' (memchr) and a compare: memmem's set-up cost more than the search in the
     * 120 bytes looked at, and dumps_sniff asks this of every line a log opens with */
    const char *k = NULL;
    for (const char *c = s + 1, *end = s + lim; end - c >= 8 && (c = memchr(c, 'k', (size_t)(end - c) - 7)); c++)
        if (c[-1] == ' ' && memcmp(c, "kernel: ", 8) == 0) {
            k = c - 1;
            break;
        }
    if (k) {
        if (host && hcap) {
            const char *e = k, *b = k;
            while (b > s && b[-1] != ' ')
                b--;
            size_t hl = (size_t)(e - b);
            if (hl > 0 && hl < hcap) {
                memcpy(host, b, hl);
                host[hl] = 0;
            }
        }
        size_t m = (size_t)(k - s) + 9;
        return (long)(m + bracket_stamp(s + m, n - m));
    }
    size_t b = bracket_stamp(s, n);
    if (b)
        return (long)b;
    b = iso_comma_stamp(s, n);
    return b ? (long)b : -1;
}

int kernel_line_like(const char *s, size_t n) { return kernel_message(s, n, NULL, 0) >= 0; }

kernel_blocks *kernel_blocks_new(void)
{
    kernel_blocks *k = calloc(1, sizeof *k);
    if (!k)
        return NULL;
    k->by_pid = cJSON_CreateObject();
    k->pending = cJSON_CreateObject();
    if (!k->by_pid || !k->pending) {
        kernel_blocks_free(k);
        return NULL;
    }
    return k;
}

void kernel_blocks_free(kernel_blocks *k)
{
    if (!k)
        return;
    cJSON_Delete(k->by_pid);
    cJSON_Delete(k->pending);
    free(k);
}

/* The number after `key` in m (commas inside it, as some pastes have, are skipped), or -1. */
static double num_after(const char *m, const char *key)
{
    const char *p = strstr(m, key);
    if (!p)
        return -1;
    p += strlen(key);
    int neg = *p == '-';
    if (neg)
        p++;
    if (!is_digit(*p))
        return -1;
    double v = 0;
    for (; is_digit(*p) || (*p == ',' && is_digit(p[1])); p++)
        if (*p != ',')
            v = v * 10 + (*p - '0');
    return neg ? -v : v;
}

/* The text after `key` up to one of `stops` (at most 200 bytes), or "" */
static void text_after(const char *m, const char *key, const char *stops, char *out, size_t cap)
{
    out[0] = 0;
    const char *p = strstr(m, key);
    if (!p)
        return;
    p += strlen(key);
    size_t k = strcspn(p, stops);
    if (k >= cap)
        k = cap - 1;
    memcpy(out, p, k);
    out[k] = 0;
}

static void set_num(cJSON *o, const char *key, double v)
{
    if (v < 0 && strcmp(key, "oom_score_adj") != 0)
        return;
    cJSON_DeleteItemFromObjectCaseSensitive(o, key);
    cJSON_AddNumberToObject(o, key, v);
}

static void set_str(cJSON *o, const char *key, const char *v)
{
    if (!v[0])
        return;
    cJSON_DeleteItemFromObjectCaseSensitive(o, key);
    cJSON_AddStringToObject(o, key, v);
}

static cJSON *victim(kernel_blocks *k, double pid)
{
    char key[24];
    snprintf(key, sizeof key, "%.0f", pid);
    cJSON *v = cJSON_GetObjectItemCaseSensitive(k->by_pid, key);
    if (v)
        return v;
    if (cJSON_GetArraySize(k->by_pid) >= KB_MAX_PIDS)
        return NULL;
    v = cJSON_AddObjectToObject(k->by_pid, key);
    /* what the block's header said belongs to this victim */
    for (cJSON *e = v ? k->pending->child : NULL; e; e = e->next)
        cJSON_AddItemToObject(v, e->string, cJSON_Duplicate(e, 1));
    return v;
}

static void on_line(kernel_blocks *k, char *s, size_t n)
{
    long at = kernel_message(s, n, k->host[0] ? NULL : k->host, sizeof k->host);
    if (at < 0)
        at = 0; /* a kernel log cut from its stamps (an excerpt) is still the kernel's */
    const char *m = s + at;
    char buf[208];
    const char *inv = strstr(m, " invoked oom-killer: ");
    if (inv) {
        cJSON_Delete(k->pending);
        k->pending = cJSON_CreateObject();
        if (!k->pending)
            return;
        size_t tl = (size_t)(inv - m) < sizeof buf ? (size_t)(inv - m) : sizeof buf - 1;
        memcpy(buf, m, tl);
        buf[tl] = 0;
        set_str(k->pending, "invoked_by", buf);
        text_after(inv, "gfp_mask=", ",(", buf, sizeof buf);
        set_str(k->pending, "gfp_mask", buf);
        set_num(k->pending, "order", num_after(inv, "order="));
        return;
    }
    if (strncmp(m, "memory: usage ", 14) == 0 && strstr(m, "limit ")) {
        double u = num_after(m, "usage "), l = num_after(m, "limit ");
        if (u >= 0 && k->pending)
            set_num(k->pending, "cgroup_usage_bytes", u * 1024);
        if (l >= 0 && k->pending)
            set_num(k->pending, "cgroup_limit_bytes", l * 1024);
        return;
    }
    if (strncmp(m, "oom-kill:constraint=", 20) == 0) {
        double pid = num_after(m, ",pid=");
        cJSON *v = pid >= 0 ? victim(k, pid) : NULL;
        if (!v)
            return;
        text_after(m, "constraint=", ",", buf, sizeof buf);
        set_str(v, "constraint", buf);
        text_after(m, ",oom_memcg=", ",", buf, sizeof buf);
        set_str(v, "oom_memcg", buf);
        text_after(m, ",task_memcg=", ",", buf, sizeof buf);
        set_str(v, "task_memcg", buf);
        set_num(v, "uid", num_after(m, ",uid="));
        return;
    }
    const char *kp = strstr(m, "Killed process ");
    if (kp && strstr(kp, "total-vm:")) {
        double pid = num_after(kp, "Killed process ");
        cJSON *v = pid >= 0 ? victim(k, pid) : NULL;
        if (!v)
            return;
        set_num(v, "total_vm_bytes", num_after(kp, "total-vm:") * 1024);
        set_num(v, "anon_rss_bytes", num_after(kp, "anon-rss:") * 1024);
        set_num(v, "file_rss_bytes", num_after(kp, "file-rss:") * 1024);
        set_num(v, "shmem_rss_bytes", num_after(kp, "shmem-rss:") * 1024);
        set_num(v, "pgtables_bytes", num_after(kp, "pgtables:") * 1024);
        set_num(v, "uid", num_after(kp, "UID:"));
        if (strstr(kp, "oom_score_adj:"))
            set_num(v, "oom_score_adj", num_after(kp, "oom_score_adj:"));
        if (strstr(m, "Memory cgroup out of memory"))
            cJSON_AddTrueToObject(v, "cgroup");
        return;
    }
    if (strncmp(m, "oom_reaper: reaped process ", 27) == 0) {
        double pid = num_after(m, "reaped process ");
        cJSON *v = pid >= 0 ? victim(k, pid) : NULL;
        if (v && !cJSON_HasObjectItem(v, "reaped"))
            cJSON_AddTrueToObject(v, "reaped");
    }
}

void kernel_blocks_feed(kernel_blocks *k, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char c = (char)p[i];
        if (c == '\n' || c == '\r') {
            if (k->len) {
                k->line[k->len] = 0;
                on_line(k, k->line, k->len);
            }
            k->len = 0;
            k->cut = 0;
        } else if (k->len < KB_LINE_CAP - 1) {
            k->line[k->len++] = c ? c : ' ';
        }
    }
}

/* The block's first line ("X invoked oom-killer: ...") is matched on its own (a kill may follow it
 * in a later line or file); within a kernel log it is the same event as the kill that follows: it is
 * given the kill's group and no occurrence of its own, and put after the kill, so that the merge into
 * the caller's story folds it in (its line becomes the finding's first location and evidence). */
static void fold_headers(story *tmp)
{
    for (size_t i = 0; i < tmp->n; i++) {
        finding *h = &tmp->f[i];
        if (!h->pattern || strcmp(h->pattern->id, "host_oom_kill.kernel_invoked_oom_killer") != 0)
            continue;
        const char *who = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(h->memory, "process"));
        long kill = -1;
        for (size_t j = 0; j < tmp->n && kill < 0; j++) {
            const char *by = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(tmp->f[j].memory, "invoked_by"));
            if (j != i && by && who && strcmp(by, who) == 0 && !story_loc_before(&tmp->f[j].first, &h->first))
                kill = (long)j;
        }
        if (kill < 0)
            continue;
        char *g = strdup(tmp->f[kill].group);
        if (!g)
            continue;
        free(h->group);
        h->group = g;
        memcpy(h->job_id, tmp->f[kill].job_id, sizeof h->job_id);
        h->occurrences = 0;
        if ((size_t)kill > i) { /* the kill must reach the merge first */
            finding t = tmp->f[i];
            tmp->f[i] = tmp->f[kill];
            tmp->f[kill] = t;
        }
    }
}

void kernel_blocks_apply(kernel_blocks *k, story *tmp)
{
    if (k->len) { /* a last line without its newline */
        k->line[k->len] = 0;
        on_line(k, k->line, k->len);
        k->len = 0;
    }
    for (size_t i = 0; i < tmp->n; i++) {
        finding *f = &tmp->f[i];
        if (k->host[0] && !f->host[0])
            snprintf(f->host, sizeof f->host, "%s", k->host);
        /* the kernel may kill a child of the process it chose: the figures are the killed one's */
        const cJSON *pid = cJSON_GetObjectItemCaseSensitive(f->memory, "killed_pid");
        if (!cJSON_IsNumber(pid))
            pid = cJSON_GetObjectItemCaseSensitive(f->memory, "pid");
        if (!cJSON_IsNumber(pid))
            continue;
        char key[24];
        snprintf(key, sizeof key, "%.0f", pid->valuedouble);
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(k->by_pid, key);
        for (const cJSON *e = v ? v->child : NULL; e; e = e->next)
            if (!cJSON_HasObjectItem(f->memory, e->string))
                cJSON_AddItemToObject(f->memory, e->string, cJSON_Duplicate(e, 1));
        if (f->pid[0] == 0)
            snprintf(f->pid, sizeof f->pid, "%s", key);
    }
    fold_headers(tmp);
}
