#!/usr/bin/python3
"""Post-processes a table from probe_directive_table.py into the rule catalog's data file.

Usage: embed_directive_table.py RAW.tsv
Writes rules/data/nginx-1.22.1-directives.tsv (module column: core, stream, lua, ndk). The build
embeds that file in the binary (cmake/embed_directive_table.cmake), so it is the only copy.
"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STREAM_CONTEXTS = {"main", "stream", "stream_server", "stream_upstream"}


def module_of(name, contexts, module):
    if module != "dynamic":
        return "core"
    if "lua" in name:
        return "lua"
    if set(contexts.split(",")) <= STREAM_CONTEXTS:
        return "stream"
    return "ndk"


def main():
    rows = []
    for line in open(sys.argv[1]):
        if line.startswith("#") or not line.strip():
            continue
        name, contexts, block, counts, module = line.rstrip("\n").split("\t")
        if not contexts:  # known name that no probed context accepts (mail, ...): no facts
            continue
        rows.append((name, contexts, block, counts, module_of(name, contexts, module)))
    rows.sort()
    text = ("# nginx 1.22.1 directive table, measured by tools/probe_directive_table.py on Debian 12\n"
            "# (nginx 1.22.1 with ndk, lua and stream modules). Regenerate with\n"
            "# tools/embed_directive_table.py; arg_counts lists accepted counts 0-8 (8 = 8 or more).\n"
            "# name\tcontexts\tblock\targ_counts\tmodule\n")
    text += "".join("\t".join(r) + "\n" for r in rows)
    with open(os.path.join(ROOT, "rules/data/nginx-1.22.1-directives.tsv"), "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
