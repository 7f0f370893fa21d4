"""A started container's image as containerd reports it in the pod's status: the reference
fully qualified as Docker normalizes it, and the repository its imageID names."""

from __future__ import annotations

import pytest

from lab.cluster.clock import INSTANT, Clock
from lab.controllers.containers import ContainerRun, container_status
from lab.images import qualified_image


@pytest.mark.parametrize(
    ("reference", "image", "repository"),
    [
        ("busybox:1.36", "docker.io/library/busybox:1.36", "docker.io/library/busybox"),
        ("busybox", "docker.io/library/busybox:latest", "docker.io/library/busybox"),
        ("bitnami/redis:7.2", "docker.io/bitnami/redis:7.2", "docker.io/bitnami/redis"),
        ("registry.k8s.io/pause:3.9", "registry.k8s.io/pause:3.9", "registry.k8s.io/pause"),
        ("localhost:5000/team/app:1", "localhost:5000/team/app:1", "localhost:5000/team/app"),
        ("ghcr.io/org/tool", "ghcr.io/org/tool:latest", "ghcr.io/org/tool"),
        ("nginx@sha256:ab12", "docker.io/library/nginx@sha256:ab12", "docker.io/library/nginx"),
        ("docker.io/library/nginx:1.27", "docker.io/library/nginx:1.27", "docker.io/library/nginx"),
    ],
)
def test_references_are_qualified_as_docker_normalizes_them(
    reference: str, image: str, repository: str
) -> None:
    assert qualified_image(reference) == (image, repository)


def test_a_started_container_reports_the_qualified_image_a_waiting_one_the_spec() -> None:
    clock = Clock(INSTANT)
    run = ContainerRun(name="c", image="busybox:1.36", spec={"name": "c", "image": "busybox:1.36"})
    waiting = container_status(run, clock)
    assert (waiting["image"], waiting["imageID"]) == ("busybox:1.36", "")
    run.ever_started = True
    started = container_status(run, clock)
    assert started["image"] == "docker.io/library/busybox:1.36"
    assert started["imageID"].startswith("docker.io/library/busybox@sha256:")
