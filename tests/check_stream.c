/* check_stream.c - live streams and the NDJSON writer: a record leaves as soon as its finding is
 * complete, before the end of input; the stream sniffs with input.c (text starting "BZh" is text,
 * gzip through a pipe is decoded as a file is); a finding seen again is written as an update. */
#include <check.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <time.h>
#include <zlib.h>

#include "apitest.h"
#include "check_main.h"

typedef struct {
    const char *fifo;
    const char *data;
    size_t len;
    atomic_int *got; /* set by the output writer when a record arrived; the writer waits for it */
    int got_before_close;
} feeder;

static void *feed(void *arg)
{
    feeder *f = arg;
    int fd = open(f->fifo, O_WRONLY);
    if (fd < 0)
        return NULL;
    ssize_t w = write(fd, f->data, f->len);
    (void)w;
    /* hold the pipe open (up to 20 s) until the stream has written a record */
    for (int i = 0; f->got && i < 2000 && !atomic_load(f->got); i++) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    f->got_before_close = f->got && atomic_load(f->got);
    close(fd);
    return NULL;
}

typedef struct {
    mbuf b;
    atomic_int got; /* an atomic, not a volatile: the feeding thread reads it (ThreadSanitizer) */
} catcher;

static int catch_record(void *ud, const char *data, size_t len)
{
    catcher *c = ud;
    atomic_store(&c->got, 1);
    return mbuf_write(&c->b, data, len);
}

/* Stream `data` through a FIFO into a fresh scan; returns the scan (caller frees) and its records. */
static oomscan_scan *stream_fifo(const char *data, size_t len, int hold_open, catcher *c, feeder *f)
{
    char dir[] = "/tmp/oomscan_stream_XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char fifo[64];
    snprintf(fifo, sizeof fifo, "%s/pipe", dir);
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    *f = (feeder){.fifo = fifo, .data = data, .len = len, .got = hold_open ? &c->got : NULL};
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, feed, f), 0);
    oomscan_scan *s = new_scan();
    oomscan_diag d = {0};
    ck_assert_int_eq(oomscan_scan_stream(s, fifo, 0, 100, catch_record, c, &d), OOMSCAN_OK);
    pthread_join(t, NULL);
    unlink(fifo);
    rmdir(dir);
    return s;
}

START_TEST(test_stream_record_leaves_before_the_end)
{
    size_t len;
    char *log = slurp_file(FIXTURE("golden/xid79-fallen-off-bus.log"), &len);
    catcher c = {0};
    feeder f;
    oomscan_scan *s = stream_fifo(log, len, 1, &c, &f);
    ck_assert_msg(f.got_before_close, "no record while the input was still open");
    ck_assert_uint_gt(count_lines_with(c.b.p, "\"type\":\"finding\""), 0);
    ck_assert_uint_eq(oomscan_scan_input_errors(s), 0);
    oomscan_scan_free(s);
    free(c.b.p);
    free(log);
}
END_TEST

/* The stream's records found as many findings as a batch run over `log` written to a file. */
static void assert_like_file(const char *records, const char *log, size_t len)
{
    char *file = write_temp(".log", log, len);
    oomscan_output nd = {.format = OOMSCAN_FMT_NDJSON};
    const char *paths[] = {file};
    char *batch = render_paths(paths, 1, &nd);
    ck_assert_uint_gt(count_lines_with(records, "\"type\":\"finding\""), 0);
    ck_assert_uint_eq(count_lines_with(records, "\"type\":\"finding\""), count_lines_with(batch, "\"type\":\"finding\""));
    unlink(file);
    free(file), free(batch);
}

/* A log whose first line starts with "BZh" is text on a pipe as it is in a file. */
START_TEST(test_stream_bzh_text_is_text)
{
    size_t len;
    char *oom = slurp_file(FIXTURE("golden/xid79-fallen-off-bus.log"), &len);
    mbuf b = {0};
    mbuf_write(&b, "BZhang trainer: starting run\n", 29);
    mbuf_write(&b, oom, len);
    catcher c = {0};
    feeder f;
    oomscan_scan *s = stream_fifo(b.p, b.len, 0, &c, &f);
    ck_assert_msg(oomscan_scan_input_errors(s) == 0, "%s", oomscan_scan_input_error(s, 0));
    assert_like_file(c.b.p, b.p, b.len);
    oomscan_scan_free(s);
    free(c.b.p), free(b.p), free(oom);
}
END_TEST

/* A gzip file through a pipe is a file, not a live log (issue 33): decoded, the same findings as the
 * file; a truncated one is an input error saying so, not garbage. */
START_TEST(test_stream_gzip_is_decoded)
{
    size_t len;
    char *log = slurp_file(FIXTURE("golden/xid79-fallen-off-bus.log"), &len);
    uLongf cap = compressBound(len) + 64;
    unsigned char *gz = malloc(cap);
    z_stream z = {0};
    ck_assert_int_eq(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK); /* 16: gzip */
    z.next_in = (unsigned char *)log, z.avail_in = (uInt)len, z.next_out = gz, z.avail_out = (uInt)cap;
    ck_assert_int_eq(deflate(&z, Z_FINISH), Z_STREAM_END);
    size_t gzlen = z.total_out;
    deflateEnd(&z);
    catcher c = {0};
    feeder f;
    oomscan_scan *s = stream_fifo((const char *)gz, gzlen, 0, &c, &f);
    ck_assert_msg(oomscan_scan_input_errors(s) == 0, "%s", oomscan_scan_input_error(s, 0));
    assert_like_file(c.b.p, log, len);
    oomscan_scan_free(s);
    free(c.b.p);

    static const char cut[] = "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03rest";
    catcher c2 = {0};
    s = stream_fifo(cut, sizeof cut - 1, 0, &c2, &f);
    ck_assert_uint_eq(oomscan_scan_input_errors(s), 1);
    ck_assert_msg(strstr(oomscan_scan_input_error(s, 0), "gzip"), "%s", oomscan_scan_input_error(s, 0));
    oomscan_scan_free(s);
    free(c2.b.p), free(gz), free(log);
}
END_TEST

/* The same failure in a second input: the NDJSON writer sends an update naming what changed, not a
 * second "finding". */
START_TEST(test_stream_update_when_seen_again)
{
    const char *log = FIXTURE("golden/xid79-fallen-off-bus.log");
    delta_ctx c = {0};
    /* the job given: a finding is written after the input it is in (without, a log that states no job
     * waits for the last input, whose name could state one) */
    oomscan_options opt = {.jobs = 1, .on_input = delta_on_input, .ud = &c, .job_id = "7"};
    oomscan_diag d = {0};
    ck_assert_int_eq(oomscan_scan_new(&c.s, g_db, &opt, &d), OOMSCAN_OK);
    const char *paths[] = {log, log};
    ck_assert_int_eq(oomscan_scan_paths(c.s, paths, 2, &d), OOMSCAN_OK);
    size_t first = count_lines_with(c.b.p, "\"type\":\"finding\"");
    ck_assert_uint_gt(first, 0);
    ck_assert_uint_gt(count_lines_with(c.b.p, "\"type\":\"update\""), 0);
    ck_assert_uint_gt(count_lines_with(c.b.p, "\"changes\":[\"occurrences\"]"), 0);
    oomscan_scan_free(c.s);
    free(c.b.p);
}
END_TEST

/* The ids of roots as a consumer keeping the last record per id sees them, one per line. */
static char *last_roots(const char *ndjson)
{
    cJSON *last = cJSON_CreateObject();
    for (const char *p = ndjson; p && *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        cJSON *r = cJSON_ParseWithLength(p, n);
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(r, "id");
        if (cJSON_IsString(id)) {
            cJSON_DeleteItemFromObjectCaseSensitive(last, id->valuestring);
            cJSON_AddItemToObject(last, id->valuestring, cJSON_Duplicate(r, 1));
        }
        cJSON_Delete(r);
        p = nl ? nl + 1 : NULL;
    }
    mbuf b = {0};
    mbuf_write(&b, "", 0);
    const cJSON *r;
    cJSON_ArrayForEach(r, last)
    {
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(r, "role");
        if (cJSON_IsString(role) && strcmp(role->valuestring, "root") == 0) {
            mbuf_write(&b, r->string, strlen(r->string));
            mbuf_write(&b, "\n", 1);
        }
    }
    cJSON_Delete(last);
    return b.p;
}

/* A kernel log states no job; slurm-77.out names job 77, which is then the kernel's finding's job, and
 * its id. Whichever input comes first, the roots a consumer keeping the last record per id ends with
 * are the roots of the finished scan: the kernel's kill read first is not written under the id it
 * had before job 77 was known (a root nothing updates again). Real files: the cgroup OOM kill job. */
START_TEST(test_stream_ids_do_not_depend_on_input_order)
{
    char dir[] = "/tmp/oomscan_order_XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char kern[64], out[64];
    snprintf(kern, sizeof kern, "%s/dmesg.log", dir);
    snprintf(out, sizeof out, "%s/slurm-77.out", dir);
    const char *from[] = {FIXTURE("realjobs/cgroup_oom_kill/job/dmesg.log"),
                          FIXTURE("realjobs/cgroup_oom_kill/job/torchrun.out")};
    const char *to[] = {kern, out};
    for (int k = 0; k < 2; k++) {
        size_t len;
        char *data = slurp_file(from[k], &len);
        ck_assert_ptr_nonnull(data);
        FILE *f = fopen(to[k], "wb");
        ck_assert_ptr_nonnull(f);
        ck_assert_uint_eq(fwrite(data, 1, len, f), len);
        fclose(f);
        free(data);
    }
    const char *orders[2][2] = {{kern, out}, {out, kern}};
    const oomscan_output json = {.format = OOMSCAN_FMT_JSON};
    char *want = NULL;
    for (int o = 0; o < 2; o++) {
        delta_ctx c = {0};
        oomscan_options opt = {.jobs = 1, .on_input = delta_on_input, .ud = &c};
        oomscan_diag d = {0};
        ck_assert_int_eq(oomscan_scan_new(&c.s, g_db, &opt, &d), OOMSCAN_OK);
        ck_assert_int_eq(oomscan_scan_paths(c.s, orders[o], 2, &d), OOMSCAN_OK);
        ck_assert_int_eq(oomscan_scan_write_ndjson_delta(c.s, mbuf_write, &c.b), OOMSCAN_OK);
        char *doc = write_scan(c.s, &json);
        cJSON *j = cJSON_Parse(doc);
        mbuf roots = {0};
        mbuf_write(&roots, "", 0);
        const cJSON *f;
        cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(j, "findings"))
        {
            const cJSON *role = cJSON_GetObjectItemCaseSensitive(f, "role");
            const cJSON *id = cJSON_GetObjectItemCaseSensitive(f, "id");
            if (cJSON_IsString(role) && strcmp(role->valuestring, "root") == 0 && cJSON_IsString(id)) {
                mbuf_write(&roots, id->valuestring, strlen(id->valuestring));
                mbuf_write(&roots, "\n", 1);
            }
        }
        char *got = last_roots(c.b.p);
        ck_assert_msg(strcmp(got, roots.p) == 0, "order %d: NDJSON ends with roots\n%swhere the scan has\n%s", o, got,
                      roots.p);
        if (!want)
            want = strdup(roots.p);
        else
            ck_assert_str_eq(roots.p, want);
        free(got);
        free(roots.p);
        cJSON_Delete(j);
        free(doc);
        oomscan_scan_free(c.s);
        free(c.b.p);
    }
    free(want);
    unlink(kern);
    unlink(out);
    rmdir(dir);
}
END_TEST

static Suite *stream_suite(void)
{
    Suite *s = suite_create("stream");
    TCase *tc = tcase_create("stream");
    tcase_add_unchecked_fixture(tc, db_setup, db_teardown);
    tcase_add_test(tc, test_stream_record_leaves_before_the_end);
    tcase_add_test(tc, test_stream_bzh_text_is_text);
    tcase_add_test(tc, test_stream_gzip_is_decoded);
    tcase_add_test(tc, test_stream_update_when_seen_again);
    tcase_add_test(tc, test_stream_ids_do_not_depend_on_input_order);
    suite_add_tcase(s, tc);
    return s;
}


int main(void) { return check_run(stream_suite()); }
