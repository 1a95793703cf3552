#!/usr/bin/python3
"""Measures which variable names an nginx binary has built in, per context (`nginx -t`).

Every candidate name (every suffix of the strings of the binary and the stream module: the
linker stores "remote_addr" inside "binary_remote_addr") is tried as `set $probe_x $NAME;` in an
http server and in a stream server. nginx says `unknown "NAME" variable` for a name it does not
know; a name it knows passes. Names under a prefix variable (`http_`, `cookie_`, `arg_`, ...)
all pass and are folded into the prefix. rules/variables.cpp holds the union of the lists for
the nginx versions of the matrix (scripts/nginx-versions.sh).

Usage: probe_variable_names.py NGINX [STREAM_MODULE.so | -]   (prints CONTEXT<TAB>NAME lines)
STRINGS_OF=FILE reads the candidate strings from FILE instead of NGINX (a wrapper script).
It never needs root and writes only in a temporary directory.
"""
import concurrent.futures as cf
import os
import re
import subprocess
import sys
import tempfile

PREFIXES = {
    "http": ["http_", "sent_http_", "sent_trailer_", "cookie_", "arg_", "upstream_http_",
             "upstream_trailer_", "upstream_cookie_", "proxy_protocol_tlv_"],
    "stream": ["proxy_protocol_tlv_"],
}


def candidates(files):
    names = set()
    for f in files:
        out = subprocess.run(["strings", "-n", "2", f], capture_output=True, text=True).stdout
        for word in out.split():
            for m in re.finditer(r"[a-z0-9_]{2,60}", word):
                t = m.group(0)
                for i in range(len(t) - 1):
                    if t[i].isalpha() and len(t) - i <= 41:
                        names.add(t[i:])
    return names


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    binary = sys.argv[1]
    stream_module = sys.argv[2] if len(sys.argv) > 2 and sys.argv[2] != "-" else ""
    names = candidates([os.environ.get("STRINGS_OF", binary)] + ([stream_module] if stream_module else []))
    tmp = tempfile.mkdtemp()
    head = (f"load_module {stream_module};\n" if stream_module else "") + "events {}\n"
    temp_paths = " ".join(f"{p}_temp_path {tmp}/{p};" for p in
                          ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    templates = {
        "http": head + "http { access_log off; " + temp_paths +
        " server { listen 127.0.0.1:1; set $probe_x $@; } }\n",
        "stream": head + "stream { server { listen 127.0.0.1:1; set $probe_x $@; return x; } }\n",
    }

    def known(ctx, name):
        fd, path = tempfile.mkstemp(dir=tmp, suffix=".conf")
        os.write(fd, templates[ctx].replace("@", name).encode())
        os.close(fd)
        r = subprocess.run([binary, "-t", "-p", tmp, "-c", path, "-e", tmp + "/error.log",
                            "-g", f"pid {tmp}/nginx.pid;"], capture_output=True, text=True)
        os.unlink(path)
        return "test is successful" in r.stderr

    for ctx in ("http", "stream"):
        ordered = sorted(names)
        with cf.ThreadPoolExecutor(4) as ex:
            results = list(ex.map(lambda n: known(ctx, n), ordered))
        for name, ok in zip(ordered, results):
            if ok and not any(name.startswith(p) and name != p for p in PREFIXES[ctx]):
                print(f"{ctx}\t{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
