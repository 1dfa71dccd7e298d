# syntax=docker/dockerfile:1
# gitdeploy's container image: docker build -t gitdeploy:0.1.0 .
#
# Two stages: the package and its dependencies are installed into a virtual environment in the
# first, and only that environment is copied into the final slim image, which runs as a non-root
# user with a numeric UID (so Kubernetes can check runAsNonRoot).

FROM python:3.11-slim-bookworm AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/gitdeploy
WORKDIR /src
COPY pyproject.toml README.md ./
# gitdeploy/manifests/schemas is a symlink to the top-level schemas/ directory.
COPY schemas ./schemas
COPY gitdeploy ./gitdeploy
RUN /opt/gitdeploy/bin/pip install .

FROM python:3.11-slim-bookworm
# git for fetching the config repository, ssh for ssh:// remotes, gpg for commit signature checks.
RUN apt-get update \
    && apt-get install -y --no-install-recommends git openssh-client gnupg ca-certificates \
    && rm -rf /var/lib/apt/lists/*
RUN groupadd --system --gid 10001 gitdeploy \
    && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/gitdeploy --no-create-home \
       --shell /usr/sbin/nologin gitdeploy \
    && install -d -o 10001 -g 10001 -m 0750 /var/lib/gitdeploy
COPY --from=build /opt/gitdeploy /opt/gitdeploy
ENV PATH=/opt/gitdeploy/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/var/lib/gitdeploy \
    GITDEPLOY_STATE_DIR=/var/lib/gitdeploy
WORKDIR /var/lib/gitdeploy
USER 10001:10001
EXPOSE 8080
ENTRYPOINT ["gitdeploy"]
CMD ["--help"]
