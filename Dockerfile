# kumaco's container image: a distroless-style runtime (no shell, no package manager)
# holding one venv, /opt/kumaco, made by hack/image-venv.sh in a Debian builder stage.
#
#   hack/image.sh build                    # buildah on local Debian bases (what the tests run)
#   hack/image.sh build --published        # the defaults below (buildah, or docker build)
#   docker build -t kumaco:0.1.0 --build-arg REVISION="$(git rev-parse HEAD)" .
#
# The base images are build arguments: the defaults are the published images, pinned by
# digest, for real users; the tests pass the bases that `hack/image.sh base` makes from
# Debian's packages with mmdebstrap (no registry needed). One file for both.
#
# Both bases must provide the SAME interpreter at the SAME path, ${PYTHON}: the venv's
# bin/python is a symlink to it and pyvenv.cfg names its directory. Hence the builder is
# Debian (debian:12-slim + python3-venv), not python:3.11-slim, whose CPython lives in
# /usr/local/bin and does not exist in the distroless runtime. The runtime stage runs
# `kumaco --version` with that interpreter, so a mismatch fails the build, not the pod.
#
# Digests as pinned by Renovate in public repositories (docs/deploy.md says where and
# when); debian:12-slim is debian:bookworm-slim. Update them with your digest bot: Renovate
# reads ARG defaults used in FROM.
ARG BUILDER_IMAGE=docker.io/library/debian:12-slim@sha256:7b140f374b289a7c2befc338f42ebe6441b7ea838a042bbd5acbfca6ec875818
ARG RUNTIME_IMAGE=gcr.io/distroless/python3-debian12:nonroot@sha256:7d1042ce588ab97019fe95c24ffca7bc5a82ccdac572511d5e09bda4435c89c5
ARG PYTHON=/usr/bin/python3.11
# checkov:skip=CKV_DOCKER_7:the FROM lines name build arguments whose defaults above are pinned by tag and digest (tests/unit/deploy/test_packaging.py checks them)

# ---------------------------------------------------------------------------- builder
FROM ${BUILDER_IMAGE} AS builder
ARG PYTHON
# No SHELL instruction: buildah ignores it in the OCI format, and no RUN below has a
# pipe (hack/image-venv.sh sets pipefail itself). debian:12-slim lacks python3-venv; the
# local builder base has it, and then apt is not run at all.
# hadolint ignore=DL3008
RUN if ! "${PYTHON}" -c 'import ensurepip, venv' 2>/dev/null; then \
      apt-get update \
      && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3-venv \
      && rm -rf /var/lib/apt/lists/*; \
    fi \
    && "${PYTHON}" -c 'import sys; assert sys.version_info[:2] == (3, 11), sys.version'
WORKDIR /src
# Only what the wheel and the smoke test need (.dockerignore is an allow-list).
COPY pyproject.toml README.md LICENSE ./
COPY kumaco/ kumaco/
COPY kustomize/examples/ kustomize/examples/
COPY hack/image-venv.sh hack/image-venv.sh
# Builds the wheel, installs it into a clean venv at /opt/kumaco (no pip in it) and
# smoke-tests it: the steps the unit tier runs too. Where the network inspects TLS, pass
# its CA as a build secret (hack/image.sh does: --secret id=buildca,src=CA-BUNDLE): it is
# mounted for this step only and never lands in a layer; without it pip uses its own CAs.
RUN --mount=type=secret,id=buildca \
    if [ -s /run/secrets/buildca ]; then export PIP_CERT=/run/secrets/buildca; fi; \
    PYTHON="${PYTHON}" bash hack/image-venv.sh /opt/kumaco

# ---------------------------------------------------------------------------- runtime
# No shell and no package manager here (distroless python3-debian12, or the local
# runtime base): nothing below may need /bin/sh.
FROM ${RUNTIME_IMAGE}
ARG VERSION=0.1.0
ARG REVISION=unknown
ARG CREATED=unknown
ARG RUNTIME_IMAGE
LABEL org.opencontainers.image.title="kumaco" \
      org.opencontainers.image.description="KUbernetes MAintenance COntroller: maintenance windows from ConfigMaps to node conditions" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.source="https://github.com/kubereboot/kumaco" \
      org.opencontainers.image.documentation="https://github.com/kubereboot/kumaco/blob/main/docs/deploy.md" \
      org.opencontainers.image.base.name="${RUNTIME_IMAGE}"
COPY --from=builder /opt/kumaco /opt/kumaco
# The bytecode was compiled at install time; the root filesystem is read-only at run
# time, so Python must not try to write any. Logs go straight to stdout/stderr.
ENV PATH=/opt/kumaco/bin:/usr/local/bin:/usr/bin:/bin \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
# Exec form, no shell: the venv runs on THIS stage's interpreter.
RUN ["/opt/kumaco/bin/kumaco", "--version"]
# A numeric non-root user (the "nonroot" uid of distroless images) that owns nothing:
# the installed files belong to root and are read-only for kumaco.
USER 65532:65532
# metrics (/metrics) and health probes (/healthz, /readyz)
EXPOSE 8080 8081
# checkov:skip=CKV_DOCKER_2:Kubernetes ignores HEALTHCHECK; the Deployment's liveness and readiness probes call /healthz and /readyz (kustomize/base/deployment.yaml)
# Exec form, so SIGTERM reaches kumaco; it replaces the base's entrypoint and command.
ENTRYPOINT ["kumaco", "run"]
