#!/usr/bin/python3
"""Measures nginx's directive table by asking the installed nginx binary (`nginx -t`).

For every candidate name (strings of the nginx binary and its dynamic modules) it records
whether nginx knows the directive, in which contexts it is allowed, whether it takes a
block, and which argument counts (0..8) pass nginx's count check. nginx checks these in
ngx_conf_handler (src/core/ngx_conf_file.c) before any directive handler runs, so the
first [emerg] of a one-directive config tells them apart:
  unknown directive "X"                       -> not in any loaded module
  "X" directive is not allowed here           -> known, not in this context
  directive "X" has no opening "{"            -> allowed here, block directive
  invalid number of arguments in "X" directive-> allowed here, wrong count
  anything else                               -> allowed here, count accepted

Usage: probe_directive_table.py OUT.tsv   (writes name, contexts, block, args, module)
Run it on a machine with the nginx version to describe; it never needs root.
"""
import concurrent.futures as cf
import os
import re
import subprocess
import sys
import tempfile

MODDIR = "/usr/lib/nginx/modules"
# Third-party and dynamic modules loaded for the measurement, in load order.
MODULES = [("ndk", "ndk_http_module.so"), ("lua", "ngx_http_lua_module.so"),
           ("stream", "ngx_stream_module.so")]

# context name -> config template; @ is replaced by the probe line.
CONTEXTS = {
    "main": "@\n",
    "events": "events { @ }\n",
    "http": "events {} http { @ }\n",
    "server": "events {} http { server { @ } }\n",
    "location": "events {} http { server { location / { @ } } }\n",
    "if_server": "events {} http { server { if ($host) { @ } } }\n",
    "if_location": "events {} http { server { location / { if ($host) { @ } } } }\n",
    "limit_except": "events {} http { server { location / { limit_except GET { @ } } } }\n",
    "upstream": "events {} http { upstream u { server 127.0.0.1:1; @ } }\n",
    "stream": "events {} stream { @ }\n",
    "stream_server": "events {} stream { server { @ } }\n",
    "stream_upstream": "events {} stream { upstream u { server 127.0.0.1:1; @ } }\n",
}

WORK = tempfile.mkdtemp(prefix="ngxdir.")


def run(body, modules=True):
    fd, path = tempfile.mkstemp(dir=WORK, suffix=".conf")
    head = "".join(f"load_module {MODDIR}/{so};\n" for _, so in MODULES) if modules else ""
    with os.fdopen(fd, "w") as f:
        f.write(head + body)
    p = subprocess.run(["nginx", "-t", "-q", "-p", WORK, "-c", path, "-g",
                        f"pid {WORK}/nginx.pid; error_log stderr;"],
                       capture_output=True, text=True)
    os.unlink(path)
    for line in p.stderr.splitlines():
        if "[emerg]" in line:
            return line.split("[emerg]", 1)[1]
    return ""


def classify(name, err):
    if f'unknown directive "{name}"' in err:
        return "unknown"
    if f'"{name}" directive is not allowed here' in err:
        return "not_allowed"
    if f'directive "{name}" has no opening' in err:
        return "block"
    if f'invalid number of arguments in "{name}"' in err:
        return "bad_args"
    if f'directive "{name}" is not terminated' in err:
        return "simple"
    return "ok"


def probe(name):
    if classify(name, run(CONTEXTS["main"].replace("@", name + ";"))) == "unknown":
        return None
    module = "core"
    if classify(name, run(CONTEXTS["main"].replace("@", name + ";"), modules=False)) == "unknown":
        module = "dynamic"
    ctxs, block = [], False
    for cname, tpl in CONTEXTS.items():
        c = classify(name, run(tpl.replace("@", name + ";")))
        if c in ("block", "bad_args", "ok", "simple"):
            ctxs.append(cname)
            block = block or c == "block"
    counts = []
    if ctxs:
        tpl = CONTEXTS[ctxs[0]]
        for n in range(0, 9):
            args = " ".join(["x"] * n)
            line = f"{name} {args} {{ }}" if block else f"{name} {args};"
            if classify(name, run(tpl.replace("@", line))) != "bad_args":
                counts.append(n)
    return name, ctxs, block, counts, module


def main():
    out = sys.argv[1]
    names = set()
    bins = ["/usr/sbin/nginx"] + [f"{MODDIR}/{so}" for _, so in MODULES]
    for b in bins:
        s = subprocess.run(["strings", "-n", "2", b], capture_output=True, text=True).stdout
        # Words inside longer strings count too ("root" is the tail of "$document_root").
        for w in re.findall(r"[a-z][a-z0-9_]{1,60}", s):
            # The linker merges a string into the tail of a longer one ("ssl_protocols" lives
            # inside "proxy_ssl_protocols", "root" inside another string), so every suffix
            # that starts with a letter is a candidate.
            for i, c in enumerate(w):
                if c.isalpha() and len(w) - i >= 2:
                    names.add(w[i:])
    rows = []
    with cf.ThreadPoolExecutor(max_workers=6) as ex:
        for r in ex.map(probe, sorted(names)):
            if r:
                rows.append(r)
    with open(out, "w") as f:
        f.write("# name\tcontexts\tblock\targ_counts\tmodule\n")
        for name, ctxs, block, counts, module in rows:
            f.write(f"{name}\t{','.join(ctxs)}\t{int(block)}\t{','.join(map(str, counts))}\t{module}\n")


if __name__ == "__main__":
    main()
