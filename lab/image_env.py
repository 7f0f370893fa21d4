"""The environment each public image's Dockerfile sets (its ``ENV`` lines), by version line.

A container starts with its image's environment under the pod's own (``kubectl exec nginx --
env`` shows ``NGINX_VERSION``, a postgres container has ``PGDATA``), so scripts and manifests
found on the internet that read them work. The values are the official images' for the
releases the lab's catalog runs (``lab/apps/base/images.yaml``: nginx 1.27.3, postgres 16.4,
redis 7.2.4, mysql 8.4.3 …); a tag's version line picks its entry (``nginx:1.26`` →
1.26.2), a tag of none of them gets the image's default line, and an ``-alpine`` tag the
Alpine build's values where they differ. Checksums and signing keys are left out: nothing
reads them, and a wrong one would be worse than none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from lab.images import ImageCatalog, split_image

DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass(frozen=True)
class VersionLine:
    """One release line of an image: the tags it answers (a version prefix) and its ENV."""

    prefix: str  # "1.27": tags 1.27, 1.27.3, 1.27-alpine …; "" matches any tag
    env: dict[str, str]
    # What the Alpine build sets instead (None: a variable it does not set at all).
    alpine: dict[str, str | None] = field(default_factory=dict)


def _nginx(version: str, njs: str, release: str, *, dynpkg: bool) -> VersionLine:
    debian = {
        "NGINX_VERSION": version,
        "NJS_VERSION": njs,
        "NJS_RELEASE": f"{release}~bookworm",
        "PKG_RELEASE": f"{release}~bookworm",
    }
    alpine: dict[str, str | None] = {
        "NGINX_VERSION": version,
        "PKG_RELEASE": release,
        "NJS_VERSION": njs,
        "NJS_RELEASE": release,
    }
    if dynpkg:  # the Dockerfiles name the dynamic modules' release from 1.27.2 on
        debian["DYNPKG_RELEASE"] = f"{release}~bookworm"
        alpine["DYNPKG_RELEASE"] = release
    return VersionLine(".".join(version.split(".")[:2]), debian, alpine)


def _postgres(version: str) -> VersionLine:
    major = version.split(".", 1)[0]
    common = {"LANG": "en_US.utf8", "PG_MAJOR": major, "PGDATA": "/var/lib/postgresql/data"}
    return VersionLine(
        major,
        {
            "PATH": f"{DEFAULT_PATH}:/usr/lib/postgresql/{major}/bin",
            "GOSU_VERSION": "1.17",
            **common,
            "PG_VERSION": f"{version}-1.pgdg120+1",
        },
        {"PATH": DEFAULT_PATH, "GOSU_VERSION": None, **common, "PG_VERSION": version},
    )


def _redis(version: str) -> VersionLine:
    env = {
        "REDIS_VERSION": version,
        "REDIS_DOWNLOAD_URL": f"http://download.redis.io/releases/redis-{version}.tar.gz",
    }
    return VersionLine(
        ".".join(version.split(".")[:2]), {"GOSU_VERSION": "1.17", **env}, {"GOSU_VERSION": None}
    )


IMAGE_ENV: dict[str, list[VersionLine]] = {
    # The first line of each image is also what ``latest`` and unversioned tags run.
    "nginx": [
        _nginx("1.27.3", "0.8.7", "1", dynpkg=True),
        _nginx("1.26.2", "0.8.5", "1", dynpkg=False),
        _nginx("1.25.5", "0.8.4", "1", dynpkg=False),
    ],
    "nginxinc/nginx-unprivileged": [_nginx("1.27.3", "0.8.7", "1", dynpkg=True)],
    "postgres": [_postgres("16.4"), _postgres("17.2"), _postgres("15.8"), _postgres("14.13")],
    "redis": [_redis("7.2.4"), _redis("7.4.1"), _redis("6.2.16")],
    "mysql": [
        VersionLine(
            "8.4",
            {
                "GOSU_VERSION": "1.17",
                "MYSQL_MAJOR": "8.4",
                "MYSQL_VERSION": "8.4.3-1.el9",
                "MYSQL_SHELL_VERSION": "8.4.3-1.el9",
            },
        )
    ],
    "httpd": [
        VersionLine(
            "2.4",
            {
                "PATH": f"/usr/local/apache2/bin:{DEFAULT_PATH}",
                "HTTPD_PREFIX": "/usr/local/apache2",
                "HTTPD_VERSION": "2.4.62",
                "HTTPD_PATCHES": "",
            },
        )
    ],
    "memcached": [VersionLine("1.6", {"MEMCACHED_VERSION": "1.6.32"})],
    "python": [
        VersionLine("3.13", {"LANG": "C.UTF-8", "PYTHON_VERSION": "3.13.1"}),
        VersionLine("3.12", {"LANG": "C.UTF-8", "PYTHON_VERSION": "3.12.8"}),
        VersionLine("3.11", {"LANG": "C.UTF-8", "PYTHON_VERSION": "3.11.11"}),
    ],
    "node": [
        VersionLine("22", {"NODE_VERSION": "22.12.0", "YARN_VERSION": "1.22.22"}),
        VersionLine("20", {"NODE_VERSION": "20.18.1", "YARN_VERSION": "1.22.22"}),
        VersionLine("18", {"NODE_VERSION": "18.20.5", "YARN_VERSION": "1.22.22"}),
    ],
    "golang": [
        VersionLine(
            "1.23",
            {
                "PATH": f"/go/bin:/usr/local/go/bin:{DEFAULT_PATH}",
                "GOLANG_VERSION": "1.23.4",
                "GOTOOLCHAIN": "local",
                "GOPATH": "/go",
            },
        )
    ],
}

_VERSION_TAG = re.compile(r"v?(\d+(?:\.\d+){0,2})")


def _line(lines: list[VersionLine], tag: str) -> VersionLine:
    found = _VERSION_TAG.match(tag)
    if found is not None:
        numbers = found.group(1)
        for line in lines:
            if numbers == line.prefix or numbers.startswith(line.prefix + "."):
                return line
            if line.prefix.startswith(numbers + "."):  # "1" → the newest 1.x line
                return line
    return lines[0]


def image_environment(catalog: ImageCatalog, reference: str) -> dict[str, str]:
    """The environment the image's ``ENV`` lines give a container of ``reference``: at least
    ``PATH``; nothing for an image the catalog does not know."""
    spec, _ = catalog.lookup(reference)
    if spec is None:
        return {}
    repo, tag = split_image(reference)
    name = next((n for n, s in catalog.images.items() if s is spec), repo)
    env = {"PATH": DEFAULT_PATH}
    lines = IMAGE_ENV.get(name)
    if not lines:
        return env
    line = _line(lines, tag)
    env.update(line.env)
    if "alpine" in tag:
        for key, value in line.alpine.items():
            if value is None:
                env.pop(key, None)
            else:
                env[key] = value
    return env
