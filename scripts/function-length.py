#!/usr/bin/env python3
"""Fails listing every function in src/ longer than the house limit.

A function's length is its lines from the first line of its signature (after the previous
declaration ends) to its closing brace, both counted. The limit is 100 lines under src/cli/
(the command line parses flags and prints; the work lives in the libraries) and 150 lines
elsewhere under src/. CI runs this with the format check (.ci/run).

The reading is lexical, which is enough for this code base: comments, string and character
literals (raw strings too) and preprocessor lines are blanked first; then a brace at namespace
or class scope whose declaration ends in a parameter list (with qualifiers, a trailing return
type or a constructor's initializer list after it) opens a function body. Lambdas and blocks
inside a function are part of that function.

Usage: scripts/function-length.py [--all] [ROOT]   (ROOT defaults to the repository's src/)
  --all  list every function with its length, longest first, instead of checking
"""

import os
import re
import sys

CLI_LIMIT = 100
DEFAULT_LIMIT = 150


def blank_non_code(text):
    """text with comments, literals and preprocessor lines replaced by spaces (newlines kept)."""
    out = []
    i = 0
    n = len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c == "#":
            # A preprocessor line, with its backslash continuations.
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append(" \n")
                    i += 2
                    continue
                out.append(" ")
                i += 1
            continue
        if c == "\n":
            out.append(c)
            line_start = True
            i += 1
            continue
        if c in " \t":
            out.append(c)
            i += 1
            continue
        line_start = False
        if text.startswith("//", i):
            while i < n and text[i] != "\n":
                out.append(" ")
                i += 1
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
            continue
        raw = re.match(r'(?:u8|u|U|L)?R"([^()\\ ]{0,16})\(', text[i:i + 24])
        if raw and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            close = ")" + raw.group(1) + '"'
            end = text.find(close, i + raw.end())
            end = n if end < 0 else end + len(close)
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
            continue
        if c == '"' or (c == "'" and not is_digit_separator(text, i)):
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            end = min(j + 1, n)
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
            continue
        out.append(c)
        i += 1
    return "".join(out)


def is_digit_separator(text, i):
    """Whether the ' at i separates digits (1'000'000) rather than opening a character."""
    j = i - 1
    while j >= 0 and (text[j].isalnum() or text[j] in "'_"):
        j -= 1
    token = text[j + 1:i]
    return bool(token) and token[0].isdigit()


# What may follow a function's parameter list before its body.
AFTER_PARAMS = re.compile(
    r"\)\s*(?:(?:const|volatile|noexcept(?:\s*\([^()]*\))?|override|final|mutable|&&|&)\s*)*"
    r"(?:->[^{};]*)?(?:requires[^{};]*)?$")
# A constructor's initializer list: `) : member_(...), other_{...}` (not `::`).
CTOR_INIT = re.compile(r"\)\s*(?:noexcept\s*)?:(?!:)")
SCOPE_KEYWORD = re.compile(r"\b(?:namespace|class|struct|union)\b|\bextern\s*$")
ENUM = re.compile(r"\benum\b")


def function_name(segment):
    """The name before the parameter list of a declaration (operator names kept whole)."""
    depth = 0
    for k, ch in enumerate(segment):
        if ch == "<":
            depth += 1
        elif ch == ">" and depth > 0:
            depth -= 1
        elif ch == "(":
            m = re.search(r"(operator\s*(?:\(\)|[^\s(]+)|~?[A-Za-z_][\w:~]*)\s*$", segment[:k])
            if m:
                return m.group(1)
            if segment[:k].rstrip().endswith("]"):
                return "(lambda)"
    return "?"


def functions(code):
    """(name, first_line, last_line) for each function body at namespace or class scope."""
    result = []
    line_of = []
    line = 1
    for ch in code:
        line_of.append(line)
        if ch == "\n":
            line += 1
    n = len(code)
    segment_start = 0

    def segment_text(end):
        return code[segment_start:end]

    def match_brace(i):
        depth = 0
        while i < n:
            if code[i] == "{":
                depth += 1
            elif code[i] == "}":
                depth -= 1
                if depth == 0:
                    return i
            i += 1
        return n - 1

    def first_code(start, end):
        k = start
        while k < end and code[k].isspace():
            k += 1
        return k

    i = 0
    while i < n:
        c = code[i]
        if c in ";}":
            segment_start = i + 1
            i += 1
            continue
        if c != "{":
            i += 1
            continue
        segment = segment_text(i)
        flat = " ".join(segment.split())
        if re.search(r"\bnamespace\b", flat) or re.fullmatch(r"extern\s*", flat.strip()):
            segment_start = i + 1
            i += 1
            continue
        init = CTOR_INIT.search(flat)
        if init and re.search(r"[\w>]\s*$", flat) and not flat.endswith(")"):
            # A brace initializer of a member in a constructor's initializer list.
            i = match_brace(i) + 1
            continue
        if AFTER_PARAMS.search(flat) or (init and re.search(r"[)}]\s*$", flat)):
            close = match_brace(i)
            start = first_code(segment_start, i)
            result.append((function_name(flat), line_of[start], line_of[close]))
            segment_start = close + 1
            i = close + 1
            continue
        if SCOPE_KEYWORD.search(flat) and not ENUM.search(flat) and "=" not in flat:
            segment_start = i + 1
            i += 1
            continue
        # An initializer, an enum's list or another block: not a function.
        i = match_brace(i) + 1
    return result


def limit_for(path):
    parts = os.path.normpath(path).split(os.sep)
    return CLI_LIMIT if "cli" in parts[-2:-1] else DEFAULT_LIMIT


def main(argv):
    show_all = "--all" in argv
    args = [a for a in argv if a != "--all"]
    root = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                             "src")
    root = os.path.normpath(root)
    found = []
    for directory, _, files in os.walk(root):
        for name in sorted(files):
            if not name.endswith((".cpp", ".hpp")):
                continue
            path = os.path.join(directory, name)
            with open(path, encoding="utf-8") as f:
                code = blank_non_code(f.read())
            rel = os.path.relpath(path, os.path.dirname(root))
            for fn, first, last in functions(code):
                found.append((last - first + 1, rel, first, fn))
    if show_all:
        for length, rel, first, fn in sorted(found, reverse=True):
            print(f"{length:5d} {rel}:{first}: {fn}")
        return 0
    over = [(length, rel, first, fn) for length, rel, first, fn in found
            if length > limit_for(rel)]
    for length, rel, first, fn in sorted(over, key=lambda f: (f[1], f[2])):
        print(f"{rel}:{first}: {fn} is {length} lines (limit {limit_for(rel)})")
    if over:
        print(f"function-length: {len(over)} function(s) over the limit "
              f"({CLI_LIMIT} lines in src/cli/, {DEFAULT_LIMIT} elsewhere in src/)",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
