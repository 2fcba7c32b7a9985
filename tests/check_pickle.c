/* check_pickle.c - the safe pickle reader: the subset PyTorch's dumps use decodes to the same values
 * Python pickled (vectors made with CPython's pickle.dumps), and hostile or truncated input is a clear
 * error, never a crash, an object or unbounded work. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "dumps/pickle.h"

#define B(s) (const unsigned char *)(s), sizeof(s) - 1

/* pickle.dumps({'a': 1, 'b': [1, 2, 3], 'c': (1.5, None, True, False), 'd': 'héllo'}, protocol=2) */
static const char P2_DICT[] =
    "\x80\x02\x7d\x71\x00\x28\x58\x01\x00\x00\x00\x61\x71\x01\x4b\x01\x58\x01\x00\x00\x00\x62\x71\x02\x5d\x71\x03"
    "\x28\x4b\x01\x4b\x02\x4b\x03\x65\x58\x01\x00\x00\x00\x63\x71\x04\x28\x47\x3f\xf8\x00\x00\x00\x00\x00\x00\x4e"
    "\x88\x89\x74\x71\x05\x58\x01\x00\x00\x00\x64\x71\x06\x58\x06\x00\x00\x00\x68\xc3\xa9\x6c\x6c\x6f\x71\x07\x75"
    "\x2e";
/* pickle.dumps({'segments': [{'address': 139872, 'total_size': 2097152, 'blocks': [{'size': 512,
 * 'state': 'active_allocated'}]}], 'big': 2**40, 'neg': -5, 'neg_big': -(2**40), 'bytes': b'abc'},
 * protocol=4) */
static const char P4_NESTED[] =
    "\x80\x04\x95\xa6\x00\x00\x00\x00\x00\x00\x00\x7d\x94\x28\x8c\x08\x73\x65\x67\x6d\x65\x6e\x74\x73\x94\x5d\x94"
    "\x7d\x94\x28\x8c\x07\x61\x64\x64\x72\x65\x73\x73\x94\x4a\x60\x22\x02\x00\x8c\x0a\x74\x6f\x74\x61\x6c\x5f\x73"
    "\x69\x7a\x65\x94\x4a\x00\x00\x20\x00\x8c\x06\x62\x6c\x6f\x63\x6b\x73\x94\x5d\x94\x7d\x94\x28\x8c\x04\x73\x69"
    "\x7a\x65\x94\x4d\x00\x02\x8c\x05\x73\x74\x61\x74\x65\x94\x8c\x10\x61\x63\x74\x69\x76\x65\x5f\x61\x6c\x6c\x6f"
    "\x63\x61\x74\x65\x64\x94\x75\x61\x75\x61\x8c\x03\x62\x69\x67\x94\x8a\x06\x00\x00\x00\x00\x00\x01\x8c\x03\x6e"
    "\x65\x67\x94\x4a\xfb\xff\xff\xff\x8c\x07\x6e\x65\x67\x5f\x62\x69\x67\x94\x8a\x06\x00\x00\x00\x00\x00\xff\x8c"
    "\x05\x62\x79\x74\x65\x73\x94\x43\x03\x61\x62\x63\x94\x75\x2e";
/* shared = {'name': 'f', 'line': 3}; pickle.dumps({'frames': [shared]*3, 's': ['x', 'x']}, protocol=5) */
static const char P5_SHARED[] =
    "\x80\x05\x95\x3c\x00\x00\x00\x00\x00\x00\x00\x7d\x94\x28\x8c\x06\x66\x72\x61\x6d\x65\x73\x94\x5d\x94\x28\x7d"
    "\x94\x28\x8c\x04\x6e\x61\x6d\x65\x94\x8c\x01\x66\x94\x8c\x04\x6c\x69\x6e\x65\x94\x4b\x03\x75\x68\x03\x68\x03"
    "\x65\x8c\x01\x73\x94\x5d\x94\x28\x8c\x01\x78\x94\x68\x09\x65\x75\x2e";
/* pickle.dumps(collections.OrderedDict(), protocol=2): GLOBAL + REDUCE */
static const char GLOBAL_REDUCE[] =
    "\x80\x02\x63\x63\x6f\x6c\x6c\x65\x63\x74\x69\x6f\x6e\x73\x0a\x4f\x72\x64\x65\x72\x65\x64\x44\x69\x63\x74\x0a"
    "\x71\x00\x29\x52\x71\x01\x2e";

static char *decode_json(const unsigned char *p, size_t n, oomscan_status *st, oomscan_diag *d)
{
    cJSON *v = NULL;
    *st = pickle_decode(p, n, NULL, &v, d);
    if (*st)
        return NULL;
    char *s = cJSON_PrintUnformatted(v);
    cJSON_Delete(v);
    return s;
}

static void expect_json(const unsigned char *p, size_t n, const char *want)
{
    oomscan_status st;
    oomscan_diag d;
    diag_clear(&d);
    char *got = decode_json(p, n, &st, &d);
    ck_assert_msg(st == OOMSCAN_OK, "decode failed: %s", d.msg);
    ck_assert_str_eq(got, want);
    free(got);
}

static void expect_error(const unsigned char *p, size_t n, const pickle_limits *lim, oomscan_status want,
                         const char *fragment)
{
    cJSON *v = (cJSON *)1;
    oomscan_diag d;
    diag_clear(&d);
    oomscan_status st = pickle_decode(p, n, lim, &v, &d);
    ck_assert_msg(st == want, "status %d, want %d (%s)", st, want, d.msg);
    ck_assert_ptr_null(v);
    ck_assert_msg(strstr(d.msg, fragment), "message '%s' lacks '%s'", d.msg, fragment);
}

START_TEST(test_pickle_decodes_protocol2_dict)
{
    expect_json(B(P2_DICT), "{\"a\":1,\"b\":[1,2,3],\"c\":[1.5,null,true,false],\"d\":\"h\xc3\xa9llo\"}");
}
END_TEST

START_TEST(test_pickle_decodes_protocol4_frames_and_longs)
{
    expect_json(B(P4_NESTED), "{\"segments\":[{\"address\":139872,\"total_size\":2097152,\"blocks\":[{\"size\":512,"
                              "\"state\":\"active_allocated\"}]}],\"big\":1099511627776,\"neg\":-5,"
                              "\"neg_big\":-1099511627776,\"bytes\":\"abc\"}");
}
END_TEST

START_TEST(test_pickle_tree_copies_shared_values)
{
    expect_json(B(P5_SHARED), "{\"frames\":[{\"name\":\"f\",\"line\":3},{\"name\":\"f\",\"line\":3},"
                              "{\"name\":\"f\",\"line\":3}],\"s\":[\"x\",\"x\"]}");
}
END_TEST

START_TEST(test_pickle_refuses_globals_and_reduce)
{
    expect_error(B(GLOBAL_REDUCE), NULL, OOMSCAN_ERR_FORMAT, "GLOBAL refused");
    expect_error(B("\x80\x04\x8c\x01\x61\x8c\x01\x62\x93\x29\x52\x2e"), NULL, OOMSCAN_ERR_FORMAT, "STACK_GLOBAL refused");
    expect_error(B("\x80\x02\x7d\x7d\x62\x2e"), NULL, OOMSCAN_ERR_FORMAT, "BUILD refused");
    expect_error(B("\x80\x02\x29\x29\x81\x2e"), NULL, OOMSCAN_ERR_FORMAT, "NEWOBJ refused");
    expect_error(B("\x80\x02\x4b\x01\x51\x2e"), NULL, OOMSCAN_ERR_FORMAT, "PERSID refused");
}
END_TEST

START_TEST(test_pickle_rejects_other_protocols)
{
    expect_error(B("\x28\x6c\x70\x30\x0a\x49\x31\x0a\x61\x2e"), NULL, OOMSCAN_ERR_FORMAT, "protocol 0/1 opcode");
    expect_error(B("\x80\x01\x4e\x2e"), NULL, OOMSCAN_ERR_FORMAT, "protocol 1 is not supported");
    expect_error(B("\x80\x06\x4e\x2e"), NULL, OOMSCAN_ERR_FORMAT, "protocol 6 is not supported");
}
END_TEST

START_TEST(test_pickle_truncated_is_an_error_at_every_length)
{
    const unsigned char *p = (const unsigned char *)P4_NESTED;
    size_t n = sizeof P4_NESTED - 1;
    for (size_t k = 0; k < n; k++) {
        cJSON *v = NULL;
        oomscan_diag d;
        diag_clear(&d);
        oomscan_status st = pickle_decode(p, k, NULL, &v, &d);
        ck_assert_msg(st == OOMSCAN_ERR_FORMAT && !v, "prefix of %zu bytes: status %d", k, st);
        ck_assert_msg(strstr(d.msg, "byte ") == d.msg, "prefix %zu: message '%s' has no offset", k, d.msg);
    }
}
END_TEST

START_TEST(test_pickle_depth_is_bounded)
{
    /* None wrapped in 200 one-tuples */
    unsigned char buf[2 + 1 + 200 + 1];
    size_t n = 0;
    buf[n++] = 0x80;
    buf[n++] = 2;
    buf[n++] = 'N';
    for (int i = 0; i < 200; i++)
        buf[n++] = 0x85;
    buf[n++] = '.';
    expect_error(buf, n, NULL, OOMSCAN_ERR_LIMIT, "nested deeper");
    /* and 200 open MARKs */
    unsigned char marks[2 + 200];
    marks[0] = 0x80;
    marks[1] = 2;
    memset(marks + 2, '(', 200);
    expect_error(marks, sizeof marks, NULL, OOMSCAN_ERR_LIMIT, "MARKs nested deeper");
}
END_TEST

START_TEST(test_pickle_memo_copies_are_charged_to_the_node_budget)
{
    /* a list of 8 items memoised, then fetched 100000 times into one list: 900000 nodes of copies */
    size_t cap = 16 + 100000 * 4;
    unsigned char *buf = malloc(cap);
    size_t n = 0;
    buf[n++] = 0x80;
    buf[n++] = 4;
    buf[n++] = ']'; /* outer */
    buf[n++] = ']'; /* inner */
    buf[n++] = '(';
    for (int i = 0; i < 8; i++)
        buf[n++] = 'N';
    buf[n++] = 'e';
    buf[n++] = 0x94; /* MEMOIZE inner as 0 */
    buf[n++] = 'a';
    for (int i = 0; i < 100000; i++) {
        buf[n++] = 'h';
        buf[n++] = 0;
        buf[n++] = 'a';
    }
    buf[n++] = '.';
    pickle_limits lim = pickle_default_limits;
    lim.max_nodes = 100000;
    expect_error(buf, n, &lim, OOMSCAN_ERR_LIMIT, "node limit");
    free(buf);
}
END_TEST

START_TEST(test_pickle_refuses_hostile_sizes_and_indices)
{
    /* BINUNICODE8 claiming 2^60 bytes: refused before any allocation */
    expect_error(B("\x80\x04\x8d\x00\x00\x00\x00\x00\x00\x00\x10\x2e"), NULL, OOMSCAN_ERR_LIMIT, "string limit");
    /* a 4 GiB memo index */
    expect_error(B("\x80\x02\x4e\x72\xff\xff\xff\xff\x2e"), NULL, OOMSCAN_ERR_FORMAT, "memo index out of order");
    expect_error(B("\x80\x02\x68\x05\x2e"), NULL, OOMSCAN_ERR_FORMAT, "never stored");
    /* a frame longer than the file */
    expect_error(B("\x80\x04\x95\xff\x00\x00\x00\x00\x00\x00\x00\x4e\x2e"), NULL, OOMSCAN_ERR_FORMAT, "frame");
    /* structure errors */
    expect_error(B("\x80\x02\x4e\x61\x2e"), NULL, OOMSCAN_ERR_FORMAT, "APPEND without a list");
    expect_error(B("\x80\x02\x7d\x28\x4e\x75\x2e"), NULL, OOMSCAN_ERR_FORMAT, "odd number");
    expect_error(B("\x80\x02\x65\x2e"), NULL, OOMSCAN_ERR_FORMAT, "no MARK");
    expect_error(B("\x80\x02\x2e"), NULL, OOMSCAN_ERR_FORMAT, "empty stack");
    expect_error(B("\x80\x02\xff"), NULL, OOMSCAN_ERR_FORMAT, "unknown");
    pickle_limits lim = pickle_default_limits;
    lim.max_input = 4;
    expect_error(B(P2_DICT), &lim, OOMSCAN_ERR_LIMIT, "over the limit");
}
END_TEST

START_TEST(test_pickle_survives_every_single_byte_change)
{
    /* each byte of a real pickle set to each of a few values: any outcome but a crash or a leak
     * (the sanitizer build checks the latter) */
    static const unsigned char vals[] = {0x00, 0x01, 0x28, 0x2e, 0x68, 0x7d, 0x80, 0x94, 0xff};
    size_t n = sizeof P4_NESTED - 1;
    unsigned char *buf = malloc(n);
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < sizeof vals; k++) {
            memcpy(buf, P4_NESTED, n);
            buf[i] = vals[k];
            cJSON *v = NULL;
            oomscan_diag d;
            oomscan_status st = pickle_decode(buf, n, NULL, &v, &d);
            ck_assert(st == OOMSCAN_OK ? v != NULL : v == NULL);
            cJSON_Delete(v);
        }
    free(buf);
}
END_TEST

START_TEST(test_pickle_sniff_knows_pickles_from_text)
{
    ck_assert(pickle_sniff(B(P2_DICT)));
    ck_assert(pickle_sniff(B(P4_NESTED)));
    ck_assert(!pickle_sniff(B("[  12.3] kernel: oom")));
    ck_assert(!pickle_sniff(B("\x80\x09\x7d")));
}
END_TEST


START_TEST(test_pickle_memo_fetch_is_a_reference_not_a_copy)
{
    /* issue 35 item 3: 101 bytes that append two memo fetches of a list to itself 16 times. As copies
     * that was 16 M nodes (1.3 GiB, 10 s) before the node limit; as references it is one list
     * holding itself 32 times, which the tree refuses at once */
    unsigned char buf[101];
    size_t n = 0;
    buf[n++] = 0x80;
    buf[n++] = 4;
    buf[n++] = ']';
    buf[n++] = 0x94; /* MEMOIZE as 0 */
    for (int i = 0; i < 16; i++) {
        buf[n++] = '(';
        buf[n++] = 'h';
        buf[n++] = 0;
        buf[n++] = 'h';
        buf[n++] = 0;
        buf[n++] = 'e';
    }
    buf[n++] = '.';
    ck_assert_uint_eq(n, 101);
    pickle_doc *d = NULL;
    oomscan_diag dg;
    ck_assert_int_eq(pickle_parse_mem(buf, n, NULL, &d, &dg), OOMSCAN_OK);
    uint64_t in;
    size_t nodes, bytes;
    pickle_doc_stats(d, &in, &nodes, &bytes);
    ck_assert_uint_eq(pickle_len(d, pickle_root(d)), 32);
    ck_assert_uint_eq(pickle_item(d, pickle_root(d), 31), pickle_root(d));
    ck_assert_msg(nodes <= 2 && bytes < 4096, "%zu values, %zu bytes held", nodes, bytes);
    pickle_doc_free(d);
    expect_error(buf, n, NULL, OOMSCAN_ERR_LIMIT, "contains itself");
}
END_TEST

START_TEST(test_pickle_budgets_count_bytes_of_shared_strings)
{
    /* issue 35 item 3: a 64 KiB string tripled 12 times (a list of three fetches of the last list,
     * twelve levels deep): 3^12 copies of 64 KiB, 34 GB, asked for by 65 KB of pickle. The string is
     * held once; the tree that would copy it stops at its byte bound */
    size_t cap = 70000;
    unsigned char *buf = malloc(cap);
    size_t n = 0;
    buf[n++] = 0x80;
    buf[n++] = 4;
    buf[n++] = 'X';
    uint32_t len = 65536;
    memcpy(buf + n, &len, 4); /* little-endian on every machine this builds on; checked below */
    ck_assert_int_eq(buf[n + 2], 1);
    n += 4;
    memset(buf + n, 'a', len);
    n += len;
    buf[n++] = 0x94; /* memo 0 */
    for (int level = 0; level < 12; level++) {
        buf[n++] = 'h';
        buf[n++] = (unsigned char)level;
        buf[n++] = 'h';
        buf[n++] = (unsigned char)level;
        buf[n++] = 'h';
        buf[n++] = (unsigned char)level;
        buf[n++] = 0x87; /* TUPLE3 */
        buf[n++] = 0x94; /* memo level + 1 */
    }
    buf[n++] = '.';
    pickle_doc *d = NULL;
    oomscan_diag dg;
    ck_assert_int_eq(pickle_parse_mem(buf, n, NULL, &d, &dg), OOMSCAN_OK);
    uint64_t in;
    size_t nodes, bytes;
    pickle_doc_stats(d, &in, &nodes, &bytes);
    ck_assert_msg(bytes < 2 * 65536 + 4096, "%zu bytes held for a %zu-byte pickle", bytes, n);
    ck_assert_uint_eq(pickle_len(d, pickle_root(d)), 3);
    pickle_doc_free(d);
    expect_error(buf, n, NULL, OOMSCAN_ERR_LIMIT, "byte limit");
    free(buf);
}
END_TEST

/* A snapshot-shaped pickle as Python's pickler writes it (protocol 4, every dict, list and str
 * memoised): {"device_traces": [[{"action": "alloc", "addr": i, "frames": F}, ...]]} where F is one
 * frames list shared by every event; n events in APPENDS batches of 1000. */
static unsigned char *trace_pickle(size_t nev, size_t *len)
{
    size_t cap = 64 + nev * 40, n = 0;
    unsigned char *b = malloc(cap);
    uint32_t memo = 0;
#define PUT(c) (b[n++] = (unsigned char)(c))
#define STR(s)                                                                                                         \
    do {                                                                                                               \
        PUT(0x8c);                                                                                                     \
        PUT(strlen(s));                                                                                                \
        memcpy(b + n, s, strlen(s));                                                                                   \
        n += strlen(s);                                                                                                \
        PUT(0x94);                                                                                                     \
        memo++;                                                                                                        \
    } while (0)
#define GET(i)                                                                                                         \
    do {                                                                                                               \
        PUT('j');                                                                                                      \
        uint32_t g_ = (i);                                                                                             \
        memcpy(b + n, &g_, 4);                                                                                         \
        n += 4;                                                                                                        \
    } while (0)
    PUT(0x80), PUT(4), PUT('}'), PUT(0x94), memo++;
    STR("device_traces");
    PUT(']'), PUT(0x94), memo++; /* outer */
    PUT(']'), PUT(0x94), memo++; /* inner */
    uint32_t k_action = 0, k_alloc = 0, k_addr = 0, k_frames = 0, frames = 0;
    for (size_t i = 0; i < nev; i++) {
        if (i % 1000 == 0)
            PUT('(');
        PUT('}'), PUT(0x94), memo++;
        PUT('(');
        if (i == 0) {
            k_action = memo;
            STR("action");
            k_alloc = memo;
            STR("alloc");
            k_addr = memo;
            STR("addr");
        } else {
            GET(k_action);
            GET(k_alloc);
            GET(k_addr);
        }
        PUT('J');
        uint32_t a = (uint32_t)i * 512;
        memcpy(b + n, &a, 4);
        n += 4;
        if (i == 0) {
            k_frames = memo;
            STR("frames");
            frames = memo;
            PUT(']'), PUT(0x94), memo++;
        } else {
            GET(k_frames);
            GET(frames);
        }
        PUT('u');
        if (i % 1000 == 999 || i + 1 == nev)
            PUT('e');
    }
    PUT('a'); /* inner into outer */
    PUT('s'); /* root["device_traces"] = outer */
    PUT('.');
#undef PUT
#undef STR
#undef GET
    *len = n;
    return b;
}

typedef struct {
    const unsigned char *p;
    size_t n, pos;
} mem_stream;

static ssize_t mem_read(void *ud, void *buf, size_t cap)
{
    mem_stream *m = ud;
    size_t k = m->n - m->pos < cap ? m->n - m->pos : cap;
    if (k > 4096)
        k = 4096; /* small reads: the window must refill across opcodes */
    memcpy(buf, m->p + m->pos, k);
    m->pos += k;
    return (ssize_t)k;
}

static ssize_t mem_reread(void *ud, void *buf, size_t n, uint64_t off)
{
    mem_stream *m = ud;
    if (off > m->n || n > m->n - off)
        return -1;
    memcpy(buf, m->p + off, n);
    return (ssize_t)n;
}

typedef struct {
    size_t count, wrong;
} items_seen;

/* (checked by counting: an assertion per item would cost Check a write each) */
static int count_items(void *ud, const pickle_doc *d, size_t list, pickle_ref v)
{
    items_seen *c = ud;
    const char *action = pickle_str(d, pickle_get(d, v, "action"));
    if (list != 0 || !action || strcmp(action, "alloc") != 0 ||
        pickle_num(d, pickle_get(d, v, "addr"), -1) != (double)(c->count * 512) ||
        pickle_type_of(d, pickle_get(d, v, "frames")) != PK_LIST)
        c->wrong++;
    c->count++;
    return 0;
}

START_TEST(test_pickle_streams_a_long_trace_in_flat_memory)
{
    /* 200,000 events streamed from a file-like source read twice: every event is handed over and let
     * go (the first pass found its memo entry never fetched), so what is held stays at one batch */
    size_t n;
    unsigned char *p = trace_pickle(200000, &n);
    mem_stream a = {p, n, 0}, b = {p, n, 0};
    items_seen seen = {0, 0};
    pickle_input in = {.read = mem_read, .read_ud = &a, .reread = mem_reread, .reread_ud = &b,
                       .stream_key = "device_traces", .item = count_items, .item_ud = &seen};
    pickle_doc *d = NULL;
    oomscan_diag dg;
    diag_clear(&dg);
    ck_assert_msg(pickle_parse(&in, NULL, &d, &dg) == OOMSCAN_OK, "%s", dg.msg);
    ck_assert_uint_eq(seen.count, 200000);
    ck_assert_uint_eq(seen.wrong, 0);
    uint64_t input;
    size_t nodes, bytes;
    pickle_doc_stats(d, &input, &nodes, &bytes);
    ck_assert_uint_eq(input, n);
    ck_assert_msg(nodes < 10000, "%zu values held at the peak", nodes);
    /* the root keeps its shape, the streamed list empty */
    pickle_ref outer = pickle_get(d, pickle_root(d), "device_traces");
    ck_assert_uint_eq(pickle_len(d, outer), 1);
    ck_assert_uint_eq(pickle_len(d, pickle_item(d, outer, 0)), 0);
    pickle_doc_free(d);
    /* read once (no reread), the memo keeps every event: still references, still all handed over */
    a.pos = 0;
    seen.count = seen.wrong = 0;
    in.reread = NULL;
    ck_assert_int_eq(pickle_parse(&in, NULL, &d, &dg), OOMSCAN_OK);
    ck_assert_uint_eq(seen.count, 200000);
    ck_assert_uint_eq(seen.wrong, 0);
    pickle_doc_free(d);
    free(p);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("pickle");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_pickle_decodes_protocol2_dict);
    tcase_add_test(tc, test_pickle_decodes_protocol4_frames_and_longs);
    tcase_add_test(tc, test_pickle_tree_copies_shared_values);
    tcase_add_test(tc, test_pickle_refuses_globals_and_reduce);
    tcase_add_test(tc, test_pickle_rejects_other_protocols);
    tcase_add_test(tc, test_pickle_truncated_is_an_error_at_every_length);
    tcase_add_test(tc, test_pickle_depth_is_bounded);
    tcase_add_test(tc, test_pickle_memo_copies_are_charged_to_the_node_budget);
    tcase_add_test(tc, test_pickle_refuses_hostile_sizes_and_indices);
    tcase_add_test(tc, test_pickle_survives_every_single_byte_change);
    tcase_add_test(tc, test_pickle_sniff_knows_pickles_from_text);
    tcase_add_test(tc, test_pickle_memo_fetch_is_a_reference_not_a_copy);
    tcase_add_test(tc, test_pickle_budgets_count_bytes_of_shared_strings);
    tcase_add_test(tc, test_pickle_streams_a_long_trace_in_flat_memory);
    suite_add_tcase(s, tc);
    return check_run(s);
}
