# The Stratus image: `stratus` as its entrypoint, run as a non-root user.
#
# Two stages: the build stage makes a virtualenv and installs the project into it the way
# scripts/setup does (a venv, pip upgraded, the project installed — here without the dev
# tools and not editable); the final stage copies only that virtualenv onto the same slim
# base, so no compiler, pip cache or source tree ships. The base is pinned to an exact
# Python release; pin its digest too where your registry allows (docs/deploy.md).
ARG PYTHON_IMAGE=python:3.11.7-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
RUN python -m venv /opt/stratus
COPY pyproject.toml README.md ./
COPY cli/ cli/
COPY bot/ bot/
COPY gateway/ gateway/
COPY operations/ operations/
COPY incidents/ incidents/
COPY agents/ agents/
COPY proposals/ proposals/
COPY policies/ policies/
COPY undo/ undo/
COPY tools/ tools/
COPY store/ store/
COPY lab/ lab/
RUN /opt/stratus/bin/python -m pip install --upgrade pip \
 && /opt/stratus/bin/python -m pip install .

FROM ${PYTHON_IMAGE}
# The same uid and gid as the Deployment's runAsUser/runAsGroup (manifests/deploy/base).
RUN groupadd --system --gid 10001 stratus \
 && useradd --system --uid 10001 --gid 10001 --no-create-home \
      --home-dir /var/lib/stratus --shell /usr/sbin/nologin stratus
COPY --from=build /opt/stratus /opt/stratus
ENV PATH=/opt/stratus/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    STRATUS_HOME=/var/lib/stratus
USER 10001:10001
WORKDIR /var/lib/stratus
EXPOSE 8080
ENTRYPOINT ["stratus"]
CMD ["serve"]
