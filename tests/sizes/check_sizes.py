#!/usr/bin/env python3
"""Fails when a C++ function of the components is longer than the limit.

  check_sizes.py --root <repository> --baseline <file> [--limit 120]
                 [--report] <component>...

The components are the folders of cmake/components.cmake (the test passes
them); their .h, .cc and .cu files are read, tests/, bench/ and fuzz/ are
not. A function's length is the lines of its body, from the line of its
opening brace to that of its closing one; a lambda or a local class counts
in the function that holds it, and a lambda at namespace scope (a table's
entry, say) is a function of its own. A function whose body holds the
comment `// tessera: long-table` (a table, a CLI option list) is exempt.

The baseline lists the functions that were over the limit when the check
came, `path:function:lines` a line. The check fails on a function over the
limit that is not listed, or that grew past its listed length; it prints a
note for a listed one that shrank (update its line) or went under the
limit (delete it), so that the list only shrinks.

It also fails on a file over --file-limit lines (700) and on a folder
whose own .h, .cc and .cu files (not its subfolders') add up to more than
--folder-limit (6,000); these have no baseline: every file and folder was
under them when they came. --report prints every function, file and
folder over its limit.
"""

import argparse
import pathlib
import re
import sys

MARKER = "tessera: long-table"
FILE_LIMIT = 700
FOLDER_LIMIT = 6000
IDENT = re.compile(r"[A-Za-z0-9_]")


def strip(text):
    """Returns `text` with comments, string and character literals blanked
    (newlines kept, so lines stay where they are), and the lines of the
    comments that hold MARKER. Preprocessor lines are blanked too."""
    out = []
    markers = set()
    i, n, line = 0, len(text), 1
    at_line_start = True
    while i < n:
        c = text[i]
        if c == "\n":
            out.append(c)
            line += 1
            i += 1
            at_line_start = True
            continue
        if at_line_start and c == "#":
            # A directive, with its continuation lines.
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append("\n")
                    line += 1
                    i += 2
                    continue
                i += 1
            continue
        if not c.isspace():
            at_line_start = False
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            if MARKER in text[i:end]:
                markers.add(line)
            i = end
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            chunk = text[i:end]
            if MARKER in chunk:
                markers.add(line)
            out.append("\n" * chunk.count("\n"))
            line += chunk.count("\n")
            i = end
            continue
        if c == '"':
            # A raw string: R"delim( ... )delim", with an optional prefix.
            j = i - 1
            while j >= 0 and IDENT.match(text[j]):
                j -= 1
            prefix = text[j + 1:i]
            if prefix in ("R", "u8R", "uR", "UR", "LR"):
                open_paren = text.find("(", i)
                delim = text[i + 1:open_paren]
                close = text.find(")" + delim + '"', open_paren)
                end = n if close < 0 else close + len(delim) + 2
            else:
                end = i + 1
                while end < n and text[end] != '"':
                    end += 2 if text[end] == "\\" else 1
                end += 1
            chunk = text[i:end]
            out.append('""' + "\n" * chunk.count("\n"))
            line += chunk.count("\n")
            i = end
            continue
        if c == "'":
            # A digit separator (1'000) or a character literal.
            j = i - 1
            while j >= 0 and (IDENT.match(text[j]) or text[j] in ".'"):
                j -= 1
            if j + 1 < i and text[j + 1].isdigit():
                i += 1
                continue
            end = i + 1
            while end < n and text[end] != "'":
                end += 2 if text[end] == "\\" else 1
            out.append("' '")
            i = end + 1
            continue
        out.append(c)
        i += 1
    return "".join(out), markers


SCOPE_HEAD = re.compile(
    r"^(?:template\s*<.*>\s*)?(?:\[\[[^\]]*\]\]\s*)?"
    r"(?:namespace\b|extern\s*\"\"|(?:typedef\s+)?(?:class|struct|union|enum)\b)",
    re.S)
# A parameter list's ")" and what may follow it before the body.
FUNCTION_TAIL = re.compile(
    r"\)\s*(?:const\b|volatile\b|noexcept\b(?:\s*\(\))?|override\b|final\b|"
    r"mutable\b|constexpr\b|&&|&|\s)*(?:->\s*[^;={}]*)?\s*$", re.S)
# A constructor's initializer list, ending in an initializer.
INIT_LIST_TAIL = re.compile(r"\)\s*(?:noexcept\s*)?:\s*[^;]*[)}]\s*$", re.S)
ACCESS = re.compile(r"^\s*(?:(?:public|private|protected)\s*:\s*)+")
NAME = re.compile(r"((?:[A-Za-z_]\w*\s*::\s*)*(?:operator\s*[^\s(]+|~?[A-Za-z_]\w*))\s*$")


def function_name(head):
    """The name before the first top-level "(" of a function's head; a
    lambda's is its variable's, or "lambda"."""
    depth = 0
    for k, c in enumerate(head):
        if c == "(":
            if depth == 0:
                before = head[:k].rstrip()
                if before.endswith("]"):
                    assigned = re.search(r"(\w+)\s*=\s*\[[^\]]*\]\s*$", before)
                    return (assigned.group(1) + " (lambda)") if assigned else "lambda"
                if before.endswith(">"):  # a template's arguments
                    angle = 0
                    for m in range(len(before) - 1, -1, -1):
                        angle += {">": 1, "<": -1}.get(before[m], 0)
                        if angle == 0:
                            before = before[:m]
                            break
                match = NAME.search(before)
                if match:
                    return re.sub(r"\s+", "", match.group(1))
                return "?"
            depth += 1
        elif c == ")":
            depth -= 1
    return "?"


def functions(text):
    """(name, first line, last line, exempt) of each function body."""
    clean, markers = strip(text)
    found = []
    body_start = []   # (name, line) of each open function body
    saved_heads = []  # the heads around each open initializer
    stack = []  # "scope", "data" or "function" for each open brace
    head = []   # the text since the last ; { } at namespace or class scope
    line = 1
    i, n = 0, len(clean)
    while i < n:
        c = clean[i]
        if c == "\n":
            line += 1
        in_function = any(kind == "function" for kind in stack)
        if in_function:
            if c == "{":
                stack.append("inner")
            elif c == "}":
                kind = stack.pop()
                if kind == "function":
                    name, first = body_start.pop()
                    exempt = any(first <= m <= line for m in markers)
                    found.append((name, first, line, exempt))
            i += 1
            continue
        if c == "{":
            h = ACCESS.sub("", "".join(head)).strip()
            if SCOPE_HEAD.match(h) and not FUNCTION_TAIL.search(h):
                stack.append("scope")
                head = []
            elif FUNCTION_TAIL.search(h) or INIT_LIST_TAIL.search(h):
                stack.append("function")
                body_start.append((function_name(h), line))
                head = []
            else:
                # An initializer ({} of a variable, a member, an entry of a
                # table): its lambdas are functions of their own.
                stack.append("data")
                head.append("{")
                saved_heads.append(head)
                head = []
        elif c == "}":
            kind = stack.pop() if stack else "scope"
            if kind == "data":
                head = saved_heads.pop()
                head.append("}")
            else:
                head = []
        elif c == ";":
            head = []
        elif c == "," and stack and stack[-1] == "data":
            head = []
        else:
            head.append(c)
        i += 1
    return found


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", required=True, type=pathlib.Path)
    parser.add_argument("--baseline", type=pathlib.Path)
    parser.add_argument("--limit", type=int, default=120)
    parser.add_argument("--file-limit", type=int, default=FILE_LIMIT)
    parser.add_argument("--folder-limit", type=int, default=FOLDER_LIMIT)
    parser.add_argument("--report", action="store_true")
    parser.add_argument("components", nargs="+")
    args = parser.parse_args()

    files = sorted(p for c in args.components for ext in ("h", "cc", "cu")
                   for p in (args.root / c).rglob("*." + ext))
    long = {}  # "path:name" -> lines
    sizes = {}
    for path in files:
        rel = path.relative_to(args.root).as_posix()
        text = path.read_text(encoding="utf-8", errors="replace")
        sizes[rel] = text.count("\n")
        for name, first, last, exempt in functions(text):
            lines = last - first + 1
            if lines <= args.limit or exempt:
                continue
            key = f"{rel}:{name}"
            suffix = 2
            while key in long:
                key = f"{rel}:{name}#{suffix}"
                suffix += 1
            long[key] = lines

    listed = {}
    if args.baseline and args.baseline.exists():
        for raw in args.baseline.read_text().splitlines():
            raw = raw.strip()
            if raw and not raw.startswith("#"):
                key, _, lines = raw.rpartition(":")
                listed[key] = int(lines)

    failures = []
    for key, lines in sorted(long.items()):
        if key not in listed:
            failures.append(f"{key}: {lines} lines, over the limit of {args.limit}: "
                            "split it (or, for a table, mark it `// " + MARKER + "`)")
        elif lines > listed[key]:
            failures.append(f"{key}: {lines} lines, grew from the {listed[key]} "
                            "its baseline allows: split it")
        elif lines < listed[key]:
            print(f"note: {key} shrank to {lines} lines: write {lines} in "
                  f"{args.baseline}")
    for key, lines in sorted(listed.items()):
        if key not in long:
            print(f"note: {key} is no longer over {args.limit} lines "
                  f"(or is gone): delete it from {args.baseline}")

    folders = {}
    for rel, lines in sizes.items():
        folder = rel.rsplit("/", 1)[0]
        folders[folder] = folders.get(folder, 0) + lines
    long_files = {rel: lines for rel, lines in sizes.items()
                  if lines > args.file_limit}
    big_folders = {folder: lines for folder, lines in folders.items()
                   if lines > args.folder_limit}
    for rel, lines in sorted(long_files.items()):
        failures.append(f"{rel}: {lines} lines, over the file limit of "
                        f"{args.file_limit}: move a part that stands on its own "
                        "into a file of its own")
    for folder, lines in sorted(big_folders.items()):
        failures.append(f"{folder}/: {lines} lines in its own files, over the "
                        f"folder limit of {args.folder_limit}: give a family "
                        "of its files a subfolder")

    if args.report:
        print(f"functions over {args.limit} lines:")
        for key, lines in sorted(long.items(), key=lambda kv: -kv[1]):
            print(f"  {lines:5d}  {key}")
        print(f"files over {args.file_limit} lines:")
        for rel, lines in sorted(long_files.items(), key=lambda kv: -kv[1]):
            print(f"  {lines:5d}  {rel}")
        print(f"folders over {args.folder_limit} lines (own files only):")
        for folder, lines in sorted(big_folders.items(), key=lambda kv: -kv[1]):
            print(f"  {lines:5d}  {folder}/")

    for failure in failures:
        print(f"function size: {failure}")
    if failures:
        print(f"function size: {len(failures)} function(s), file(s) or "
              "folder(s) too long")
        return 1
    print(f"function size ok: {len(files)} files, {len(long)} function(s) over "
          f"{args.limit} lines, all in the baseline; no file over "
          f"{args.file_limit} lines, no folder over {args.folder_limit}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
