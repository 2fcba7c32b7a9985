/* check_main.h - the one way a suite is run: all tests, normal output, exit status for ctest. */
#ifndef OOMSCAN_CHECK_MAIN_H
#define OOMSCAN_CHECK_MAIN_H

#include <check.h>
#include <stdlib.h>

static inline int check_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
