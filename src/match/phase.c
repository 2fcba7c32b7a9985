/* phase.c - phase attribution from tracebacks and markers. */
#include "match/phase.h"

#include "match/lexicon.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS 16      /* interleaved streams tracked at once */
#define FRAMES 48     /* innermost frames kept per traceback */
#define TB_REACH 400  /* a traceback this many lines before the error no longer explains it */
/* A faulthandler dump starts right under its "Fatal Python error" line, but the failing ("Current")
 * thread may come after the other threads' blocks: its header this many lines after the failure is
 * still the failure's own stack. */
#define LATE_REACH 100
/* A traceback whose header comes this many lines after a failure is that failure's, printed after its
 * message (vLLM's "WorkerProc hit an exception." between them; no more: the header of a chained
 * exception's traceback, after "During handling of the above exception...", is four lines on). */
#define FOLLOW_REACH 3
/* A weak marker (NCCL communicator set-up) speaks for a failure only this many lines after it. */
#define WEAK_MARKER_REACH 40

typedef struct {
    int rule;       /* index into db->frames of the best rule for this frame, -1 none */
    int fallback;   /* the best fallback rule ("only when nothing better"), -1 none */
    int weak;       /* the first matching weak rule (phase_confidence "weak"), -1 none */
    int fw;         /* framework from a path rule */
    int lex;        /* the lexicon stem (db->stems) its called name or function reads as, -1 none */
    uint32_t hints; /* the db->hints this frame satisfies (a pattern's "in_traceback") */
    uint64_t line;
    char func[64];
    char file[96];  /* last part of the path, for evidence */
    char word[64];  /* the name the lexicon read (the call or the function) */
} frame;

typedef struct {
    char key[24];
    int first;          /* a faulthandler stack: most recent call first (frames[n-1] is still the innermost) */
    int other;          /* a faulthandler block of a thread other than the failing one: frames not kept */
    uint64_t tb_line;   /* line of the Traceback (or faulthandler stack) header */
    uint64_t last_line; /* line of the last frame */
    uint64_t used;      /* LRU clock */
    size_t n;           /* frames kept (innermost last); older ones dropped */
    frame frames[FRAMES];
} tb_slot;

struct phase_state {
    const pdb *db;
    tb_slot slots[SLOTS];
    uint64_t clock;
    int marker;          /* last marker index, -1 none */
    uint64_t marker_line;
    int weak_marker;     /* last weak marker index, -1 none: kept apart so that it never hides a strong one */
    uint64_t weak_marker_line;
    int late_marker;     /* last late marker (scan.c acts on it for the failure above); never decides here */
    uint64_t late_marker_line;
    int task_stem;       /* the lexicon stem a Ray task's method read as (phase_task_marker), -1 none */
    uint64_t task_line;
    char task_word[64];
    uint32_t votes[FW__COUNT];
};

/* A slot is read only once `used` says it holds a stream (slot_for clears it when it takes it), so
 * starting afresh clears 16 words, not the 140 KiB of frames: the scan makes a state per input, and
 * zeroing them was a tenth of a run over many small files. */
static void clear_slots(phase_state *ps)
{
    for (int i = 0; i < SLOTS; i++)
        ps->slots[i].used = 0;
}

phase_state *phase_new(const pdb *db)
{
    phase_state *ps = malloc(sizeof *ps);
    if (ps) {
        ps->db = db;
        clear_slots(ps);
        ps->clock = 0;
        memset(ps->votes, 0, sizeof ps->votes);
        phase_reset_source(ps);
    }
    return ps;
}

void phase_free(phase_state *ps) { free(ps); }

void phase_reset_source(phase_state *ps)
{
    clear_slots(ps);
    ps->marker = -1;
    ps->marker_line = 0;
    ps->weak_marker = -1;
    ps->weak_marker_line = 0;
    ps->late_marker = -1;
    ps->late_marker_line = 0;
    ps->task_stem = -1;
    ps->task_line = 0;
}

static tb_slot *slot_for(phase_state *ps, const char *key, int create)
{
    tb_slot *lru = &ps->slots[0];
    for (int i = 0; i < SLOTS; i++) {
        tb_slot *s = &ps->slots[i];
        if (s->used && strcmp(s->key, key) == 0) {
            s->used = ++ps->clock;
            return s;
        }
        if (s->used < lru->used)
            lru = s;
    }
    if (!create)
        return NULL;
    memset(lru, 0, sizeof *lru);
    snprintf(lru->key, sizeof lru->key, "%s", key);
    lru->used = ++ps->clock;
    return lru;
}

void phase_traceback(phase_state *ps, const char *key, uint64_t line)
{
    tb_slot *s = slot_for(ps, key, 1);
    s->n = 0;
    s->first = s->other = 0;
    s->tb_line = line;
    s->last_line = line;
}

static int starts_with(const char *s, size_t n, const char *prefix)
{
    size_t k = strlen(prefix);
    return n >= k && memcmp(s, prefix, k) == 0;
}

void phase_stack_header(phase_state *ps, const char *key, const char *text, size_t len, uint64_t line)
{
    while (len && (*text == ' ' || *text == '\t'))
        text++, len--;
    /* "Stack (...)" is a dump of the failing thread alone; "Current thread 0x..." is the failing one
     * among several. c10's "Exception raised from X at Y (most recent call first):" heads a C++ stack
     * and must not end the Python traceback printed above it. */
    int other = starts_with(text, len, "Thread 0x");
    if (!other && !starts_with(text, len, "Stack (most recent call first)") && !starts_with(text, len, "Current thread 0x"))
        return;
    tb_slot *s = slot_for(ps, key, 1);
    s->n = 0;
    s->first = 1;
    s->other = other;
    s->tb_line = line;
    s->last_line = line;
}

static int contains(const char *hay, size_t n, const char *needle)
{
    size_t k = strlen(needle);
    if (k == 0 || k > n)
        return 0;
    for (size_t i = 0; i + k <= n; i++)
        if (hay[i] == needle[0] && memcmp(hay + i, needle, k) == 0)
            return 1;
    return 0;
}

/* Whether a frame (any of path, func, code may be NULL) satisfies a condition of kind `kind` on
 * `value`: its code line or path holds value, its function is value. */
static int frame_has(pdb_frame_kind kind, const char *value, const char *path, size_t path_len, const char *func,
                     size_t func_len, const char *code, size_t code_len)
{
    if (kind == FRAME_CODE)
        return code && contains(code, code_len, value);
    if (kind == FRAME_FUNC)
        return func && strlen(value) == func_len && memcmp(value, func, func_len) == 0;
    return path && contains(path, path_len, value);
}

int phase_frame_rule(const pdb *db, const char *path, size_t path_len, const char *func, size_t func_len,
                     const char *code, size_t code_len, int *fallback)
{
    /* code beats func beats path: the code line names the very call (loss.backward()). */
    int best = -1, best_rank = -1, best_fb = -1, weak = -1;
    *fallback = -1;
    for (size_t i = 0; i < db->n_frames; i++) {
        const pdb_frame_rule *r = &db->frames[i];
        int hit = frame_has(r->kind, r->value, path, path_len, func, func_len, code, code_len);
        int rank = r->kind == FRAME_CODE ? 3 : r->kind == FRAME_FUNC ? 2 : 1;
        if (hit && r->fallback == 2) {
            if (weak < 0)
                weak = (int)i; /* weak rules: the first listed wins (engine paths before a model's forward) */
        } else if (hit && r->fallback && rank > best_fb) {
            best_fb = rank;
            *fallback = (int)i;
        } else if (hit && !r->fallback && rank > best_rank) {
            best_rank = rank;
            best = (int)i;
        }
    }
    if (*fallback < 0)
        *fallback = weak; /* a weak rule, reported only where no fallback rule hits (see phase_frame) */
    return best;
}

int phase_path_framework(const pdb *db, const char *path, size_t path_len)
{
    int best = -1;
    for (size_t i = 0; i < db->n_fw_rules; i++)
        if (db->fw_rules[i].in_path && contains(path, path_len, db->fw_rules[i].literal)) {
            int fw = db->fw_rules[i].framework;
            if (best < 0 || tax_framework_rank((tax_framework)fw) > tax_framework_rank((tax_framework)best))
                best = fw;
        }
    return best;
}

int phase_frame_stem(const pdb *db, const char *path, size_t path_len, const char *func, size_t func_len,
                     const char *code, size_t code_len, char *word, size_t cap)
{
    if (!db->n_stems || (path && lexicon_skips_path(db, path, path_len)))
        return -1;
    const char *w = NULL;
    size_t wl = 0;
    int st = code ? lexicon_read_code(db, code, code_len, &w, &wl) : -1;
    if (st < 0 || db->stems[st].phase < 0) {
        /* the call says nothing (or is ambiguous): the function it stands in may */
        st = func ? lexicon_read(db, func, func_len, STEM_IN_FUNC) : -1;
        w = func;
        wl = func_len;
    }
    if (st < 0 || db->stems[st].phase < 0)
        return -1;
    if (cap)
        snprintf(word, cap, "%.*s", (int)(wl < cap - 1 ? wl : cap - 1), w);
    return st;
}

void phase_frame(phase_state *ps, const char *key, const char *path, size_t path_len, const char *func,
                 size_t func_len, const char *code, size_t code_len, uint64_t line)
{
    const pdb *db = ps->db;
    tb_slot *s = slot_for(ps, key, 1);
    frame nf, *f = &nf;
    memset(f, 0, sizeof *f);
    f->line = line;
    f->rule = -1;
    f->fw = -1;
    s->last_line = line;
    snprintf(f->func, sizeof f->func, "%.*s", (int)(func_len < 63 ? func_len : 63), func);
    size_t base = path_len;
    while (base > 0 && path[base - 1] != '/' && path[base - 1] != '\\')
        base--;
    snprintf(f->file, sizeof f->file, "%.*s", (int)((path_len - base) < 95 ? path_len - base : 95), path + base);
    f->rule = phase_frame_rule(db, path, path_len, func, func_len, code, code_len, &f->fallback);
    f->fw = phase_path_framework(db, path, path_len);
    /* phase_frame_rule reports a weak rule in place of a missing fallback (for --check-patterns):
     * keep them apart here, since a weak rule decides only after everything else */
    f->weak = -1;
    if (f->fallback >= 0 && db->frames[f->fallback].fallback == 2) {
        f->weak = f->fallback;
        f->fallback = -1;
    } else if (f->fallback >= 0) {
        for (size_t i = 0; i < db->n_frames && f->weak < 0; i++) {
            const pdb_frame_rule *r = &db->frames[i];
            if (r->fallback != 2)
                continue;
            if (frame_has(r->kind, r->value, path, path_len, func, func_len, code, code_len))
                f->weak = (int)i;
        }
    }
    for (size_t h = 0; h < db->n_hints; h++)
        if (frame_has(db->hints[h].kind, db->hints[h].value, path, path_len, func, func_len, code, code_len))
            f->hints |= 1u << h;
    /* an exact rule decides for this frame before any stem could: the words need not be read */
    f->lex = f->rule >= 0 ? -1 : phase_frame_stem(db, path, path_len, func, func_len, code, code_len, f->word, sizeof f->word);
    if (f->fw >= 0)
        ps->votes[f->fw]++;
    if (s->other)
        return; /* another thread's stack: its paths still tell the framework, never the phase */
    if (s->first) {
        /* listed innermost first: each frame is further out, so it goes below the ones kept; past
         * FRAMES the outermost are the ones dropped */
        if (s->n == FRAMES)
            return;
        memmove(&s->frames[1], &s->frames[0], s->n * sizeof s->frames[0]);
        s->frames[0] = nf;
        s->n++;
        return;
    }
    if (s->n == FRAMES) {
        memmove(&s->frames[0], &s->frames[1], (FRAMES - 1) * sizeof s->frames[0]);
        s->n--;
    }
    s->frames[s->n++] = nf;
}

void phase_marker(phase_state *ps, size_t marker, uint64_t line)
{
    if (ps->db->markers[marker].lexicon)
        return; /* its phase comes from the words after it (phase_task_marker), none from the literal */
    if (ps->db->markers[marker].late) {
        ps->late_marker = (int)marker;
        ps->late_marker_line = line;
    } else if (ps->db->markers[marker].weak) {
        ps->weak_marker = (int)marker;
        ps->weak_marker_line = line;
    } else {
        ps->marker = (int)marker;
        ps->marker_line = line;
    }
    int fw = ps->db->markers[marker].framework;
    if (fw >= 0)
        ps->votes[fw]++;
}

void phase_task_marker(phase_state *ps, const char *after, size_t n, uint64_t line)
{
    const char *w;
    size_t wl;
    int st = lexicon_read_task(ps->db, after, n, &w, &wl);
    if (st < 0 || ps->db->stems[st].phase < 0)
        return;
    ps->task_stem = st;
    ps->task_line = line;
    snprintf(ps->task_word, sizeof ps->task_word, "%.*s", (int)(wl < 63 ? wl : 63), w);
}

/* A task method read as a phase speaks for failures this close after it (the task's own error block,
 * its traceback and the worker's lines around it). */
#define TASK_REACH 200

static int task_speaks(const phase_state *ps, uint64_t line, int weak, phase_answer *out)
{
    if (ps->task_stem < 0 || line < ps->task_line || line - ps->task_line > TASK_REACH)
        return 0;
    const pdb_stem *st = &ps->db->stems[ps->task_stem];
    if ((st->level == STEM_WEAK) != weak)
        return 0;
    out->phase = (tax_phase)st->phase;
    out->weak = weak;
    snprintf(out->evidence, sizeof out->evidence, "%sRay task %s (line %llu): the words \"%s\" name %s",
             weak ? "weak: " : "", ps->task_word, (unsigned long long)ps->task_line, st->text,
             tax_phase_human((tax_phase)st->phase));
    return 1;
}

void phase_framework_vote(phase_state *ps, int framework)
{
    if (framework >= 0 && framework < FW__COUNT)
        ps->votes[framework]++;
}

/* What decides within a traceback, strongest first: the exact rules, the lexicon's strong stems, the
 * fallback rules, the lexicon's fallback stems (collectives), then, one inference step away, the
 * lexicon's weak stems and the weak rules. Within a tier the innermost frame wins. */
enum { T_RULE, T_STEM, T_FALLBACK, T_STEM_FALLBACK, T_STEM_WEAK, T_WEAK, T__COUNT };
#define T_STRONG_END T_STEM_WEAK /* the tiers that give a strong answer end here */

/* The phase from a slot's frames, trying tiers [0, tiers). Fills out (and its framework from the
 * frames' paths even without a phase); 1 if a tier decided. `after` ends the evidence. */
static int decide_frames(const phase_state *ps, const tb_slot *s, int from, int tiers, const char *after, phase_answer *out)
{
    const pdb *db = ps->db;
    int fw = -1;
    for (size_t i = s->n; i-- > 0;)
        if (s->frames[i].fw >= 0 && fw < 0)
            fw = s->frames[i].fw;
    static const int stem_level[T__COUNT] = {-1, STEM_STRONG, -1, STEM_FALLBACK, STEM_WEAK, -1};
    for (int t = from; t < tiers; t++)
        for (size_t i = s->n; i-- > 0;) {
            const frame *f = &s->frames[i];
            if (stem_level[t] >= 0) {
                if (f->lex < 0 || db->stems[f->lex].level != stem_level[t])
                    continue;
                const pdb_stem *st = &db->stems[f->lex];
                out->phase = (tax_phase)st->phase;
                out->weak = t == T_STEM_WEAK;
                out->from_frames = 1;
                out->framework = fw;
                snprintf(out->evidence, sizeof out->evidence, "%s frame %s in %s (line %llu): the words \"%s\" name %s%s",
                         s->first ? "faulthandler stack" : "traceback", f->word, f->file, (unsigned long long)f->line,
                         st->text, tax_phase_human((tax_phase)st->phase), after);
                return 1;
            }
            int ri = t == T_RULE ? f->rule : t == T_FALLBACK ? f->fallback : f->weak;
            if (ri < 0)
                continue;
            const pdb_frame_rule *r = &db->frames[ri];
            out->phase = (tax_phase)r->phase;
            out->weak = r->fallback == 2;
            out->from_frames = 1;
            out->framework = r->framework >= 0 ? r->framework : fw;
            snprintf(out->evidence, sizeof out->evidence, "%s frame %s in %s (line %llu)%s",
                     s->first ? "faulthandler stack" : "traceback", r->kind == FRAME_CODE ? r->value : f->func, f->file,
                     (unsigned long long)f->line, after);
            return 1;
        }
    out->framework = fw;
    return 0;
}

void phase_decide(const phase_state *ps, const char *key, uint64_t line, int pattern_phase, int engine,
                  phase_answer *out)
{
    phase_decide_class(ps, key, line, pattern_phase, 0, engine, -1, 0, out);
}

/* An answer given as weak: "weak: " before its evidence (cut to fit). */
static void make_weak(phase_answer *out)
{
    size_t n = strnlen(out->evidence, sizeof out->evidence - 7);
    memmove(out->evidence + 6, out->evidence, n);
    memcpy(out->evidence, "weak: ", 6);
    out->evidence[6 + n] = '\0';
    out->weak = 1;
}

/* The traceback that explains a failure on stream `key` at `line`: its stream's, else a lone one of
 * the default stream; NULL when none has frames close enough above the line. */
static const tb_slot *near_slot(const phase_state *ps, const char *key, uint64_t line)
{
    const tb_slot *s = slot_for((phase_state *)ps, key, 0);
    /* Without a traceback of its own stream, a lone traceback of the default stream still counts. */
    if ((!s || s->n == 0) && key[0])
        s = slot_for((phase_state *)ps, "", 0);
    return s && s->n > 0 && line >= s->last_line && line - s->last_line <= TB_REACH ? s : NULL;
}

uint32_t phase_traceback_hints(const phase_state *ps, const char *key, uint64_t line)
{
    const tb_slot *s = near_slot(ps, key, line);
    uint32_t h = 0;
    for (size_t i = 0; s && i < s->n; i++)
        h |= s->frames[i].hints;
    return h;
}

void phase_decide_class(const phase_state *ps, const char *key, uint64_t line, int pattern_phase, int pattern_weak,
                        int engine, int cls, int stack_below, phase_answer *out)
{
    const pdb *db = ps->db;
    memset(out, 0, sizeof *out);
    out->phase = PH_UNKNOWN;
    out->framework = -1;
    const tb_slot *s = near_slot(ps, key, line);
    int near = s != NULL;
    if (near && decide_frames(ps, s, 0, T_STRONG_END, "", out)) {
        if (stack_below) /* maybe another failure's traceback (phase.h): phase_late's stack may replace it */
            make_weak(out);
        return;
    }
    if (pattern_phase >= 0 && !pattern_weak) {
        out->phase = (tax_phase)pattern_phase;
        snprintf(out->evidence, sizeof out->evidence, "the message itself is printed in %s",
                 tax_phase_human((tax_phase)pattern_phase));
        if (out->framework < 0)
            out->framework = engine;
        return;
    }
    if (task_speaks(ps, line, 0, out)) {
        if (out->framework < 0)
            out->framework = engine;
        return;
    }
    if (ps->marker >= 0 && db->markers[ps->marker].phase >= 0 &&
        (!db->markers[ps->marker].reach ||
         (line >= ps->marker_line && line - ps->marker_line <= (uint64_t)db->markers[ps->marker].reach))) {
        const pdb_marker *m = &db->markers[ps->marker];
        out->phase = (tax_phase)m->phase;
        if (out->framework < 0)
            out->framework = m->framework;
        snprintf(out->evidence, sizeof out->evidence, "last progress marker \"%s\" (line %llu)", m->literal,
                 (unsigned long long)ps->marker_line);
        return;
    }
    /* Weak evidence, one inference step away: it gives way to anything above. */
    int fw = out->framework;
    if (near && decide_frames(ps, s, 0, T__COUNT, " (weak: the only clue)", out)) {
        out->weak = 1;
        return;
    }
    out->framework = fw;
    if (pattern_phase >= 0 && pattern_weak) {
        out->phase = (tax_phase)pattern_phase;
        out->weak = 1;
        snprintf(out->evidence, sizeof out->evidence, "weak: the message points to %s",
                 tax_phase_human((tax_phase)pattern_phase));
        if (out->framework < 0)
            out->framework = engine;
        return;
    }
    if (task_speaks(ps, line, 1, out)) {
        if (out->framework < 0)
            out->framework = engine;
        return;
    }
    long wreach = ps->weak_marker >= 0 && db->markers[ps->weak_marker].reach ? db->markers[ps->weak_marker].reach
                                                                              : WEAK_MARKER_REACH;
    if (ps->weak_marker >= 0 && line >= ps->weak_marker_line && line - ps->weak_marker_line <= (uint64_t)wreach) {
        const pdb_marker *m = &db->markers[ps->weak_marker];
        out->phase = (tax_phase)m->phase;
        out->weak = 1;
        if (out->framework < 0)
            out->framework = m->framework;
        snprintf(out->evidence, sizeof out->evidence, "weak: \"%s\" %llu line(s) before the failure", m->literal,
                 (unsigned long long)(line - ps->weak_marker_line));
    } else if (cls >= 0 && cls < (int)(sizeof db->class_phase / sizeof db->class_phase[0]) && db->class_phase[cls] >= 0) {
        out->phase = (tax_phase)db->class_phase[cls];
        out->weak = 1;
        snprintf(out->evidence, sizeof out->evidence, "weak: a %s with nothing else pointing to a phase",
                 tax_class_name((tax_class)cls));
    }
    if (out->framework < 0)
        out->framework = engine;
}

int phase_late(const phase_state *ps, const char *key, uint64_t failure_line, phase_answer *out)
{
    memset(out, 0, sizeof *out);
    out->phase = PH_UNKNOWN;
    out->framework = -1;
    const tb_slot *s = slot_for((phase_state *)ps, key, 0);
    if (!s || !s->first || s->other || s->n == 0 || s->tb_line <= failure_line || s->tb_line - failure_line > LATE_REACH)
        return 0;
    /* Ordinary rules only: the stack may still be growing outward, and a fallback rule (a collective)
     * must not decide while an outer frame could still name the real phase. An ordinary rule matched
     * now is final, because every frame still to come is further out. */
    if (decide_frames(ps, s, 0, T_RULE + 1, ", printed after the failure", out))
        return 1;
    /* No ordinary rule yet: the weak tiers (a model's forward, weak word stems) still say where the
     * failure was, as a weak answer, which a later ordinary rule replaces (issue 31: an assert() in a
     * custom op called in forward had no phase at all). The fallbacks (a collective, a barrier) stay out:
     * a crash inside one is not known to be in the communication phase (fixtures/heldout's
     * segfault-pytorch-72086.log, the labels state none). */
    if (!decide_frames(ps, s, T_STEM_WEAK, T__COUNT, ", printed after the failure", out)) {
        out->framework = -1;
        return 0;
    }
    make_weak(out);
    return 1;
}

int phase_following(const phase_state *ps, const char *key, uint64_t failure_line, phase_answer *out,
                    uint64_t *tb_line)
{
    memset(out, 0, sizeof *out);
    out->phase = PH_UNKNOWN;
    out->framework = -1;
    const tb_slot *s = slot_for((phase_state *)ps, key, 0);
    if (!s || s->first || s->n == 0 || s->tb_line <= failure_line || s->tb_line - failure_line > FOLLOW_REACH)
        return 0;
    *tb_line = s->tb_line;
    if (decide_frames(ps, s, 0, T_STRONG_END, ", in the traceback printed after the failure", out))
        return 1;
    if (decide_frames(ps, s, 0, T__COUNT, ", in the traceback printed after the failure (weak: the only clue)", out)) {
        out->weak = 1;
        return 1;
    }
    out->framework = -1;
    return 0;
}

int phase_framework(const phase_state *ps)
{
    int best = FW_UNKNOWN;
    for (int f = 0; f < FW__COUNT; f++) {
        if (!ps->votes[f] || f == FW_UNKNOWN)
            continue;
        if (best == FW_UNKNOWN || tax_framework_rank((tax_framework)f) > tax_framework_rank((tax_framework)best) ||
            (tax_framework_rank((tax_framework)f) == tax_framework_rank((tax_framework)best) &&
             ps->votes[f] > ps->votes[best]))
            best = f;
    }
    return best;
}

const uint32_t *phase_framework_votes(const phase_state *ps) { return ps->votes; }

int phase_last_marker(const phase_state *ps, uint64_t *line)
{
    /* the latest of the three slots (a weak or late marker saved by --state goes back to its slot) */
    int m = ps->marker;
    *line = ps->marker_line;
    if (ps->weak_marker >= 0 && (m < 0 || ps->weak_marker_line > *line))
        m = ps->weak_marker, *line = ps->weak_marker_line;
    if (ps->late_marker >= 0 && (m < 0 || ps->late_marker_line > *line))
        m = ps->late_marker, *line = ps->late_marker_line;
    return m;
}
