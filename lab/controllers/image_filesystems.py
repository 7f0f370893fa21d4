"""The well-known files of the public images the lab knows, as the images ship them.

A verification that reads ``/usr/share/nginx/html/index.html`` or lists ``/data`` in a redis
container expects what the real image has there; a volume mounted over one of these paths
hides it, as on a node (``exec_files.ContainerFiles`` gives mounts the precedence). Which
tree an image gets is its catalog entry's ``filesystem``; the HTTP servers among them serve
their ``docroot`` from the container's files (``http_files``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

NGINX_INDEX = """<!DOCTYPE html>
<html>
<head>
<title>Welcome to nginx!</title>
<style>
html { color-scheme: light dark; }
body { width: 35em; margin: 0 auto;
font-family: Tahoma, Verdana, Arial, sans-serif; }
</style>
</head>
<body>
<h1>Welcome to nginx!</h1>
<p>If you see this page, the nginx web server is successfully installed and
working. Further configuration is required.</p>

<p>For online documentation and support please refer to
<a href="http://nginx.org/">nginx.org</a>.<br/>
Commercial support is available at
<a href="http://nginx.com/">nginx.com</a>.</p>

<p><em>Thank you for using nginx.</em></p>
</body>
</html>
"""

NGINX_50X = """<!DOCTYPE html>
<html>
<head>
<title>Error</title>
<style>
html { color-scheme: light dark; }
body { width: 35em; margin: 0 auto;
font-family: Tahoma, Verdana, Arial, sans-serif; }
</style>
</head>
<body>
<h1>An error occurred.</h1>
<p>Sorry, the page you are looking for is currently unavailable.<br/>
Please try again later.</p>
<p>If you are the system administrator of this resource then you should check
the error log for details.</p>
<p><em>Faithfully yours, nginx.</em></p>
</body>
</html>
"""

NGINX_CONF = """
user  nginx;
worker_processes  auto;

error_log  /var/log/nginx/error.log notice;
pid        {pid};


events {{
    worker_connections  1024;
}}


http {{
    include       /etc/nginx/mime.types;
    default_type  application/octet-stream;

    log_format  main  '$remote_addr - $remote_user [$time_local] "$request" '
                      '$status $body_bytes_sent "$http_referer" '
                      '"$http_user_agent" "$http_x_forwarded_for"';

    access_log  /var/log/nginx/access.log  main;

    sendfile        on;
    #tcp_nopush     on;

    keepalive_timeout  65;

    #gzip  on;

    include /etc/nginx/conf.d/*.conf;
}}
"""

NGINX_DEFAULT_CONF = """server {{
    listen       {port};
    listen  [::]:{port};
    server_name  localhost;

    #access_log  /var/log/nginx/host.access.log  main;

    location / {{
        root   /usr/share/nginx/html;
        index  index.html index.htm;
    }}

    #error_page  404              /404.html;

    # redirect server error pages to the static page /50x.html
    #
    error_page   500 502 503 504  /50x.html;
    location = /50x.html {{
        root   /usr/share/nginx/html;
    }}

    # proxy the PHP scripts to Apache listening on 127.0.0.1:80
    #
    #location ~ \\.php$ {{
    #    proxy_pass   http://127.0.0.1;
    #}}

    # pass the PHP scripts to FastCGI server listening on 127.0.0.1:9000
    #
    #location ~ \\.php$ {{
    #    root           html;
    #    fastcgi_pass   127.0.0.1:9000;
    #    fastcgi_index  index.php;
    #    fastcgi_param  SCRIPT_FILENAME  /scripts$fastcgi_script_name;
    #    include        fastcgi_params;
    #}}

    # deny access to .htaccess files, if Apache's document root
    # concurs with nginx's one
    #
    #location ~ /\\.ht {{
    #    deny  all;
    #}}
}}

"""

HTTPD_INDEX = "<html><body><h1>It works!</h1></body></html>\n"


@dataclass(frozen=True)
class Tree:
    """One image's files (path → content), its other folders, and its server's folders."""

    files: dict[str, str] = field(default_factory=dict)
    dirs: tuple[str, ...] = ()
    workdir: str = "/"
    docroot: str = ""  # the folder its HTTP server serves ("" when it has none)


def _nginx(port: int, pid: str) -> Tree:
    return Tree(
        files={
            "/usr/share/nginx/html/index.html": NGINX_INDEX,
            "/usr/share/nginx/html/50x.html": NGINX_50X,
            "/etc/nginx/nginx.conf": NGINX_CONF.format(pid=pid),
            "/etc/nginx/conf.d/default.conf": NGINX_DEFAULT_CONF.format(port=port),
            "/docker-entrypoint.sh": "#!/bin/sh\n# vim:sw=4:ts=4:et\n\nset -e\n",
        },
        dirs=("/var/cache/nginx", "/var/log/nginx", "/docker-entrypoint.d"),
        docroot="/usr/share/nginx/html",
    )


TREES: dict[str, Tree] = {
    "nginx": _nginx(80, "/var/run/nginx.pid"),
    "nginx-unprivileged": _nginx(8080, "/tmp/nginx.pid"),
    "httpd": Tree(
        files={
            "/usr/local/apache2/htdocs/index.html": HTTPD_INDEX,
            "/usr/local/apache2/conf/httpd.conf": (
                'ServerRoot "/usr/local/apache2"\nListen 80\n'
                'DocumentRoot "/usr/local/apache2/htdocs"\n'
                '<Directory "/usr/local/apache2/htdocs">\n'
                "    Options Indexes FollowSymLinks\n    AllowOverride None\n"
                "    Require all granted\n</Directory>\n"
                "DirectoryIndex index.html\n"
            ),
            "/usr/local/bin/httpd-foreground": (
                "#!/bin/sh\nset -e\n\n# Apache gets grumpy about PID files pre-existing\n"
                'rm -f /usr/local/apache2/logs/httpd.pid\n\nexec httpd -DFOREGROUND "$@"\n'
            ),
        },
        dirs=("/usr/local/apache2/logs", "/usr/local/apache2/cgi-bin", "/usr/local/apache2/bin"),
        workdir="/usr/local/apache2",
        docroot="/usr/local/apache2/htdocs",
    ),
    "redis": Tree(
        files={"/usr/local/bin/docker-entrypoint.sh": "#!/bin/sh\nset -e\n"},
        dirs=("/data",),
        workdir="/data",
    ),
    "postgres": Tree(
        files={
            "/usr/local/bin/docker-entrypoint.sh": "#!/usr/bin/env bash\nset -Eeo pipefail\n",
            # What initdb leaves in PGDATA (the lab does not tell a first start from later).
            "/var/lib/postgresql/data/PG_VERSION": "{major}\n",
            "/var/lib/postgresql/data/postgresql.conf": "listen_addresses = '*'\n",
            "/var/lib/postgresql/data/pg_hba.conf": (
                "local   all             all                                     trust\n"
                "host    all             all             127.0.0.1/32            trust\n"
                "host    all             all             ::1/128                 trust\n"
                "host all all all scram-sha-256\n"
            ),
        },
        dirs=(
            "/var/lib/postgresql/data/base",
            "/var/lib/postgresql/data/global",
            "/var/lib/postgresql/data/pg_wal",
            "/var/run/postgresql",
            "/docker-entrypoint-initdb.d",
        ),
    ),
}


def tree(name: str | None, version: str = "") -> Tree:
    """The stock tree of a catalog ``filesystem`` name (an empty one for the rest), with
    ``{major}`` in its files the major version of ``version`` (postgres's PG_VERSION)."""
    found = TREES.get(name or "", Tree())
    parts = version.split(".")
    major = ".".join(parts[:2]) if parts[0] == "9" else parts[0]  # 9.6 was a major release
    files = {path: text.replace("{major}", major) for path, text in found.files.items()}
    return dataclasses.replace(found, files=files)
