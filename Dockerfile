# kumaco's container image.
#
#   docker build -t kumaco:0.1.0 --build-arg REVISION="$(git rev-parse HEAD)" .
#
# The install steps live in hack/image.sh, which CI also runs (tests/unit/test_packaging.py),
# so they are tested on machines without a Docker engine: this file only provides the
# base image, copies the result and sets the runtime contract.
#
# Base image: pinned by exact version. Pin it by digest too
# (python:3.11.14-slim-bookworm@sha256:...) when building in CI: the digest cannot be
# looked up offline where this file was written. Both stages must use the same base, as
# the venv's interpreter is a symlink to the base image's /usr/local/bin/python3.11.
# (Written out in both FROM lines, not as an ARG, so that linters and update bots see it.)

# ---------------------------------------------------------------------------- builder
FROM python:3.11.14-slim-bookworm AS builder
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
WORKDIR /src
# Only what the wheel and the smoke test need (.dockerignore keeps the rest out).
COPY pyproject.toml README.md LICENSE ./
COPY kumaco/ kumaco/
COPY kustomize/examples/ kustomize/examples/
COPY hack/image.sh hack/image.sh
# Builds the wheel, installs it into a clean venv at /opt/kumaco (no pip in it) and
# smoke-tests it: exactly what CI runs.
RUN PYTHON=python3 bash hack/image.sh /opt/kumaco

# ---------------------------------------------------------------------------- runtime
FROM python:3.11.14-slim-bookworm
ARG VERSION=0.1.0
ARG REVISION=unknown
ARG CREATED=unknown
LABEL org.opencontainers.image.title="kumaco" \
      org.opencontainers.image.description="KUbernetes MAintenance COntroller: maintenance windows from ConfigMaps to node conditions" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.source="https://github.com/kubereboot/kumaco" \
      org.opencontainers.image.documentation="https://github.com/kubereboot/kumaco/blob/main/docs/deploy.md" \
      org.opencontainers.image.base.name="docker.io/library/python:3.11.14-slim-bookworm"
# No package installers or build tools at run time: kumaco's venv has no pip, and the
# base interpreter's pip, setuptools and wheel go too (fewer files, fewer CVE reports).
RUN python3 -m pip uninstall --yes --disable-pip-version-check pip setuptools wheel
COPY --from=builder /opt/kumaco /opt/kumaco
# The bytecode was compiled at install time; the root filesystem is read-only at run
# time, so Python must not try to write any. Logs go straight to stdout/stderr.
ENV PATH=/opt/kumaco/bin:${PATH} \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
# A numeric non-root user (the "nonroot" uid of distroless images) that owns nothing:
# the installed files belong to root and are read-only for kumaco.
USER 65532:65532
# metrics (/metrics) and health probes (/healthz, /readyz)
EXPOSE 8080 8081
# checkov:skip=CKV_DOCKER_2:Kubernetes ignores HEALTHCHECK; the Deployment's liveness and readiness probes call /healthz and /readyz (kustomize/base/deployment.yaml)
ENTRYPOINT ["kumaco", "run"]
