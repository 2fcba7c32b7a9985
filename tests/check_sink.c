/* check_sink.c - printf-style writing to a byte sink (base/sink.h): every piece whole, in one call,
 * and nothing after the first failure. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "base/sink.h"
#include "check_main.h"

/* A growing buffer that counts its calls and fails from call `fail_at` on (0: never). */
typedef struct {
    char data[1 << 16];
    size_t len;
    int calls, fail_at;
} mem;

static int mem_write(void *ud, const char *d, size_t n)
{
    mem *m = ud;
    m->calls++;
    if (m->fail_at && m->calls >= m->fail_at)
        return 1;
    ck_assert_uint_le(m->len + n, sizeof m->data);
    memcpy(m->data + m->len, d, n);
    m->len += n;
    return 0;
}

START_TEST(test_sink_formats_each_piece_in_one_call)
{
    static mem m;
    memset(&m, 0, sizeof m);
    sink s = {mem_write, &m, 0};
    sink_printf(&s, "%s=%d\n", "gpu_memory_utilization", 90);
    sink_write(&s, "ok", 2);
    ck_assert_int_eq(s.failed, 0);
    ck_assert_int_eq(m.calls, 2);
    ck_assert_uint_eq(m.len, strlen("gpu_memory_utilization=90\nok"));
    ck_assert(memcmp(m.data, "gpu_memory_utilization=90\nok", m.len) == 0);
}
END_TEST

/* The copies this helper replaced cut a piece at their buffer (1 KiB in the summary, 4 KiB in the
 * checklist renderer, 8 KiB in the text report): a long evidence line lost its end. */
START_TEST(test_sink_writes_long_pieces_whole)
{
    static mem m;
    memset(&m, 0, sizeof m);
    sink s = {mem_write, &m, 0};
    static const size_t sizes[] = {1022, 1023, 1024, 1025, 4096, 8192, 20000};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        char *arg = malloc(sizes[i] + 1);
        ck_assert_ptr_nonnull(arg);
        memset(arg, 'x', sizes[i]);
        arg[sizes[i]] = '\0';
        m.len = 0;
        sink_printf(&s, "[%s]", arg);
        ck_assert_msg(m.len == sizes[i] + 2, "a %zu-byte argument wrote %zu bytes", sizes[i], m.len);
        ck_assert(m.data[0] == '[' && m.data[m.len - 1] == ']' && m.data[m.len - 2] == 'x');
        free(arg);
    }
    ck_assert_int_eq(s.failed, 0);
}
END_TEST

START_TEST(test_sink_stops_after_a_failed_write)
{
    static mem m;
    memset(&m, 0, sizeof m);
    m.fail_at = 2;
    sink s = {mem_write, &m, 0};
    sink_printf(&s, "first %d\n", 1);
    ck_assert_int_eq(s.failed, 0);
    sink_printf(&s, "second %d\n", 2);
    ck_assert_int_eq(s.failed, 1);
    sink_printf(&s, "third %d\n", 3);
    sink_write(&s, "fourth", 6);
    ck_assert_int_eq(m.calls, 2); /* nothing tried after the failure */
    ck_assert_uint_eq(m.len, strlen("first 1\n"));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sink");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_sink_formats_each_piece_in_one_call);
    tcase_add_test(tc, test_sink_writes_long_pieces_whole);
    tcase_add_test(tc, test_sink_stops_after_a_failed_write);
    suite_add_tcase(s, tc);
    return check_run(s);
}
