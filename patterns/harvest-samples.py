#!/usr/bin/env python3
"""harvest-samples.py - give each context rule without samples a real line from fixtures/ it decides.

For every rule of patterns/context/phases.json (frames, fallback_frames, markers) and
patterns/context/frameworks.json (rules) that has no "samples", look through the fixture logs
(fixtures/**/*.log, except fixtures/heldout: that set is never used for samples) for the first line
the rule gives its result for, the way the scanner reads it, and record it as
{"line": ..., "source": "fixtures/<path>"}:

  frames func/path   a traceback frame line `File "PATH", line N, in FUNC` whose function equals /
                     whose path holds the value, and whose winning rule (code > func > path, first in
                     the data among equals; fallback rules apart) has the rule's phase and framework
  frames code        a line printed under a frame line that holds the value, likewise
  markers            a line holding the literal and no marker literal of another phase/framework
  rules (line)       a line holding the literal and no line-rule literal of another framework
  rules (path)       a frame line whose path holds the literal and no path-rule literal of another
                     framework

Rules no fixture line fits are listed on stderr. With --construct, each gets the line the code its
"source" cites prints, built from the rule itself, with a "source" starting "constructed from":
a frame line as CPython's traceback prints it for a function (or module code, "<module>") in that
file, a code line as the rule's note quotes it, a marker's or line rule's literal as the first thing on
a line (an actor prefix for Ray actors). These say only that the rule decides such a line; replace
them with a line from a thread or a fixture when one turns up (the script never touches a rule that
has samples). `oomscan --check-patterns` then runs every sample.

Usage: patterns/harvest-samples.py [--dry-run] [--construct]  (from the repository root)
"""
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FRAME = re.compile(r'File "([^"]*)", line (?:\d+|\?\?\?),? in (\S+)')
KINDS = ("func", "code", "path")


def fixture_lines():
    """(source, line, next line) for every line of the fixture logs, in a stable order."""
    base = os.path.join(ROOT, "fixtures")
    for d, dirs, files in os.walk(base):
        dirs.sort()
        rel = os.path.relpath(d, ROOT)
        if rel.startswith(os.path.join("fixtures", "heldout")):
            continue
        for f in sorted(files):
            if not f.endswith(".log"):
                continue
            with open(os.path.join(d, f), encoding="utf-8", errors="replace") as fh:
                lines = [l.rstrip("\r\n") for l in fh.read().replace("\r\n", "\n").split("\n")]
            for i, l in enumerate(lines):
                if len(l) <= 400:
                    yield os.path.join(rel, f), l, lines[i + 1] if i + 1 < len(lines) else None


def kind_of(rule):
    return next(k for k in KINDS if k in rule)


def frame_winner(frames, fallback, path, func, code):
    """phase_frame_rule() of src/match/phase.c: the deciding rule of one frame."""
    best, best_rank = None, -1
    for r in frames:
        if bool(r.get("_fallback")) != fallback:
            continue
        k = kind_of(r)
        v = r[k]
        hit = (k == "code" and code is not None and v in code) or (k == "func" and func == v) or \
              (k == "path" and path is not None and v in path)
        rank = {"code": 3, "func": 2, "path": 1}[k]
        if hit and rank > best_rank:
            best, best_rank = r, rank
    return best


SITE = "/usr/local/lib/python3.10/site-packages/"


def source_path(rule):
    """The file part of a rule's "source" (owner/repo:path), or ''."""
    src = rule.get("source", "")
    return src.split(":", 1)[1] if ":" in src else ""


def frame_line(path, func):
    return f'  File "{path}", line 1, in {func}'


def construct(rule, kind):
    """(line, source) built from the rule and the code its source cites (see the module docstring)."""
    src = rule.get("source", "")
    sp = source_path(rule)
    why = f"constructed from {src}"
    if kind == "func":
        return frame_line(SITE + (sp or "module.py"), rule["func"]), why + ": the frame CPython prints for this function (line number not from a log)"
    if kind in ("path", "fwpath"):
        lit = rule["path"] if kind == "path" else rule["literal"]
        if sp and lit.strip("/") in sp:
            at = sp.index(lit.strip("/"))
            path = SITE + sp
            if "packages/" in lit:
                path = "/usr/local/lib/python3.10/" + lit + sp[at + len(lit.split("/", 1)[1]):]
        elif "packages/" in lit:
            path = "/usr/local/lib/python3.10/" + lit + "__init__.py"
        else:
            path = SITE.rstrip("/") + ("" if lit.startswith("/") else "/") + lit + ("" if lit.endswith("/") or lit.endswith(".py") else "/") + ("" if lit.endswith(".py") else "__init__.py")
        return frame_line(path, "<module>"), why + ": a frame CPython prints for code in that file (line number not from a log)"
    if kind == "code":
        note = rule.get("note", "")
        first = note.split(",")[0].strip() if note and "(" in note.split(",")[0] else ""
        if first and rule["code"] in first:
            return "    " + first, why + ": the call as its note quotes it"
        code = rule["code"] + (")" if rule["code"].endswith("(") else "")
        return "    " + code, why + ": the call as the code is written"
    lit = rule["literal"]
    if lit.startswith("(") and lit.endswith("pid="):
        return lit + "4242) ", why + ": Ray's prefix of this actor's output"
    return lit, why + ": the literal as that code prints it, alone on a line"


def same_result(a, b, keys):
    return all(a.get(k) == b.get(k) for k in keys)


def main():
    dry = "--dry-run" in sys.argv
    construct_missing = "--construct" in sys.argv
    ph_path = os.path.join(ROOT, "patterns/context/phases.json")
    fw_path = os.path.join(ROOT, "patterns/context/frameworks.json")
    phases = json.load(open(ph_path, encoding="utf-8"))
    fws = json.load(open(fw_path, encoding="utf-8"))
    frames = phases["frames"] + [dict(r, _fallback=True) for r in phases.get("fallback_frames", [])]
    # the working copies carry _fallback; map back to the real objects by position
    real = phases["frames"] + phases.get("fallback_frames", [])
    lines = list(fixture_lines())
    missing = []

    def record(rule, src, line):
        rule.setdefault("samples", []).append({"line": line, "source": src})

    for work, rule in zip(frames, real):
        if rule.get("samples"):
            continue
        k = kind_of(rule)
        fb = bool(work.get("_fallback"))
        found = False
        for src, line, nxt in lines:
            m = FRAME.search(line)
            if k == "code":
                # a code line: the line under a frame line
                continue
            if not m:
                continue
            path, func = m.group(1), m.group(2)
            if (k == "func" and func != rule[k]) or (k == "path" and rule[k] not in path):
                continue
            w = frame_winner(frames, fb, path, func, None)
            if w is not None and same_result(w, rule, ("phase", "framework")):
                record(rule, src, line)
                found = True
                break
        if k == "code":
            prev = None
            for src, line, nxt in lines:
                if prev is not None and rule[k] in line and not FRAME.search(line):
                    code = line.strip()
                    w = frame_winner(frames, fb, None, None, code)
                    if w is not None and same_result(w, rule, ("phase", "framework")):
                        record(rule, src, line)
                        found = True
                        break
                prev = line if FRAME.search(line) else None
        if not found:
            missing.append(("phases.json", k, rule[k]))
            if construct_missing:
                record(rule, *reversed(construct(rule, k)))

    markers = phases.get("markers", [])
    for rule in markers:
        if rule.get("samples"):
            continue
        for src, line, _ in lines:
            if rule["literal"] in line and all(
                    o["literal"] not in line or same_result(o, rule, ("phase", "framework")) for o in markers):
                record(rule, src, line)
                break
        else:
            missing.append(("phases.json", "marker", rule["literal"]))
            if construct_missing:
                record(rule, *reversed(construct(rule, "marker")))

    rules = fws["rules"]
    for rule in rules:
        if rule.get("samples"):
            continue
        in_path = rule.get("where") == "path"
        for src, line, _ in lines:
            if in_path:
                m = FRAME.search(line)
                if not m or rule["literal"] not in m.group(1):
                    continue
                hay = m.group(1)
            else:
                if rule["literal"] not in line:
                    continue
                hay = line
            if all(o["literal"] not in hay or o["framework"] == rule["framework"]
                   for o in rules if (o.get("where") == "path") == in_path):
                record(rule, src, line)
                break
        else:
            missing.append(("frameworks.json", "rule", rule["literal"]))
            if construct_missing:
                record(rule, *reversed(construct(rule, "fwpath" if in_path else "line")))

    for f, k, v in missing:
        print(f"no fixture line for {f} {k} {v!r}", file=sys.stderr)
    if not dry:
        for path, doc in ((ph_path, phases), (fw_path, fws)):
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(missing)} rule(s) without a fixture line", file=sys.stderr)


if __name__ == "__main__":
    main()
