/* input_readahead.c - producer thread + ring of READAHEAD_SLOTS buffers. One mutex, two condition
 * variables; the copy out of the ring costs far less than the inflate it overlaps with. */
#include "input/input_readahead.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* On by default: with ISA-L, inflating 1 GiB costs about as much as scanning it, so overlapping the
 * two is what brings a .gz scan under half of zcat's time (docs/performance.md). */
static atomic_int readahead_on = 1;

void input_set_readahead(int on)
{
    atomic_store(&readahead_on, on ? 1 : 0);
}

int input_readahead_enabled(void)
{
    return atomic_load(&readahead_on);
}

typedef struct {
    unsigned char *buf;
    size_t len;  /* bytes filled */
    size_t pos;  /* bytes already handed to the reader */
    int last;    /* 1 = end after these bytes, -1 = error after these bytes */
} slot;

struct input_ra {
    input_ra_pull_fn pull;
    void *ud;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t can_fill, can_read;
    slot slots[READAHEAD_SLOTS];
    unsigned head;   /* next slot the reader takes */
    unsigned filled; /* slots ready for the reader */
    int stop;        /* the reader is gone */
    int finished;    /* the reader saw the end or the error: every call repeats it */
    char err[512];
};

static void *producer(void *arg)
{
    input_ra *r = arg;
    unsigned tail = 0;
    for (;;) {
        pthread_mutex_lock(&r->mu);
        while (r->filled == READAHEAD_SLOTS && !r->stop)
            pthread_cond_wait(&r->can_fill, &r->mu);
        int stop = r->stop;
        pthread_mutex_unlock(&r->mu);
        if (stop)
            return NULL;

        /* The slot at `tail` is ours until we publish it. Fill it whole: fewer hand-offs. */
        slot *s = &r->slots[tail];
        s->len = s->pos = 0;
        s->last = 0;
        while (s->len < READAHEAD_SLOT_SIZE) {
            ssize_t n = r->pull(r->ud, s->buf + s->len, READAHEAD_SLOT_SIZE - s->len, r->err, sizeof r->err);
            if (n < 0) {
                s->last = -1;
                break;
            }
            if (n == 0) {
                s->last = 1;
                break;
            }
            s->len += (size_t)n;
        }
        pthread_mutex_lock(&r->mu);
        r->filled++;
        pthread_cond_signal(&r->can_read);
        pthread_mutex_unlock(&r->mu);
        if (s->last)
            return NULL;
        tail = (tail + 1) % READAHEAD_SLOTS;
    }
}

input_ra *input_ra_start(input_ra_pull_fn pull, void *ud)
{
    input_ra *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->pull = pull;
    r->ud = ud;
    for (int i = 0; i < READAHEAD_SLOTS; i++) {
        r->slots[i].buf = malloc(READAHEAD_SLOT_SIZE);
        if (!r->slots[i].buf)
            goto fail;
    }
    if (pthread_mutex_init(&r->mu, NULL) != 0)
        goto fail;
    if (pthread_cond_init(&r->can_fill, NULL) != 0 || pthread_cond_init(&r->can_read, NULL) != 0 ||
        pthread_create(&r->thread, NULL, producer, r) != 0) {
        /* Destroying a never-initialised condvar is harmless on glibc only if it is zeroed: it is. */
        pthread_cond_destroy(&r->can_fill);
        pthread_cond_destroy(&r->can_read);
        pthread_mutex_destroy(&r->mu);
        goto fail;
    }
    return r;
fail:
    for (int i = 0; i < READAHEAD_SLOTS; i++)
        free(r->slots[i].buf);
    free(r);
    return NULL;
}

ssize_t input_ra_read(input_ra *r, void *buf, size_t cap, char *err, size_t errcap)
{
    if (r->finished) {
        if (r->finished < 0)
            snprintf(err, errcap, "%s", r->err);
        return r->finished < 0 ? -1 : 0;
    }
    pthread_mutex_lock(&r->mu);
    while (r->filled == 0)
        pthread_cond_wait(&r->can_read, &r->mu);
    pthread_mutex_unlock(&r->mu);

    /* The slot at `head` is ours until we release it. */
    slot *s = &r->slots[r->head];
    size_t n = s->len - s->pos;
    if (n > cap)
        n = cap;
    if (n > 0) {
        memcpy(buf, s->buf + s->pos, n);
        s->pos += n;
    }
    if (s->pos < s->len)
        return (ssize_t)n;
    int last = s->last;
    pthread_mutex_lock(&r->mu);
    r->filled--;
    r->head = (r->head + 1) % READAHEAD_SLOTS;
    pthread_cond_signal(&r->can_fill);
    pthread_mutex_unlock(&r->mu);
    if (last)
        r->finished = last > 0 ? 1 : -1;
    if (n > 0)
        return (ssize_t)n;
    /* An emptied last slot (the end or the error comes now); published slots are otherwise full. */
    return input_ra_read(r, buf, cap, err, errcap);
}

void input_ra_stop(input_ra *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->mu);
    r->stop = 1;
    pthread_cond_signal(&r->can_fill);
    pthread_mutex_unlock(&r->mu);
    pthread_join(r->thread, NULL);
    pthread_cond_destroy(&r->can_fill);
    pthread_cond_destroy(&r->can_read);
    pthread_mutex_destroy(&r->mu);
    for (int i = 0; i < READAHEAD_SLOTS; i++)
        free(r->slots[i].buf);
    free(r);
}
