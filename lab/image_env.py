"""The environment each public image's Dockerfile sets (its ``ENV`` lines), by version line.

A container starts with its image's environment under the pod's own (``kubectl exec nginx --
env`` shows ``NGINX_VERSION``, a postgres container has ``PGDATA``), so scripts and manifests
found on the internet that read them work. The release a tag runs comes from the catalog
(``ImageSpec.version_of``: ``nginx:1.26`` → the newest 1.26 release of
``lab/apps/base/images.yaml``), so ``NGINX_VERSION`` always says what ``nginx -v`` says; the
values below hold ``{version}`` and ``{major}`` where the Dockerfiles put the release. The
release's line (its version prefix) picks what else differs between lines (njs, the Debian
package revision), a release of none of them gets the image's first line, and an ``-alpine``
tag the Alpine build's values where they differ. Checksums and signing keys are left out:
nothing reads them, and a wrong one would be worse than none.
"""

from __future__ import annotations

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


def _nginx(line: str, njs: str, release: str, *, dynpkg: bool) -> VersionLine:
    debian = {
        "NGINX_VERSION": "{version}",
        "NJS_VERSION": njs,
        "NJS_RELEASE": f"{release}~bookworm",
        "PKG_RELEASE": f"{release}~bookworm",
    }
    alpine: dict[str, str | None] = {
        "NGINX_VERSION": "{version}",
        "PKG_RELEASE": release,
        "NJS_VERSION": njs,
        "NJS_RELEASE": release,
    }
    if dynpkg:  # the Dockerfiles name the dynamic modules' release from 1.27.2 on
        debian["DYNPKG_RELEASE"] = f"{release}~bookworm"
        alpine["DYNPKG_RELEASE"] = release
    return VersionLine(line, debian, alpine)


def _postgres(major: str) -> VersionLine:
    common = {"LANG": "en_US.utf8", "PG_MAJOR": "{major}", "PGDATA": "/var/lib/postgresql/data"}
    return VersionLine(
        major,
        {
            "PATH": f"{DEFAULT_PATH}:/usr/lib/postgresql/{{major}}/bin",
            "GOSU_VERSION": "1.17",
            **common,
            "PG_VERSION": "{version}-1.pgdg120+1",
        },
        {"PATH": DEFAULT_PATH, "GOSU_VERSION": None, **common, "PG_VERSION": "{version}"},
    )


def _redis(line: str) -> VersionLine:
    env = {
        "REDIS_VERSION": "{version}",
        "REDIS_DOWNLOAD_URL": "http://download.redis.io/releases/redis-{version}.tar.gz",
    }
    return VersionLine(line, {"GOSU_VERSION": "1.17", **env}, {"GOSU_VERSION": None})


IMAGE_ENV: dict[str, list[VersionLine]] = {
    # The first line of each image is also what a release of no listed line gets.
    "nginx": [
        _nginx("1.27", "0.8.7", "1", dynpkg=True),
        _nginx("1.26", "0.8.5", "1", dynpkg=False),
        _nginx("1.25", "0.8.4", "1", dynpkg=False),
    ],
    "nginxinc/nginx-unprivileged": [_nginx("1.27", "0.8.7", "1", dynpkg=True)],
    "postgres": [_postgres("16"), _postgres("17"), _postgres("15"), _postgres("14")],
    "redis": [_redis("7.2"), _redis("7.4"), _redis("6.2")],
    "mysql": [
        VersionLine(
            "8.4",
            {
                "GOSU_VERSION": "1.17",
                "MYSQL_MAJOR": "8.4",
                "MYSQL_VERSION": "{version}-1.el9",
                "MYSQL_SHELL_VERSION": "{version}-1.el9",
            },
        )
    ],
    "httpd": [
        VersionLine(
            "2.4",
            {
                "PATH": f"/usr/local/apache2/bin:{DEFAULT_PATH}",
                "HTTPD_PREFIX": "/usr/local/apache2",
                "HTTPD_VERSION": "{version}",
                "HTTPD_PATCHES": "",
            },
        )
    ],
    "memcached": [VersionLine("1.6", {"MEMCACHED_VERSION": "{version}"})],
    "python": [VersionLine("", {"LANG": "C.UTF-8", "PYTHON_VERSION": "{version}"})],
    "node": [VersionLine("", {"NODE_VERSION": "{version}", "YARN_VERSION": "1.22.22"})],
    "golang": [
        VersionLine(
            "",
            {
                "PATH": f"/go/bin:/usr/local/go/bin:{DEFAULT_PATH}",
                "GOLANG_VERSION": "{version}",
                "GOTOOLCHAIN": "local",
                "GOPATH": "/go",
            },
        )
    ],
}


def _line(lines: list[VersionLine], version: str) -> VersionLine:
    """The line a release belongs to (``1.26.3`` → ``1.26``), else the image's first."""
    for line in lines:
        if not line.prefix or version == line.prefix or version.startswith(line.prefix + "."):
            return line
    return lines[0]


def _filled(value: str, version: str) -> str:
    return value.replace("{version}", version).replace("{major}", version.split(".", 1)[0])


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
    version = spec.version_of(tag)
    line = _line(lines, version)
    values: dict[str, str | None] = dict(line.env)
    if "alpine" in tag:
        values.update(line.alpine)
    for key, value in values.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = _filled(value, version)
    return env
