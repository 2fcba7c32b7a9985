/* pickle_json.c - a pickle value expanded into a cJSON tree (pickle_to_json, pickle_decode of
 * pickle.h): shared values are copied, every node and byte charged, a value inside itself refused. */
#include "dumps/pickle_impl.h"

typedef struct {
    pickle_doc *d;
    size_t nodes, bytes, max_nodes, max_bytes;
    unsigned max_depth;
    oomscan_diag *diag;
} tree_budget;

static oomscan_status tree_charge(tree_budget *b, size_t extra)
{
    b->nodes++;
    b->bytes += sizeof(cJSON) + extra;
    if (b->nodes > b->max_nodes)
        return diag_set(b->diag, OOMSCAN_ERR_LIMIT, NULL,
                        "tree: more than the node limit of values (shared values are copied into the tree)");
    if (b->bytes > b->max_bytes)
        return diag_set(b->diag, OOMSCAN_ERR_LIMIT, NULL,
                        "tree: more than the byte limit (shared values are copied into the tree)");
    return OOMSCAN_OK;
}

/* A key that is not a string is written as its JSON text when it is small. */
static char *key_text(tree_budget *b, pickle_ref key, unsigned depth, oomscan_status *st);
static cJSON *tree(tree_budget *b, pickle_ref v, unsigned depth, oomscan_status *st);

static cJSON *tree(tree_budget *b, pickle_ref v, unsigned depth, oomscan_status *st)
{
    if (IS_IMM(v)) {
        cJSON *c = (*st = tree_charge(b, 0)) ? NULL : cJSON_CreateNumber((double)imm_value(v));
        if (!c && !*st)
            *st = diag_set(b->diag, OOMSCAN_ERR_NOMEM, NULL, "out of memory");
        return c;
    }
    pval *p = &b->d->v[v];
    size_t extra = (p->t == PK_STR || p->t == PK_BYTES) ? (size_t)p->n + 1 : 0;
    if ((*st = tree_charge(b, extra)))
        return NULL;
    cJSON *c = NULL;
    switch (p->t) {
    case PK_NONE:
        c = cJSON_CreateNull();
        break;
    case PK_BOOL:
        c = cJSON_CreateBool(p->u.i != 0);
        break;
    case PK_INT:
        c = cJSON_CreateNumber((double)p->u.i);
        break;
    case PK_FLOAT:
        c = cJSON_CreateNumber(p->u.d);
        break;
    case PK_STR:
    case PK_BYTES:
        c = cJSON_CreateString(p->u.s);
        break;
    case PK_LIST:
    case PK_DICT:
        if (depth >= b->max_depth) {
            *st = diag_set(b->diag, OOMSCAN_ERR_LIMIT, NULL, "tree: values nested deeper than the limit");
            return NULL;
        }
        if (p->onpath) {
            *st = diag_set(b->diag, OOMSCAN_ERR_LIMIT, NULL,
                           "tree: values nested deeper than the limit (a list or dict that contains itself)");
            return NULL;
        }
        c = p->t == PK_LIST ? cJSON_CreateArray() : cJSON_CreateObject();
        if (!c)
            break;
        b->d->v[v].onpath = 1;
        for (uint32_t i = 0; i < b->d->v[v].n && !*st; i++) {
            pval *q = &b->d->v[v]; /* re-read: nothing reallocates the arena here, but stay honest */
            if (q->t == PK_LIST) {
                cJSON *e = tree(b, q->u.k[i], depth + 1, st);
                if (e)
                    cJSON_AddItemToArray(c, e);
            } else {
                char *k = key_text(b, q->u.k[2 * i], depth + 1, st);
                cJSON *e = k ? tree(b, q->u.k[2 * i + 1], depth + 1, st) : NULL;
                if (e && !cJSON_AddItemToObject(c, k, e)) {
                    cJSON_Delete(e);
                    *st = diag_set(b->diag, OOMSCAN_ERR_NOMEM, NULL, "out of memory");
                }
                free(k);
            }
        }
        b->d->v[v].onpath = 0;
        if (*st) {
            cJSON_Delete(c);
            return NULL;
        }
        return c;
    default:
        break;
    }
    if (!c)
        *st = diag_set(b->diag, OOMSCAN_ERR_NOMEM, NULL, "out of memory");
    return c;
}

/* Nodes in v, or -1 once more than `budget` (a walk that stops early, so it costs at most budget). */
static int small_key_nodes(const pickle_doc *d, pickle_ref v, int budget, unsigned depth)
{
    if (IS_IMM(v))
        return 1;
    const pval *p = &d->v[v];
    if ((p->t == PK_STR || p->t == PK_BYTES) && p->n > 256)
        return -1;
    if (p->t != PK_LIST && p->t != PK_DICT)
        return 1;
    if (depth > 8)
        return -1;
    int n = 1;
    size_t k = (size_t)p->n * (p->t == PK_DICT ? 2 : 1);
    for (size_t i = 0; i < k; i++) {
        int m = small_key_nodes(d, p->u.k[i], budget - n, depth + 1);
        if (m < 0 || (n += m) > budget)
            return -1;
    }
    return n;
}

static char *key_text(tree_budget *b, pickle_ref key, unsigned depth, oomscan_status *st)
{
    const pval *p = IS_IMM(key) ? NULL : &b->d->v[key];
    char *s = NULL;
    if (p && (p->t == PK_STR || p->t == PK_BYTES)) {
        s = strdup(p->u.s);
    } else if (small_key_nodes(b->d, key, 64, 0) < 0) {
        /* a container printed as a key grows with every level a dict keyed by such keys adds: a few
         * DUPs of a 139-byte pickle asked for gigabytes (fuzz_pickle); real dumps key by str or int */
        s = strdup(p && p->t == PK_LIST ? "<tuple>" : "<dict>");
    } else {
        tree_budget kb = *b;
        cJSON *t = tree(&kb, key, depth, st);
        if (!t)
            return NULL;
        s = cJSON_PrintUnformatted(t);
        cJSON_Delete(t);
    }
    if (!s)
        *st = diag_set(b->diag, OOMSCAN_ERR_NOMEM, NULL, "out of memory");
    else if ((*st = tree_charge(b, strlen(s) + 1))) {
        free(s);
        s = NULL;
    }
    return s;
}

oomscan_status pickle_to_json(const pickle_doc *d, pickle_ref v, const pickle_limits *lim, uint64_t input,
                              cJSON **out, oomscan_diag *diag)
{
    *out = NULL;
    const pickle_limits *l = lim ? lim : &pickle_default_limits;
    if (!pickle_value_at(d, v))
        return diag_set(diag, OOMSCAN_ERR_FORMAT, NULL, "no value");
    uint64_t bound = ((uint64_t)64 << 20) + 8 * input;
    tree_budget b = {.d = (pickle_doc *)d, /* only the onpath marks change, and are restored */
                     .max_nodes = l->max_nodes,
                     .max_bytes = bound < l->max_bytes ? (size_t)bound : l->max_bytes,
                     .max_depth = l->max_depth,
                     .diag = diag};
    oomscan_status st = OOMSCAN_OK;
    *out = tree(&b, v, 0, &st);
    return *out ? OOMSCAN_OK : st;
}

oomscan_status pickle_decode(const unsigned char *p, size_t n, const pickle_limits *lim, cJSON **out,
                             oomscan_diag *diag)
{
    pickle_doc *d = NULL;
    *out = NULL;
    oomscan_status st = pickle_parse_mem(p, n, lim, &d, diag);
    if (st)
        return st;
    st = pickle_to_json(d, pickle_root(d), lim, n, out, diag);
    pickle_doc_free(d);
    return st;
}

