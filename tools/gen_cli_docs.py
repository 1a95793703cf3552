#!/usr/bin/env python3
"""Writes ngxtls's man page and its bash and zsh completions from the CLI's own --help.

Usage: gen_cli_docs.py NGXTLS_BINARY OUT_DIR
Writes OUT_DIR/ngxtls.1, OUT_DIR/ngxtls.bash and OUT_DIR/_ngxtls. Generated at build time
(CMakeLists.txt), so that neither can drift from the options the binary really takes.
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
    man += [".SH EXIT STATUS",
            "0: nothing at or above \\-\\-fail\\-on; 1: findings at or above it; 2: usage or input error; "
            "3: a target could not be probed; 130 / 143: probe \\-\\-load or check \\-\\-sandbox \\-\\-load "
            "stopped by SIGINT / SIGTERM (the partial report is written).",
            ".SH FILES", ".TP", ".I .ngxtls.toml",
            "Project configuration: rule selection, severities, assumed versions, fleets.",
            ".SH SEE ALSO", "\\fBnginx\\fR(8), \\fBopenssl\\-s_client\\fR(1); the rule pages in "
            "/usr/share/doc/ngxtls/rules or \\fBngxtls rules ID\\fR."]
    (out_dir / "ngxtls.1").write_text("\n".join(man) + "\n")

    # bash completion.
    names = " ".join(n for n, _ in subcommands)
    cases = []
    for name, (_, _, options, _) in details.items():
        flags = " ".join(n for o in options for n in o[0])
        choice_cases = "".join(
            f"            {'|'.join(o[0])}) COMPREPLY=($(compgen -W \"{' '.join(o[3])}\" -- \"$cur\")); return ;;\n"
            for o in options if o[3])
        file_flags = "|".join(n for o in options if o[1].startswith("TEXT") and not o[3] for n in o[0])
        file_case = f"            {file_flags}) COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n" if file_flags else ""
        cases.append(f"        {name})\n          case \"$prev\" in\n{choice_cases}{file_case}"
                     f"          esac\n          if [[ $cur == -* ]]; then COMPREPLY=($(compgen -W \"{flags}\" -- \"$cur\"));"
                     f" else COMPREPLY=($(compgen -f -- \"$cur\")); fi ;;\n")
    bash = f"""# bash completion for ngxtls (generated from `ngxtls --help` by tools/gen_cli_docs.py)
_ngxtls() {{
  local cur prev sub i
  cur=${{COMP_WORDS[COMP_CWORD]}}
  prev=${{COMP_WORDS[COMP_CWORD-1]}}
  sub=
  for ((i = 1; i < COMP_CWORD; i++)); do
    case ${{COMP_WORDS[i]}} in -*) ;; *) sub=${{COMP_WORDS[i]}}; break ;; esac
  done
  if [[ -z $sub ]]; then
    COMPREPLY=($(compgen -W "{names} --help --version" -- "$cur"))
    return
  fi
  case $sub in
{''.join(cases)}  esac
}}
complete -F _ngxtls ngxtls
"""
    (out_dir / "ngxtls.bash").write_text(bash)

    # zsh completion.
    def zsh_escape(s):
        return s.replace("\\", "\\\\").replace("'", "'\\''").replace("[", "\\[").replace("]", "\\]").replace(":", "\\:")

    zsh = ["#compdef ngxtls", "# zsh completion for ngxtls (generated from `ngxtls --help` by tools/gen_cli_docs.py)", "",
           "_ngxtls() {", "  local -a subcommands", "  subcommands=("]
    zsh += [f"    '{n}:{zsh_escape(w)}'" for n, w in subcommands]
    zsh += ["  )", "  if (( CURRENT == 2 )); then", "    _describe 'subcommand' subcommands", "    return", "  fi",
            "  case $words[2] in"]
    for name, (_, _, options, _) in details.items():
        specs = []
        for names_, kind, desc, choices in options:
            if "--help" in names_:
                continue
            action = ""
            if choices:
                action = ":value:(" + " ".join(choices) + ")"
            elif kind:
                action = ":value:_files"
            for n in names_:
                specs.append(f"'{n}[{zsh_escape(desc)}]{action}'")
        zsh.append(f"    {name})")
        zsh.append("      _arguments -s " + " \\\n        ".join(specs + ["'*:file:_files'"]) + " ;;")
    zsh += ["  esac", "}", "", '_ngxtls "$@"']
    (out_dir / "_ngxtls").write_text("\n".join(zsh) + "\n")


if __name__ == "__main__":
    main()
