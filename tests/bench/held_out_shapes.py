#!/usr/bin/env python3
"""Held-out lint inputs: configurations of shapes bench_lint's generator does not write.

Written apart from tests/bench/gen_config.hpp, and not used to tune lint: these inputs check
that lint's speed and memory hold on shapes nobody tuned on. Every shape is built from the
real public configs of the corpus (/work/shared/corpus or $NGXTLS_CORPUS_DIR), multiplied:

  sites      sites-enabled/ of real site files, each made HTTPS the way certbot does it
             (a `listen 443 ssl` beside the `listen 80`, certificate lines and certbot's
             options-ssl-nginx.conf); name-based servers on shared sockets
  iphost     the same sites as a hosting panel writes them: every site on its own IPv4
             address (and a third of them on an IPv6 one too), :80 and :443
  locations  a few hundred servers, each holding the location blocks of the corpus again
             and again (nested ones kept), as API gateways are written
  names      servers with long server_name lists (exact, wildcard, regex) and large maps
             keyed by $ssl_server_name, plus a stream block of TLS servers, one port each
  h5bp       h5bp's server-configs-nginx template per site, one file per site, every site
             including h5bp's TLS and header snippets (a dozen files included per site)

Usage: held_out_shapes.py OUT_DIR SHAPE MB
Writes OUT_DIR/SHAPE_MBmb/nginx.conf (and the files it includes) and prints its path.
Certificates are made once per OUT_DIR with the openssl command line.
"""

import os
import re
import subprocess
import sys

CORPUS = os.environ.get("NGXTLS_CORPUS_DIR", "/work/shared/corpus")


def read(path):
    with open(path, "rb") as f:
        return f.read().decode("latin-1")


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(text.encode("latin-1"))


def manifest():
    rows = []
    with open(os.path.join(CORPUS, "MANIFEST.tsv"), encoding="utf-8") as f:
        head = f.readline().rstrip("\n").split("\t")
        for line in f:
            col = dict(zip(head, line.rstrip("\n").split("\t")))
            rows.append(col)
    return rows


def blocks(text, keyword):
    """The outermost `keyword ... { ... }` blocks of text (none inside another), brace-matched
    with quotes and comments skipped. Returns the block texts."""
    return [text[a:b] for a, b in spans(text, keyword)]


def spans(text, keyword):
    out = []
    for m in re.finditer(r"(?m)^[ \t]*" + keyword + r"\b[^;{#\n]*\{", text):
        if out and m.start() < out[-1][1]:
            continue
        depth, i, quote = 0, m.end() - 1, None
        while i < len(text):
            c = text[i]
            if quote:
                if c == "\\":
                    i += 1
                elif c == quote:
                    quote = None
            elif c in "\"'":
                quote = c
            elif c == "#":
                nl = text.find("\n", i)
                i = len(text) if nl < 0 else nl
                continue
            elif c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    out.append((m.start(), i + 1))
                    break
            i += 1
    return out


def make_certs(out_dir, n):
    """n certificate/key pairs (EC and RSA alternately), made once per out_dir."""
    d = os.path.join(out_dir, "certs")
    os.makedirs(d, exist_ok=True)
    pairs = []
    for i in range(n):
        crt, key = os.path.join(d, "site%d.crt" % i), os.path.join(d, "site%d.key" % i)
        if not os.path.exists(crt):
            algo = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"] if i % 2 == 0 else \
                   ["-newkey", "rsa:2048"]
            subprocess.run(["openssl", "req", "-x509", "-nodes", "-days", "400"] + algo +
                           ["-keyout", key, "-out", crt, "-subj", "/CN=site%d.example.net" % i,
                            "-addext", "subjectAltName=DNS:*.site%d.example.net" % i],
                           check=True, capture_output=True)
        pairs.append((crt, key))
    return pairs


def corpus_sites():
    """Real site files: corpus files read inside http that hold server blocks; includes and
    files they name (certificates, logs) are replaced per copy."""
    sites = []
    for col in manifest():
        if col.get("nginx_context") != "http" or col.get("nginx_verdict") in (
                "syntax_error", "unknown_directive"):
            continue
        text = read(os.path.join(CORPUS, col["local_path"]))
        if not blocks(text, "server"):
            continue
        sites.append((col["local_path"], text))
    return sites


def rename(text, i, certs, address=None, address6=None):
    """Copy i of a site: names, upstreams and zones made unique, includes dropped, TLS added
    as certbot adds it, certificate files replaced by real ones."""
    crt, key = certs[i % len(certs)]
    for name in set(re.findall(r"(?m)^\s*upstream\s+(\S+)", text)):
        text = re.sub(r"\b" + re.escape(name) + r"\b", name + "_c%d" % i, text)
    text = re.sub(r"(?m)^(\s*)include\s+[^;]*;", r"\1# include dropped", text)
    text = re.sub(r"(?m)^(\s*ssl_certificate)\s+[^;]*;", r"\1 %s;" % crt, text)
    text = re.sub(r"(?m)^(\s*ssl_certificate_key)\s+[^;]*;", r"\1 %s;" % key, text)

    def names(m):
        out = []
        for n in m.group(2).split():
            if n.startswith("~") or n in ("_", '""', "localhost"):
                out.append(n)
            elif n.startswith("*.") or n.startswith("."):
                out.append(n[:2] + "c%d-" % i + n[2:] if n.startswith("*.") else ".c%d-" % i + n[1:])
            else:
                out.append("c%d-%s" % (i, n))
        return m.group(1) + " ".join(out) + ";"

    text = re.sub(r"(?m)^(\s*server_name\s+)([^;]*);", names, text)
    if address:
        def listen(m):
            arg, rest = m.group(2), m.group(3)
            port = arg.rsplit(":", 1)[-1] if ":" in arg or arg.isdigit() else "80"
            if not port.isdigit():
                port = "80"
            host = address6 if arg.startswith("[") and address6 else address
            return "%s%s:%s%s;" % (m.group(1), host, port, rest)
        text = re.sub(r"(?m)^(\s*listen\s+)(\S+?)((?:\s+[^;]*)?);", listen, text)
    # certbot: a server that listens on 80 only gets a TLS listen and a certificate
    out, pos = [], 0
    for at, end in spans(text, "server"):
        blk = text[at:end]
        out.append(text[pos:at])
        if "ssl" not in blk and re.search(r"listen\s+(\S*:)?80\b", blk):
            host = (address + ":") if address else ""
            add = ("\n    listen %s443 ssl; # managed by Certbot\n"
                   "    ssl_certificate %s; # managed by Certbot\n"
                   "    ssl_certificate_key %s; # managed by Certbot\n"
                   "    include %s; # managed by Certbot\n"
                   "    ssl_dhparam %s; # managed by Certbot\n") % (
                       host, crt, key, "@OPTIONS@", "@DHPARAM@")
            blk = blk[:blk.index("{") + 1] + add + blk[blk.index("{") + 1:]
        out.append(blk)
        pos = end
    out.append(text[pos:])
    return "".join(out)


def certbot_files(base):
    opts = os.path.join(base, "letsencrypt", "options-ssl-nginx.conf")
    src = os.path.join(CORPUS, "files/certbot__certbot/certbot/src/certbot/_internal/plugins/"
                       "nginx/tls_configs/options-ssl-nginx.conf")
    write(opts, read(src))
    dh = os.path.join(base, "letsencrypt", "ssl-dhparams.pem")
    if not os.path.exists(dh):
        subprocess.run(["openssl", "dhparam", "-out", dh, "-dsaparam", "2048"], check=True,
                       capture_output=True)
    return opts, dh


MAIN = """user www-data;
worker_processes auto;
pid %(base)s/nginx.pid;
events { worker_connections 768; }
http {
    sendfile on;
    tcp_nopush on;
    types_hash_max_size 2048;
    server_names_hash_bucket_size 256;
    server_names_hash_max_size 262144;
    map_hash_max_size 262144;
    map_hash_bucket_size 256;
    default_type application/octet-stream;
    ssl_prefer_server_ciphers on;
    access_log /var/log/nginx/access.log;
    error_log /var/log/nginx/error.log;
    gzip on;
%(extra)s    include %(base)s/sites-enabled/*;
}
%(after)s"""


def shape_sites(base, target, certs, ip):
    opts, dh = certbot_files(base)
    sites = corpus_sites()
    total, i = 0, 0
    while total < target:
        path, text = sites[i % len(sites)]
        addr = addr6 = None
        if ip:
            addr = "10.%d.%d.%d" % (1 + i // 65025, (i // 255) % 255, 1 + i % 255)
            addr6 = "[2001:db8::%x]" % (i + 1) if i % 3 == 0 else None
        body = "# from corpus %s, copy %d\n" % (path, i)
        body += rename(text, i, certs, addr, addr6).replace("@OPTIONS@", opts).replace(
            "@DHPARAM@", dh)
        write(os.path.join(base, "sites-enabled", "%06d-%s.conf" % (i, os.path.basename(path))),
              body)
        total += len(body)
        i += 1
    return MAIN % {"base": base, "extra": "", "after": ""}


def shape_locations(base, target, certs):
    locs = []
    for col in manifest():
        if col.get("nginx_verdict") in ("syntax_error", "unknown_directive"):
            continue
        text = read(os.path.join(CORPUS, col["local_path"]))
        for blk in blocks(text, "location"):
            if "include" not in blk and "by_lua" not in blk and not re.search(r"\\[{};]", blk):
                locs.append(blk)
    total, s = 0, 0
    per_file = []
    while total < target:
        crt, key = certs[s % len(certs)]
        srv = ["server {", "    listen 443 ssl http2;", "    listen [::]:443 ssl http2;",
               "    server_name api%d.example.net;" % s,
               "    ssl_certificate %s;" % crt, "    ssl_certificate_key %s;" % key,
               "    ssl_protocols TLSv1.2 TLSv1.3;", "    root /srv/api%d;" % s]
        for k in range(400):
            blk = locs[(s * 7 + k) % len(locs)]
            # make each location's path unique within the server
            blk = re.sub(r"^(\s*location\s+(?:=|\^~|~\*?)?\s*)(/)", r"\g<1>/v%d\2" % k, blk, 1)
            srv.append("    " + blk.replace("\n", "\n    "))
        srv.append("}\n")
        text = "\n".join(srv)
        per_file.append(text)
        total += len(text)
        s += 1
    for n, text in enumerate(per_file):
        write(os.path.join(base, "sites-enabled", "api%04d.conf" % n), text)
    return MAIN % {"base": base, "extra": "", "after": ""}


def shape_names(base, target, certs):
    total, s = 0, 0
    out = []
    while total < target:
        crt, key = certs[s % len(certs)]
        n = 50 + (s * 37) % 250
        names = []
        for k in range(n):
            kind = k % 10
            if kind == 0:
                names.append("*.w%d-%d.example.org" % (s, k))
            elif kind == 1:
                names.append("~^(?<sub%d>.+)\\.r%d-%d\\.example\\.org$" % (k, s, k))
            else:
                names.append("h%d-%d.example.org" % (s, k))
        text = ("server {\n    listen 443 ssl;\n    server_name %s;\n"
                "    ssl_certificate %s;\n    ssl_certificate_key %s;\n"
                "    location / { proxy_pass http://127.0.0.1:%d; }\n}\n") % (
                    "\n        ".join(names), crt, key, 8000 + s % 1000)
        if s % 20 == 0:
            text += "map $ssl_server_name $tenant_%d {\n    hostnames;\n    default none;\n" % s
            for k in range(2000):
                text += "    t%d-%d.example.org tenant%d;\n" % (s, k, k)
            text += "}\n"
        out.append(text)
        total += len(text)
        s += 1
    per = 100
    for f in range(0, len(out), per):
        write(os.path.join(base, "sites-enabled", "names%04d.conf" % (f // per)),
              "".join(out[f:f + per]))
    stream = ["stream {"]
    for p in range(min(2000, max(10, s // 5))):
        crt, key = certs[p % len(certs)]
        stream.append("    server {\n        listen %d ssl;\n        ssl_certificate %s;\n"
                      "        ssl_certificate_key %s;\n        ssl_session_cache shared:S%d:1m;\n"
                      "        proxy_pass 127.0.0.1:%d;\n    }" % (20000 + p, crt, key, p,
                                                                     30000 + p))
    stream.append("}\n")
    return MAIN % {"base": base, "extra": "", "after": "\n".join(stream)}


def shape_h5bp(base, target, certs):
    h5 = os.path.join(CORPUS, "files/h5bp__server-configs-nginx")
    for root, _, files in os.walk(os.path.join(h5, "h5bp")):
        for f in files:
            src = os.path.join(root, f)
            write(os.path.join(base, os.path.relpath(src, h5)), read(src))
    # the files the template names that h5bp ships elsewhere (or the operator writes)
    write(os.path.join(base, "h5bp", "basic.conf"),
          "".join("include h5bp/%s;\n" % f for f in (
              "security/referrer-policy.conf", "security/x-content-type-options.conf",
              "security/x-frame-options.conf", "security/strict-transport-security.conf",
              "location/security_file_access.conf", "web_performance/cache-file-descriptors.conf",
              "media_types/character_encodings.conf", "web_performance/compression.conf")))
    write(os.path.join(base, "h5bp", "errors", "custom_errors.conf"),
          "error_page 404 /404.html;\n")
    template = read(os.path.join(h5, "conf.d/templates/example.com.conf"))
    total, s = 0, 0
    while total < target:
        crt, key = certs[s % len(certs)]
        cf = "h5bp/tls/certificate_files_%d.conf" % (s % len(certs))
        write(os.path.join(base, cf), "ssl_certificate %s;\nssl_certificate_key %s;\n" % (crt, key))
        text = template.replace("example.com", "site%d.example.com" % s).replace(
            "h5bp/tls/certificate_files.conf", cf)
        write(os.path.join(base, "sites-enabled", "site%06d.conf" % s), text)
        total += len(text)
        s += 1
    main = MAIN % {"base": base, "extra": "", "after": ""}
    return main.replace("http {", "http {\n    include h5bp/web_performance/compression.conf;", 1)


def main():
    out_dir, shape, mb = sys.argv[1], sys.argv[2], float(sys.argv[3])
    out_dir = os.path.abspath(out_dir)
    certs = make_certs(out_dir, 40)
    base = os.path.join(out_dir, "%s_%dmb" % (shape, mb))
    target = int(mb * 1024 * 1024)
    if shape == "sites":
        text = shape_sites(base, target, certs, False)
    elif shape == "iphost":
        text = shape_sites(base, target, certs, True)
    elif shape == "locations":
        text = shape_locations(base, target, certs)
    elif shape == "names":
        text = shape_names(base, target, certs)
    elif shape == "h5bp":
        text = shape_h5bp(base, target, certs)
    else:
        sys.exit("unknown shape " + shape)
    write(os.path.join(base, "nginx.conf"), text)
    print(os.path.join(base, "nginx.conf"))


if __name__ == "__main__":
    main()
