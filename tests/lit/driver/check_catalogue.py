#!/usr/bin/env python3
"""Checks that docs/diagnostics.md lists every diagnostic the compiler can emit.

Extracts the message of every call that reports an error or a warning in compiler/**/*.cpp and
*.h: `error(LOC, MSG)`, `warning(LOC, MSG)` (through `diags_`, `diags`, `s.diags`, `p_`, ...),
lowering's `unsupported(LOC, WHAT)` and codegen's `unsupported(WHAT)` (both reported as
`not supported yet: WHAT`), and codegen's `Result::failure(MSG)`. MSG is a string literal, a
concatenation of literals, `fmt::format("...", ...)`, a `cond ? A : B` of those, or `"..." + x`;
each `{}` placeholder (and each non-literal operand) becomes a wildcard. Messages that begin with
`internal compiler error` are compiler bugs and are matched against that entry.

The catalogue's entries are the backquoted messages in the first column of its tables (a
`warning: ` or `tilec: error: ` prefix is dropped). A code message is listed when its wildcard
pattern matches one entry completely. Calls whose message is not a literal at all (forwarding a
variable, as the reporting helpers themselves do) are listed with --verbose and not checked.

Exit status 0 when every message is listed; otherwise 1, naming each missing message and where
the code emits it.
"""
import argparse
import os
import re
import sys

# (path regex, function name regex, index of the message argument, prefix added to it)
REPORTERS = [
    (r"compiler/lower/", r"unsupported", 1, "not supported yet: "),
    (r"compiler/codegen/", r"unsupported", 0, "not supported yet: "),
    (r"compiler/codegen/", r"failure", 0, ""),
    (r"", r"error", 1, ""),
    (r"", r"warning", 1, ""),
]
# Parser helpers that report their message argument when the expected token is not there.
PARSER_HELPERS = [
    (r"compiler/syntax/", r"expect", 1, ""),
    (r"compiler/syntax/", r"expectNewline", 0, ""),
    (r"compiler/syntax/", r"parseDottedName", 1, ""),
    (r"compiler/syntax/", r"parseNameList", 1, ""),
]
REPORTERS += PARSER_HELPERS
CALL = re.compile(r"(?<![A-Za-z0-9_])(unsupported|failure|error|warning|expect|expectNewline|"
                  r"parseDottedName|parseNameList)\s*\(")
# Functions whose returned fmt::format strings become messages elsewhere: (file, function).
MESSAGE_FUNCTIONS = [
    ("compiler/analysis/FragmentLayout.cpp", "gemmWarpGrid"),
]
QUALIFIERS = re.compile(r"(?:[A-Za-z_]\w*(?:<[^;(){}]*>)?::)+$")
CALL_KEYWORDS = {"return", "else", "do", "throw", "co_return"}


def is_definition(before):
    """Whether the name whose text precedes `before` is declared (a return type precedes it)."""
    before = QUALIFIERS.sub("", before.rstrip()).rstrip()
    m = re.search(r"([A-Za-z_]\w*|[>&*])$", before)
    if not m:
        return False
    return m.group(1) not in CALL_KEYWORDS


def strip_comments(src):
    """Blanks // and /* */ comments, keeping string literals and offsets."""
    out = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if c == '"' or c == "'":
            j = skip_literal(src, i)
            out.append(src[i:j])
            i = j
        elif src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def skip_literal(src, i):
    """Index just past the string or char literal starting at src[i]."""
    q = src[i]
    j = i + 1
    while j < len(src) and src[j] != q:
        j += 2 if src[j] == "\\" else 1
    return j + 1


def split_args(src, open_paren):
    """The top-level arguments of the call whose '(' is at open_paren, and the end offset."""
    depth = 0
    args, start = [], open_paren + 1
    i = open_paren
    while i < len(src):
        c = src[i]
        if c in "\"'":
            i = skip_literal(src, i)
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                args.append(src[start:i].strip())
                return args, i
        elif c == "," and depth == 1:
            args.append(src[start:i].strip())
            start = i + 1
        i += 1
    return args, len(src)


def unescape(body):
    return (body.replace('\\"', '"').replace("\\'", "'").replace("\\n", "\n")
            .replace("\\\\", "\\"))


def literal_run(expr):
    """If expr starts with adjacent string literals, returns (their text, rest of expr)."""
    text, i = None, 0
    while True:
        m = re.match(r'\s*(?:u8)?"', expr[i:])
        if not m:
            break
        start = i + m.end() - 1
        end = skip_literal(expr, start)
        text = (text or "") + unescape(expr[start + 1:end - 1])
        i = end
    return (text, expr[i:]) if text is not None else (None, expr)


WILD = "\x00"


def top_level_split(expr, sep):
    """Splits expr at top-level occurrences of the character sep."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(expr):
        c = expr[i]
        if c in "\"'":
            i = skip_literal(expr, i)
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == sep and depth == 0:
            parts.append(expr[start:i])
            start = i + 1
        i += 1
    parts.append(expr[start:])
    return parts


def messages_of(expr):
    """The message templates (WILD marks a wildcard) an argument expression can produce, or []
    when it contains no literal."""
    expr = expr.strip()
    while expr.startswith("std::move(") and expr.endswith(")"):
        expr = expr[len("std::move("):-1].strip()
    # cond ? a : b
    q = top_level_split(expr, "?")
    if len(q) == 2:
        branches = top_level_split(q[1], ":")
        # '::' splits into empty pieces; glue them back.
        merged, cur = [], None
        for b in branches:
            if cur is None:
                cur = b
            elif b == "" or cur.endswith(":") or b.startswith(":"):
                cur += ":" + b
            else:
                merged.append(cur)
                cur = b
        merged.append(cur)
        if len(merged) == 2:
            return messages_of(merged[0]) + messages_of(merged[1])
    m = re.match(r"(?:fmt::)?format\s*\(", expr)
    if m:
        args, _ = split_args(expr, m.end() - 1)
        text, _ = literal_run(args[0]) if args else (None, "")
        if text is None:
            return []
        return [re.sub(r"\{[^{}]*\}", WILD, text.replace("{{", "\x01").replace("}}", "\x02"))
                .replace("\x01", "{").replace("\x02", "}")]
    pieces = top_level_split(expr, "+")
    if len(pieces) > 1:
        out = ""
        found = False
        for p in pieces:
            sub = messages_of(p)
            if sub:
                out += sub[0]
                found = True
            else:
                out += WILD
        return [out] if found else []
    m = re.match(r"std::string\s*\((.*)\)$", expr, re.S)
    if m:
        return messages_of(m.group(1))
    text, rest = literal_run(expr)
    if text is not None and not rest.strip():
        return [text]
    return []


def extract(root):
    """[(message template, 'file:line', severity)] and [(call text, 'file:line')] unresolved."""
    found, unresolved = [], []
    base = os.path.join(root, "compiler")
    for dirpath, _, files in os.walk(base):
        for f in sorted(files):
            if not f.endswith((".cpp", ".h")):
                continue
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, root)
            src = strip_comments(open(path, encoding="utf-8").read())
            for m in CALL.finditer(src):
                name = m.group(1)
                before = src[max(0, m.start() - 200):m.start()]
                if before.rstrip().endswith((".", "->")):
                    pass  # a member call: diags_.error(...), p_.error(...)
                elif is_definition(before):
                    continue
                for prel, fre, idx, prefix in REPORTERS:
                    if re.search(prel, rel) and re.fullmatch(fre, name):
                        break
                else:
                    continue
                args, _ = split_args(src, m.end() - 1)
                if name in ("error", "warning") and len(args) < 2:
                    continue  # not a reporting call (e.g. Result::error())
                if idx >= len(args):
                    continue
                line = src.count("\n", 0, m.start()) + 1
                where = "%s:%d" % (rel, line)
                msgs = messages_of(args[idx])
                if not msgs:
                    unresolved.append((args[idx], where))
                for msg in msgs:
                    found.append((prefix + msg, where, name))
    for rel, fn in MESSAGE_FUNCTIONS:
        path = os.path.join(root, rel)
        if not os.path.exists(path):
            continue
        src = strip_comments(open(path, encoding="utf-8").read())
        m = re.search(r"^[^\n;]*\b%s\s*\([^;{]*\)[^;{]*\{" % re.escape(fn), src, re.M)
        if not m:
            unresolved.append(("function %s not found" % fn, rel))
            continue
        _, end = split_args(src, m.end() - 1)
        body = src[m.end() - 1:end]
        for f in re.finditer(r"fmt::format\s*\(", body):
            args, _ = split_args(body, f.end() - 1)
            line = src.count("\n", 0, m.end() - 1 + f.start()) + 1
            for msg in messages_of("fmt::format(" + ", ".join(args) + ")"):
                found.append((msg, "%s:%d" % (rel, line), fn))
    return found, unresolved


def catalogue_entries(doc):
    """Backquoted messages in the first column of the catalogue's table rows."""
    entries = []
    for line in open(doc, encoding="utf-8"):
        if not line.startswith("|") or line.startswith("| ---"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        first = cells[0] if cells else ""
        for m in re.finditer(r"`([^`]+)`", first):
            text = m.group(1)
            text = re.sub(r"^(tilec: )?((error|warning): )?", "", text)
            entries.append(text.replace("\\\\", "\\"))
    return entries


def normalize(text):
    """Runs of white space (a message may span lines) compare as one space."""
    return re.sub(r"\s+", " ", text).strip()


def to_regex(template):
    parts = normalize(template).split(WILD)
    return re.compile(".*?".join(re.escape(p) for p in parts) + r"\Z", re.S)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", required=True, help="the source tree")
    ap.add_argument("--doc", help="the catalogue (default ROOT/docs/diagnostics.md)")
    ap.add_argument("-v", "--verbose", action="store_true")
    opts = ap.parse_args()
    doc = opts.doc or os.path.join(opts.root, "docs", "diagnostics.md")
    found, unresolved = extract(opts.root)
    entries = [normalize(e) for e in catalogue_entries(doc)]
    missing = []
    seen = set()
    for template, where, kind in found:
        if template.startswith("internal compiler error"):
            template = "internal compiler error: " + WILD
        rx = to_regex(template)
        if not any(rx.match(e) for e in entries):
            missing.append((template, where))
        seen.add(template)
    if opts.verbose:
        for text, where in unresolved:
            print("not a literal (not checked): %s: %s" % (where, text))
        for template, where, kind in found:
            print("%s: %s: %s" % (where, kind, template.replace(WILD, "{}")))
    for template, where in missing:
        print("missing from the catalogue: %s: `%s`" % (where, template.replace(WILD, "{}")))
    print("catalogue: %d messages in the code, %d entries, %d missing"
          % (len(seen), len(entries), len(set(t for t, _ in missing))))
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
