/* native_op.c - a custom op as a C extension would have it: it checks its argument with assert(), as
 * native code does, and the check fails for the value train.py's native_abort_forward passes (a real
 * glibc assertion failure: abort(), SIGABRT). Built by scenarios.sh with the system's cc. */
#include <assert.h>

int realjobs_scale(int n)
{
    assert(n > 0 && "the op needs a positive size");
    return 2 * n;
}
