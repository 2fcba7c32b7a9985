/* pickle_value.c - the pickle reader's value model (pickle_impl.h): the arena of values, their
 * reference counts, and the read-only accessors of pickle.h. */
#include "dumps/pickle_impl.h"

pickle_doc *pickle_value_doc_new(void)
{
    pickle_doc *d = calloc(1, sizeof *d);
    if (!d || !(d->v = calloc(1024, sizeof *d->v))) {
        free(d);
        return NULL;
    }
    d->capv = 1024;
    d->nv = FIRST_FREEABLE;
    d->v[REF_NONE].t = PK_NONE;
    d->v[REF_TRUE].t = PK_BOOL;
    d->v[REF_TRUE].u.i = 1;
    d->v[REF_FALSE].t = PK_BOOL;
    for (pickle_ref i = REF_NONE; i < FIRST_FREEABLE; i++)
        d->v[i].rc = 1;
    return d;
}

void pickle_doc_free(pickle_doc *d)
{
    if (!d)
        return;
    for (size_t i = FIRST_FREEABLE; i < d->nv; i++) {
        pval *p = &d->v[i];
        if (p->t == PK_LIST || p->t == PK_DICT)
            free(p->u.k);
        else if (p->t == PK_STR || p->t == PK_BYTES)
            free(p->u.s);
    }
    free(d->v);
    free(d->work);
    free(d);
}


/* (pickle_impl.h) */
void pickle_value_release(pickle_doc *d, pickle_ref v)
{
    pickle_ref *work = d->work;
    size_t nw = 0, cw = d->cwork;
    for (;;) {
        if (!IS_IMM(v) && v >= FIRST_FREEABLE && v < d->nv && d->v[v].t != PK_INVALID && --d->v[v].rc == 0) {
            pval *p = &d->v[v];
            d->live_nodes--;
            d->live_bytes -= val_bytes(p);
            if (p->t == PK_LIST || p->t == PK_DICT) {
                size_t k = (size_t)p->n * (p->t == PK_DICT ? 2 : 1);
                if (nw + k > cw) {
                    size_t c = cw ? cw * 2 : 64;
                    while (c < nw + k)
                        c *= 2;
                    pickle_ref *g = realloc(work, c * sizeof *g);
                    if (g) {
                        work = g;
                        cw = c;
                    }
                }
                if (k && nw + k <= cw) {
                    memcpy(work + nw, p->u.k, k * sizeof *work);
                    nw += k;
                } /* else: out of memory; the items stay allocated until the doc is freed */
                free(p->u.k);
            } else if (p->t == PK_STR || p->t == PK_BYTES) {
                free(p->u.s);
            }
            p->t = PK_INVALID;
            p->u.i = d->free_head;
            d->free_head = v;
        }
        if (!nw)
            break;
        v = work[--nw];
    }
    d->work = work;
    d->cwork = cw;
}


void pickle_doc_stats(const pickle_doc *d, uint64_t *input, size_t *peak_nodes, size_t *peak_bytes)
{
    *input = d ? d->input : 0;
    *peak_nodes = d ? d->peak_nodes : 0;
    *peak_bytes = d ? d->peak_bytes : 0;
}

/* ---- reading values ----------------------------------------------------------------------------- */

pickle_ref pickle_root(const pickle_doc *d) { return d ? d->root : 0; }

int pickle_permanent(const pickle_doc *d, pickle_ref v)
{
    const pval *p = pickle_value_at(d, v);
    return p && p->perm;
}

pickle_type pickle_type_of(const pickle_doc *d, pickle_ref v)
{
    if (d && IS_IMM(v))
        return PK_INT;
    const pval *p = pickle_value_at(d, v);
    return p ? (pickle_type)p->t : PK_INVALID;
}

size_t pickle_len(const pickle_doc *d, pickle_ref v)
{
    const pval *p = pickle_value_at(d, v);
    return p && (p->t == PK_LIST || p->t == PK_DICT || p->t == PK_STR || p->t == PK_BYTES) ? p->n : 0;
}

pickle_ref pickle_item(const pickle_doc *d, pickle_ref list, size_t i)
{
    const pval *p = pickle_value_at(d, list);
    return p && p->t == PK_LIST && i < p->n ? p->u.k[i] : 0;
}

pickle_ref pickle_dict_key(const pickle_doc *d, pickle_ref dict, size_t i)
{
    const pval *p = pickle_value_at(d, dict);
    return p && p->t == PK_DICT && i < p->n ? p->u.k[2 * i] : 0;
}

pickle_ref pickle_dict_value(const pickle_doc *d, pickle_ref dict, size_t i)
{
    const pval *p = pickle_value_at(d, dict);
    return p && p->t == PK_DICT && i < p->n ? p->u.k[2 * i + 1] : 0;
}

pickle_ref pickle_get(const pickle_doc *d, pickle_ref dict, const char *key)
{
    const pval *p = pickle_value_at(d, dict);
    if (!p || p->t != PK_DICT)
        return 0;
    size_t kl = strlen(key);
    /* The last of repeated keys wins, as it would in Python. setitem() already replaced repeats in a
     * dict of fewer than 256 keys, so there the first match is the only one, and is looked for from
     * the front (where the keys read most, "action", "filename", come in PyTorch's dumps). */
    int fwd = p->n < 256;
    for (size_t i = 0; i < p->n; i++) {
        size_t j = fwd ? i : p->n - 1 - i;
        pickle_ref kr = p->u.k[2 * j];
        if (IS_IMM(kr))
            continue;
        const pval *k = &d->v[kr];
        if (k->t == PK_STR && k->n == kl && k->u.s[0] == key[0] && memcmp(k->u.s, key, kl) == 0)
            return p->u.k[2 * j + 1];
    }
    return 0;
}

const char *pickle_str(const pickle_doc *d, pickle_ref v)
{
    const pval *p = pickle_value_at(d, v);
    return p && (p->t == PK_STR || p->t == PK_BYTES) ? p->u.s : NULL;
}

double pickle_num(const pickle_doc *d, pickle_ref v, double dflt)
{
    if (d && IS_IMM(v))
        return (double)imm_value(v);
    const pval *p = pickle_value_at(d, v);
    if (!p)
        return dflt;
    if (p->t == PK_INT || p->t == PK_BOOL)
        return (double)p->u.i;
    if (p->t == PK_FLOAT)
        return p->u.d;
    return dflt;
}

