/* lexicon.c - identifiers read as words (lexicon.h). */
#include "match/lexicon.h"

#include <string.h>

#define TOKENS 24
#define TOKEN_CAP 32

typedef struct {
    char t[TOKENS][TOKEN_CAP];
    unsigned char len[TOKENS];
    size_t n;
} tokens;

static int is_lower(char c) { return c >= 'a' && c <= 'z'; }
static int is_upper(char c) { return c >= 'A' && c <= 'Z'; }
static int is_digit(char c) { return c >= '0' && c <= '9'; }
static int is_alnum(char c) { return is_lower(c) || is_upper(c) || is_digit(c); }

/* Split into tokens: any non-alphanumeric separates; inside a run, a capital after a lower-case letter
 * or a digit starts a token (policyWorker), and so does a capital followed by a lower-case letter
 * after capitals (HTTPServer: http, server). Digits stay with the letters before them (WorkerV2:
 * worker, v2). A token longer than TOKEN_CAP - 1 is kept cut: it then matches only as a prefix. */
static void tokenise(const char *s, size_t n, tokens *tk)
{
    tk->n = 0;
    size_t i = 0;
    while (i < n && tk->n < TOKENS) {
        while (i < n && !is_alnum(s[i]))
            i++;
        if (i >= n)
            break;
        size_t k = 0;
        char *out = tk->t[tk->n];
        do {
            if (k < TOKEN_CAP - 1)
                out[k++] = is_upper(s[i]) ? (char)(s[i] - 'A' + 'a') : s[i];
            i++;
        } while (i < n && is_alnum(s[i]) &&
                 !(is_upper(s[i]) && (is_lower(s[i - 1]) || is_digit(s[i - 1]))) &&
                 !(is_upper(s[i]) && is_upper(s[i - 1]) && i + 1 < n && is_lower(s[i + 1])));
        out[k] = '\0';
        tk->len[tk->n++] = (unsigned char)k;
    }
}

static int word_matches(const pdb_stem *st, size_t w, const char *tok, size_t len)
{
    size_t wl = strlen(st->words[w]);
    if (st->prefix[w])
        return len >= wl && memcmp(tok, st->words[w], wl) == 0;
    /* an exact word also takes a plural -s (log_probs, update_weights) */
    return memcmp(tok, st->words[w], wl < len ? wl : len) == 0 && (len == wl || (len == wl + 1 && tok[wl] == 's'));
}

/* The longest stem (most words; the first listed among equals) matching at token `at`, -1 none. */
static int stem_at(const pdb *db, const tokens *tk, size_t at, unsigned where, size_t *used)
{
    int best = -1;
    size_t best_n = 0;
    for (size_t i = 0; i < db->n_stems; i++) {
        const pdb_stem *st = &db->stems[i];
        if (!(st->where & where) || st->n_words <= best_n || at + st->n_words > tk->n ||
            st->words[0][0] != tk->t[at][0])
            continue;
        size_t w = 0;
        while (w < st->n_words && word_matches(st, w, tk->t[at + w], tk->len[at + w]))
            w++;
        if (w == st->n_words) {
            best = (int)i;
            best_n = st->n_words;
        }
    }
    *used = best_n;
    return best;
}

/* How much a reading says: a phase named outright, one step away, nothing (an ambiguous name). */
static int strength(const pdb_stem *st) { return st->phase < 0 ? 0 : st->level == STEM_WEAK ? 1 : 2; }

int lexicon_read(const pdb *db, const char *s, size_t n, unsigned where)
{
    if (!db->n_stems || n == 0)
        return -1;
    tokens tk;
    tokenise(s, n, &tk);
    int best = -1;
    for (size_t at = 0; at < tk.n;) {
        size_t used;
        int st = stem_at(db, &tk, at, where, &used);
        if (st < 0) {
            at++;
            continue;
        }
        /* the last of the strongest readings: preprocess_dataset is a preprocessing step (the weak
         * "dataset" after it says less), actor_rollout_update_actor an update */
        if (best < 0 || strength(&db->stems[st]) >= strength(&db->stems[best]))
            best = st;
        at += used;
    }
    return best;
}

static int ident_start(char c) { return is_alnum(c) || c == '_'; }

int lexicon_read_code(const pdb *db, const char *code, size_t n, const char **word, size_t *word_len)
{
    size_t i = 0;
    while (i < n) {
        if (!ident_start(code[i]) || (i > 0 && ident_start(code[i - 1]))) {
            i++;
            continue;
        }
        size_t b = i;
        while (i < n && ident_start(code[i]))
            i++;
        size_t e = i;
        while (i < n && code[i] == ' ')
            i++;
        if (i < n && code[i] == '(' && !is_digit(code[b])) {
            int st = lexicon_read(db, code + b, e - b, STEM_IN_CALL);
            if (st >= 0) {
                *word = code + b;
                *word_len = e - b;
                return st;
            }
        }
    }
    return -1;
}

int lexicon_read_task(const pdb *db, const char *s, size_t n, const char **word, size_t *word_len)
{
    /* Class.method(  -> method; a bare name( is read whole */
    size_t i = 0, dot = (size_t)-1;
    while (i < n && (ident_start(s[i]) || s[i] == '.')) {
        if (s[i] == '.')
            dot = i;
        i++;
    }
    if (i == 0 || i >= n || s[i] != '(')
        return -1;
    size_t b = dot == (size_t)-1 ? 0 : dot + 1;
    *word = s + b;
    *word_len = i - b;
    return lexicon_read(db, s + b, i - b, STEM_IN_TASK);
}

/* Whether path[at..] begins with `part` ("/" in part also takes a Windows "\\"). */
static int part_at(const char *path, size_t n, size_t at, const char *part, size_t k)
{
    if (at + k > n)
        return 0;
    for (size_t i = 0; i < k; i++) {
        char c = path[at + i] == '\\' ? '/' : path[at + i];
        if (c != part[i])
            return 0;
    }
    return 1;
}

int lexicon_skips_path(const pdb *db, const char *path, size_t n)
{
    for (size_t i = 0; i < db->n_lex_skip_paths; i++) {
        const char *part = db->lex_skip_paths[i];
        size_t k = strlen(part);
        /* a folder name: at the path's start or after a separator */
        for (size_t j = 0; k && j + k <= n; j++)
            if ((j == 0 || path[j - 1] == '/' || path[j - 1] == '\\') && part_at(path, n, j, part, k))
                return 1;
    }
    return 0;
}
