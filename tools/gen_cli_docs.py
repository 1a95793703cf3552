#!/usr/bin/env python3
"""Writes ngxtls's man page from the CLI's own --help.

Usage: gen_cli_docs.py NGXTLS_BINARY OUT_DIR
Writes OUT_DIR/ngxtls.1. Generated at build time (CMakeLists.txt), so that it cannot drift from
the options the binary really takes; the shell completions come from `ngxtls completion SHELL`.
"""
import datetime
import re
import subprocess
import sys
from pathlib import Path

# "  -o,--output TEXT  desc", "  --tickets TEXT:{fleet,host} desc", "  -n INT:INT in [1 - 10000]",
# "  --format TEXT:{json,crossplane}=json": CLI11 puts one space only when the type fills the column.
OPTION = re.compile(r"^  (-[^ ,]+(?:,-[^ ,]+)*)"
                    r"(?: ([A-Z]+(?::(?:\{[^}]*\}|[A-Z]+ in \[[^\]]*\]|[A-Z]+))?(?:=\S+)?(?: \.\.\.)?(?: REQUIRED)?))?"
                    r"(?:\s+(.*))?$")
SUBCOMMAND = re.compile(r"^  ([a-z][a-z0-9-]*)\s{2,}(.*)$")
CHOICES = re.compile(r":\{([^}]*)\}")


# docs/exit-codes.md, the one table of exit codes; tests/integration/test_exit_codes.cpp drives
# each through the binary.
EXIT_CODES = [
    (0, "nothing at or above --fail-on (default warning); probe: every target measured (and at or "
        "above --fail-under, when given)"),
    (1, "findings at or above --fail-on (lint, check); probe --fail-under: a resumption rate below it"),
    (2, "usage or input error: a bad flag or value, an unreadable or unparsable config (with "
        "FILE:LINE:COL), an include cycle, a limit hit, a report that could not be written"),
    (3, "a target could not be probed, or a load phase could not be measured"),
    (130, "stopped by Ctrl-C (SIGINT) during probe --load or check --sandbox --load: the partial "
          "report is written"),
    (143, "ended by SIGTERM (128 + 15): the process is killed by the signal's default action, "
          "nothing more is written (serve: a clean stop, exit 0)"),
]
ENVIRONMENT = [
    ("NO_COLOR", "when set (to anything), text output has no color, as --color never; --color always "
                 "still colors"),
    ("PATH", "where nginx is looked up (nginx -V for the assumed version, check --sandbox without --nginx)"),
    ("HOME", "bounds the search for .ngxtls.toml upwards from the working directory"),
    ("TMPDIR", "where check --sandbox makes its throwaway nginx directory (default /tmp)"),
    ("NGXTLS_SANDBOX_NO_NETNS", "1: check --sandbox runs nginx without its own loopback-only network "
                                "namespace (said in the report)"),
    ("NGXTLS_SANDBOX_NO_PIDNS", "1: the sandbox's nginx is kept without a PID namespace"),
]
EXAMPLES = [
    ("Lint a server's whole configuration, failing on warnings", "ngxtls lint /etc/nginx/nginx.conf"),
    ("Lint what nginx really loaded", "nginx -T | ngxtls lint -"),
    ("SARIF for code scanning, paths relative to the repository root",
     "cd deploy/nginx && ngxtls lint nginx.conf --format sarif -o ngxtls.sarif"),
    ("Fail only on findings that are new since the last report",
     "ngxtls lint nginx.conf --format sarif --baseline-report previous.sarif"),
    ("Confirm each finding in a throwaway nginx before deploying",
     "ngxtls check nginx.conf --sandbox"),
    ("Gate a canary on its resumption rate", "ngxtls probe canary.example.com --fail-under 0.9"),
    ("Install bash completion for this user",
     "ngxtls completion bash > ~/.local/share/bash-completion/completions/ngxtls"),
]


def run_help(binary, *args):
    out = subprocess.run([binary, *args, "--help"], capture_output=True, text=True, timeout=30, check=True)
    return out.stdout


def parse_sections(text):
    """Help text -> {section title: [lines]} (CLI11's 'Options:', 'Positionals:', 'Subcommands:')."""
    sections, current = {}, None
    for line in text.splitlines():
        if line and not line.startswith(" ") and line.endswith(":"):
            current = line[:-1]
            sections[current] = []
        elif current is not None:
            sections[current].append(line)
    return sections


def parse_options(lines):
    """[(names, type text or '', description, choices)]; a description may sit on the next line."""
    options = []
    for line in lines:
        m = OPTION.match(line)
        if m:
            names = m.group(1).split(",")
            kind = m.group(2) or ""
            choices = CHOICES.search(kind)
            options.append([names, kind, m.group(3) or "", choices.group(1).split(",") if choices else []])
        elif options and line.startswith("    ") and line.strip():
            options[-1][2] = (options[-1][2] + " " + line.strip()).strip()
    return options


def roff(text):
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\\&" + text if text.startswith((".", "'")) else text


def main():
    binary, out_dir = sys.argv[1], Path(sys.argv[2])
    out_dir.mkdir(parents=True, exist_ok=True)
    top = run_help(binary)
    summary = top.splitlines()[0].split(": ", 1)[-1]
    version = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    subcommands = []
    for line in parse_sections(top).get("Subcommands", []):
        m = SUBCOMMAND.match(line)
        if m:
            subcommands.append((m.group(1), m.group(2)))
    details = {}
    for name, _ in subcommands:
        text = run_help(binary, name)
        sections = parse_sections(text)
        usage = next((l for l in text.splitlines() if l.startswith("Usage:")), "")
        usage = re.sub(r"^Usage: \S*ngxtls", "ngxtls", usage)
        details[name] = (usage, parse_options(sections.get("Positionals", [])), parse_options(sections.get("Options", [])),
                         [l.strip() for l in sections.get("Positionals", []) if l.strip()])

    # Man page.
    date = datetime.date.today().strftime("%Y-%m-%d")
    man = [f'.TH NGXTLS 1 "{date}" "{roff(version)}" "User Commands"', ".SH NAME", f"ngxtls \\- {roff(summary)}",
           ".SH SYNOPSIS", ".B ngxtls", "\\fISUBCOMMAND\\fR [\\fIOPTIONS\\fR]", ".SH DESCRIPTION", roff(summary) + ".",
           "Each subcommand's options follow; \\fBngxtls SUBCOMMAND \\-\\-help\\fR prints the same text.",
           ".SH SUBCOMMANDS"]
    for name, what in subcommands:
        usage, _, options, positionals = details[name]
        man += [f".SS {name}", roff(what) + ".", ".PP", "\\fB" + roff(usage) + "\\fR"]
        for p in positionals:
            parts = re.split(r"\s{2,}", p, maxsplit=1)
            man += [".TP", "\\fI" + roff(parts[0]) + "\\fR", roff(parts[1] if len(parts) > 1 else "")]
        for names, kind, desc, _ in options:
            if "--help" in names:
                continue
            man += [".TP", "\\fB" + roff(", ".join(names)) + "\\fR" + (" \\fI" + roff(kind) + "\\fR" if kind else ""), roff(desc)]
    man += [".SH EXIT STATUS"]
    for code, what in EXIT_CODES:
        man += [".TP", f"\\fB{code}\\fR", roff(what)]
    man += [".SH ENVIRONMENT"]
    for name, what in ENVIRONMENT:
        man += [".TP", f"\\fB{roff(name)}\\fR", roff(what)]
    man += [".SH FILES", ".TP", ".I .ngxtls.toml",
            "Project configuration (found in the working directory or above, or \\-\\-config): rule "
            "selection, severities, assumed versions, fleets.",
            ".SH EXAMPLES"]
    for what, command in EXAMPLES:
        man += [".PP", roff(what) + ":", ".PP", ".RS 4", ".nf", "\\fB" + roff(command) + "\\fR", ".fi", ".RE"]
    man += [".SH SEE ALSO", "\\fBnginx\\fR(8), \\fBopenssl\\-s_client\\fR(1); the rule pages in "
            "/usr/share/doc/ngxtls/rules or \\fBngxtls rules ID\\fR."]
    (out_dir / "ngxtls.1").write_text("\n".join(man) + "\n")



if __name__ == "__main__":
    main()
