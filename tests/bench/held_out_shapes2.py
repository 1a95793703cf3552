#!/usr/bin/env python3
"""Held-out bench inputs built from real public configs, multiplied.

Written without reading tests/bench/gen_config.hpp or tests/bench/held_out_shapes.py, so that
the lint's speed is measured on shapes nobody tuned it on. Each shape copies the structure and
the directives of real site files in /work/shared/corpus (the corpus README names their
repositories and licences), renames the server names, paths and addresses per copy, and repeats
them until the configuration reaches the size asked for.

Shapes:
  certbot   Debian layout: nginx.conf with `include sites-enabled/*.conf;` and one site file per
            site, each a renamed copy of one of three real Django sites from certbot's
            compatibility test data (79-configs/site-23470, site-23325, site-32438): `listen 443;`
            with `ssl on;`, redirect servers on 8445, 1000 and 8444, an upstream per site,
            media/static/proxy locations. Few sockets, each with many name-based servers.
  handbook  nginx-admins-handbook's layout (trimstray, lib/nginx): per-address listen snippets
            (`_listen/ADDR/https.conf`: listen ADDR:443 ssl http2 plus the session cache, tickets,
            protocols and ciphers), per-site `servers.conf`, `certs/SITE.conf` and
            `backends.conf`, each server including its address's snippet, its certificate
            snippet and the shared error pages; a few sites per address. Beside http, a `stream`
            block of TLS-terminating proxies, one address and port each (as a
            TCP/TLS load balancer carries them).

Usage: held_out_shapes2.py OUT_DIR SHAPE MEGABYTES
Prints the path of the main config file.
"""

import os
import sys

CERTBOT_TEMPLATES = [
    # certbot-compatibility-test/nginx/nginx-roundtrip-testdata/79-configs/site-23470
    """upstream django_server_{site}.example.org {{
    server unix:/srv/http/{app}/live/website.sock;
}}

server {{
    listen 443;
    server_name {site}.example.org;

    ssl on;
    ssl_certificate     /etc/ssl/public/{site}.example.org.bundle.crt;
    ssl_certificate_key /etc/ssl/private/{site}.example.org.key;

    location /media/ {{
        alias /srv/http/{app}/live/dynamic/public/;
        expires 7d;
        include upload_folder_security_params;
    }}
    location /static/ {{
        alias /srv/http/{app}/live/static_collected/;
        expires 7d;
    }}

    location / {{
        proxy_pass http://django_server_{site}.example.org;
        proxy_set_header Host $host;
        proxy_set_header X-Real-IP $remote_addr;
        proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
        proxy_set_header X-Forwarded-Protocol $scheme;
    }}

    access_log /var/log/nginx/{app}/live/access.log combined_plus;
    error_log  /var/log/nginx/{app}/live/error.log;
}}

server {{
    listen 443;
    server_name www.{site}.example.org;

    ssl on;
    ssl_certificate     /etc/ssl/public/{site}.example.org.bundle.crt;
    ssl_certificate_key /etc/ssl/private/{site}.example.org.key;

    return 301 https://{site}.example.org$request_uri;
}}

server {{
    listen 80;

    server_name {site}.example.org www.{site}.example.org {alias}a.example.org;
    server_name {alias}b.example.org www.{alias}b.example.org;

    return 301 https://{site}.example.org$request_uri;
}}
""",
    # 79-configs/site-23325
    """upstream django_server_{app}_live {{
  server unix:/srv/http/{app}/live/website.sock fail_timeout=5;
}}

server {{
    listen 443;
    server_name {site}.example.org;

    ssl on;
    ssl_certificate     /etc/ssl/public/{site}.example.org_chained.crt;
    ssl_certificate_key /etc/ssl/private/{site}.example.org.key;

    location /media/ {{
        alias /srv/http/{app}/live/dynamic/public/;
        expires 7d;
        include upload_folder_security_params;
    }}

    location /static/ {{
        alias /srv/http/{app}/live/static_collected/;
        expires 7d;
    }}

    location / {{
        proxy_pass http://django_server_{app}_live;
        proxy_set_header Host $host;
        proxy_set_header X-Real-IP $remote_addr;
        proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
        proxy_set_header X-Forwarded-Protocol $scheme;
    }}

  access_log /var/log/nginx/{app}/live/access.log combined_plus;
  error_log /var/log/nginx/{app}/live/error.log;
}}

server {{
  listen 80;
  server_name {site}.example.org www.{site}.example.org;

  return 301 https://{site}.example.org$request_uri;
}}

server {{
  listen 8445;
  server_name {site}.example.org www.{site}.example.org;

  ssl on;
  ssl_certificate     /etc/ssl/public/{site}.example.org_chained.crt;
  ssl_certificate_key /etc/ssl/private/{site}.example.org.key;

  return 301 https://{site}.example.org$request_uri;
}}

server {{
  listen 1000;
  server_name {site}.example.org www.{site}.example.org;

  ssl on;
  ssl_certificate     /etc/ssl/public/{site}.example.org_chained.crt;
  ssl_certificate_key /etc/ssl/private/{site}.example.org.key;

  return 301 https://{site}.example.org$request_uri;
}}

server {{
  listen 443;
  server_name www.{site}.example.org;

  ssl on;
  ssl_certificate     /etc/ssl/public/{site}.example.org_chained.crt;
  ssl_certificate_key /etc/ssl/private/{site}.example.org.key;

  return 301 https://{site}.example.org$request_uri;
}}
""",
    # 79-configs/site-32438
    """upstream django_server_{site}.example.org {{
    server unix:/srv/http/{app}/acceptance/website.sock;
}}

server {{
    listen 80;
    server_name {site}.example.org;

    if ($host != '{site}.example.org') {{
        rewrite  ^/(.*)$  http://{site}.example.org/$1  permanent;
    }}

    rewrite ^/(.*) https://$host:8444/$1;
}}

server {{
    listen 8444;
    server_name {site}.example.org;

    ssl on;
    ssl_certificate       /etc/ssl/public/{alias}.example.org.crt;
    ssl_certificate_key   /etc/ssl/private/{alias}.example.org.key;

    location ^~ /media/ {{
        alias /srv/http/{app}/acceptance/dynamic/public/;
        expires 7d;
    }}
    location ^~ /static/ {{
        alias /srv/http/{app}/acceptance/static_collected/;
        expires 7d;
    }}

    location / {{
        proxy_pass http://django_server_{site}.example.org;
        include          proxy_params;

        #satisfy any;
        #auth_basic           'acceptance for {app}';
        #auth_basic_user_file /srv/http/{app}/acceptance/htpasswords;
        #deny all;
    }}

    access_log /var/log/nginx/{app}/acceptance/access.log combined_plus;
    error_log  /var/log/nginx/{app}/acceptance/error.log;
}}
""",
]

CERTBOT_MAIN = """user www-data;
worker_processes 4;
pid /run/nginx.pid;

events {
	worker_connections 768;
}

http {
	sendfile on;
	tcp_nopush on;
	tcp_nodelay on;
	keepalive_timeout 65;
	types_hash_max_size 2048;

	include mime.types;
	default_type application/octet-stream;

	log_format combined_plus '$remote_addr - $remote_user [$time_local] "$request" '
	                         '$status $body_bytes_sent "$http_referer" "$http_user_agent" $request_time';

	access_log /var/log/nginx/access.log;
	error_log /var/log/nginx/error.log;

	gzip on;
	gzip_disable "msie6";

	include conf.d/*.conf;
	include sites-enabled/*.conf;
}
"""

UPLOAD_PARAMS = """location ~* \\.(php|pl|py|jsp|asp|sh|cgi)$ {
    deny all;
}
"""

PROXY_PARAMS = """proxy_set_header Host $http_host;
proxy_set_header X-Real-IP $remote_addr;
proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
proxy_set_header X-Forwarded-Proto $scheme;
"""

MIME_TYPES = """types {
    text/html                             html htm shtml;
    text/css                              css;
    application/javascript                js;
    image/png                             png;
}
"""


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    return len(text.encode())


def certbot(out, target_bytes):
    size = write(os.path.join(out, "nginx.conf"), CERTBOT_MAIN)
    size += write(os.path.join(out, "mime.types"), MIME_TYPES)
    size += write(os.path.join(out, "upload_folder_security_params"), UPLOAD_PARAMS)
    size += write(os.path.join(out, "proxy_params"), PROXY_PARAMS)
    os.makedirs(os.path.join(out, "conf.d"), exist_ok=True)
    n = 0
    while size < target_bytes:
        template = CERTBOT_TEMPLATES[n % len(CERTBOT_TEMPLATES)]
        text = template.format(site="site%d" % n, app="app%d" % n, alias="alias%d" % n)
        size += write(os.path.join(out, "sites-enabled", "site-%06d.conf" % n), text)
        n += 1
    return os.path.join(out, "nginx.conf")


HANDBOOK_MAIN = """user                          nginx;
worker_processes              2;
worker_rlimit_nofile          64000;
pid                           /var/run/nginx.pid;
error_log                     /var/log/nginx/error.log warn;

events {
  worker_connections          512;
}

http {
  include                     master/_basic/main.conf;
  include                     master/_basic/proxy-params.conf;
  include                     master/_server/*/servers.conf;
  include                     master/_server/*/backends.conf;
}

stream {
  include                     master/_stream/*.conf;
}
"""

HANDBOOK_BASIC_MAIN = """default_type                  application/octet-stream;
sendfile                      on;
tcp_nopush                    on;
tcp_nodelay                   on;
keepalive_timeout             75;
server_tokens                 off;
client_max_body_size          1m;
"""

HANDBOOK_PROXY_PARAMS = """proxy_set_header              Host $host;
proxy_set_header              X-Real-IP $remote_addr;
proxy_set_header              X-Forwarded-For $proxy_add_x_forwarded_for;
proxy_set_header              X-Forwarded-Proto $scheme;
proxy_http_version            1.1;
"""

HANDBOOK_ERRORS = """error_page                    404 /404.html;
error_page                    500 502 503 504 /50x.html;

location = /404.html {
  root                        /usr/share/www/errors;
  internal;
}

location = /50x.html {
  root                        /usr/share/www/errors;
  internal;
}
"""

# lib/nginx/master/_listen/192.168.250.2/https.conf
HANDBOOK_LISTEN = """listen                        {addr}:443 ssl http2;

ssl_session_cache             shared:SSL_{tag}:10m;
ssl_session_timeout           4h;
ssl_session_tickets           off;
ssl_buffer_size               1400;

ssl_protocols                 TLSv1.3 TLSv1.2;
ssl_ciphers                   "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384:DHE-RSA-CHACHA20-POLY1305:DHE-RSA-AES128-GCM-SHA256";

ssl_prefer_server_ciphers     on;

ssl_ecdh_curve                X25519:secp521r1:secp384r1:prime256v1;

ssl_dhparam                   /etc/nginx/dhparam_4096-with-ds.pem;
"""

HANDBOOK_LISTEN_HTTP = """listen                        {addr}:80;
"""

HANDBOOK_CERTS = """ssl_certificate               /etc/nginx/master/_server/{site}/certs/nginx_{site}_bundle.crt;
ssl_certificate_key           /etc/nginx/master/_server/{site}/certs/{site}.key;
"""

# lib/nginx/master/_server/blkcipher.info/servers.conf
HANDBOOK_SERVERS = """server {{

  include                     master/_listen/{addr}/http.conf;

  server_name                 {site} www.{site};

  location / {{

    return                    301 https://$host$request_uri;

  }}

}}

server {{

  include                     master/_listen/{addr}/https.conf;

  include                     master/_server/{site}/certs/{site}.conf;

  include                     master/_static/errors.conf;

  root                        /usr/share/www/{site};

  server_name                 www.{site};

  return                      301 https://{site}$request_uri;

}}

server {{

  include                     master/_listen/{addr}/https.conf;

  include                     master/_server/{site}/certs/{site}.conf;

  include                     master/_static/errors.conf;

  add_header                  Strict-Transport-Security "max-age=63072000; includeSubdomains" always;
  add_header                  X-Frame-Options "SAMEORIGIN" always;
  add_header                  Referrer-Policy "no-referrer";
  add_header                  X-Content-Type-Options "nosniff" always;

  root                        /usr/share/www/{site};

  server_name                 {site};

  location / {{

    proxy_pass                http://{backend};
    client_max_body_size      2m;

  }}

  location ~ ^/(blog) {{

    return                    301 https://{site};

  }}

  location = /robots.txt {{

    log_not_found             off;
    access_log                off;

    proxy_pass                http://{backend};

  }}

  access_log                  /var/log/nginx/domains/{site}/{site}-access.log;
  error_log                   /var/log/nginx/domains/{site}/{site}-error.log warn;

}}
"""

HANDBOOK_BACKENDS = """upstream {backend} {{

  server                      10.{b}.{c}.10:80 weight=5;
  server                      10.{b}.{c}.11:80 weight=5;
  keepalive                   16;

}}
"""

# A TLS-terminating TCP proxy per service, as nginx's stream module docs configure one.
HANDBOOK_STREAM = """upstream {backend}_tcp {{
    server                    10.{b}.{c}.20:{port};
    server                    10.{b}.{c}.21:{port} backup;
}}

server {{
    listen                    {addr}:{port} ssl;
    proxy_pass                {backend}_tcp;

    ssl_certificate           /etc/nginx/master/_server/{site}/certs/nginx_{site}_bundle.crt;
    ssl_certificate_key       /etc/nginx/master/_server/{site}/certs/{site}.key;
    ssl_protocols             TLSv1.2 TLSv1.3;
    ssl_session_cache         shared:STREAM_{tag}:5m;
    ssl_session_timeout       4h;
    ssl_handshake_timeout     10s;
}}
"""

SITES_PER_ADDRESS = 4


def handbook(out, target_bytes):
    size = write(os.path.join(out, "nginx.conf"), HANDBOOK_MAIN)
    master = os.path.join(out, "master")
    size += write(os.path.join(master, "_basic", "main.conf"), HANDBOOK_BASIC_MAIN)
    size += write(os.path.join(master, "_basic", "proxy-params.conf"), HANDBOOK_PROXY_PARAMS)
    size += write(os.path.join(master, "_static", "errors.conf"), HANDBOOK_ERRORS)
    n = 0
    while size < target_bytes:
        a = n // SITES_PER_ADDRESS
        addr = "10.%d.%d.%d" % (100 + a // 65536, (a // 256) % 256, a % 256)
        tag = "a%d" % a
        if n % SITES_PER_ADDRESS == 0:
            listen = os.path.join(master, "_listen", addr)
            size += write(os.path.join(listen, "https.conf"), HANDBOOK_LISTEN.format(addr=addr, tag=tag))
            size += write(os.path.join(listen, "http.conf"), HANDBOOK_LISTEN_HTTP.format(addr=addr))
        site = "site%d.example.net" % n
        backend = "site%d_prod_backend" % n
        server_dir = os.path.join(master, "_server", site)
        fields = dict(addr=addr, site=site, backend=backend, tag="s%d" % n,
                      b=(n // 256) % 256, c=n % 256, port=5000 + n % 4000)
        size += write(os.path.join(server_dir, "servers.conf"), HANDBOOK_SERVERS.format(**fields))
        size += write(os.path.join(server_dir, "certs", site + ".conf"), HANDBOOK_CERTS.format(**fields))
        size += write(os.path.join(server_dir, "backends.conf"), HANDBOOK_BACKENDS.format(**fields))
        if n % 3 == 0:
            size += write(os.path.join(master, "_stream", "%s.conf" % site), HANDBOOK_STREAM.format(**fields))
        n += 1
    return os.path.join(out, "nginx.conf")


SHAPES = {"certbot": certbot, "handbook": handbook}


def main():
    if len(sys.argv) != 4 or sys.argv[2] not in SHAPES:
        sys.exit("usage: held_out_shapes2.py OUT_DIR {%s} MEGABYTES" % "|".join(SHAPES))
    out, shape, megabytes = sys.argv[1], sys.argv[2], float(sys.argv[3])
    print(SHAPES[shape](out, int(megabytes * 1000 * 1000)))


if __name__ == "__main__":
    main()
