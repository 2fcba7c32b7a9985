/* check_grow.c - the one growth helper (base/grow.h): room made by doubling from a first size, the new
 * room zeroed, the array and its capacity left as they were when it cannot grow. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "check_main.h"

typedef struct {
    long a;
    char b[3];
} item;

START_TEST(test_grow_doubles_from_first_and_zeroes_new_room)
{
    item *v = NULL;
    size_t n = 0, cap = 0;
    size_t caps[] = {4, 4, 4, 4, 8, 8, 8, 8, 16};
    for (size_t k = 0; k < sizeof caps / sizeof caps[0]; k++) {
        ck_assert_int_eq(GROW(v, n, cap, 4), 0);
        ck_assert_msg(cap == caps[k], "element %zu: capacity %zu, want %zu", k, cap, caps[k]);
        /* every element not yet appended is zero, whatever the allocator handed back */
        for (size_t i = n; i < cap; i++)
            ck_assert_msg(v[i].a == 0 && !v[i].b[0] && !v[i].b[1] && !v[i].b[2], "element %zu not zeroed", i);
        v[n].a = (long)n + 1;
        memset(v[n].b, 'x', sizeof v[n].b);
        n++;
    }
    for (size_t i = 0; i < n; i++)
        ck_assert_int_eq(v[i].a, (long)i + 1); /* what was there moves with the array */
    free(v);
}
END_TEST

START_TEST(test_grow_is_nothing_while_room_remains)
{
    char *v = malloc(8);
    ck_assert_ptr_nonnull(v);
    char *before = v;
    size_t cap = 8;
    memset(v, 'y', 8);
    ck_assert_int_eq(GROW(v, 7, cap, 64), 0);
    ck_assert_ptr_eq(v, before);
    ck_assert_uint_eq(cap, 8);
    ck_assert_int_eq(v[7], 'y'); /* room that exists is not zeroed again */
    free(v);
}
END_TEST

START_TEST(test_grow_keeps_the_array_when_it_cannot)
{
    item *v = NULL;
    size_t cap = 0;
    ck_assert_int_eq(GROW(v, 0, cap, 2), 0);
    item *before = v;
    v[0].a = 42;
    /* an element count whose bytes do not fit in size_t: no allocation is tried */
    size_t n = SIZE_MAX / sizeof *v + 1, cap2 = cap;
    ck_assert_int_eq(grow_room(&v, n, &cap2, sizeof *v, 2), -1);
    ck_assert_ptr_eq(v, before);
    ck_assert_uint_eq(cap2, 2);
    ck_assert_int_eq(v[0].a, 42);
    free(v);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("grow");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_grow_doubles_from_first_and_zeroes_new_room);
    tcase_add_test(tc, test_grow_is_nothing_while_room_remains);
    tcase_add_test(tc, test_grow_keeps_the_array_when_it_cannot);
    suite_add_tcase(s, tc);
    return check_run(s);
}
