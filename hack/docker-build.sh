#!/usr/bin/env bash
# Builds the manager image, with the manager, mysqlfleet-backup and mysqlfleet-member: hack/docker-build.sh IMAGE
# (make docker-build IMG=... runs it).
#
# DOCKER_BUILD_MODE=source compiles the manager in the Dockerfile's builder stage, from GO_IMAGE;
# DOCKER_BUILD_MODE=host compiles it here (static, -trimpath, -s -w, for the engine's architecture) and packs it,
# with this machine's CA certificates, through the Dockerfile's "prebuilt" stage: no registry is needed.
# The default, auto, is source if GO_IMAGE is present locally and host otherwise.
# The final stage is FROM BASE_IMAGE either way (default scratch).
set -euo pipefail
img=${1:?usage: hack/docker-build.sh IMAGE}
cd "$(dirname "$0")/.."
GO_IMAGE=${GO_IMAGE:-golang:1.26}
BASE_IMAGE=${BASE_IMAGE:-scratch}
CA_CERTIFICATES=${CA_CERTIFICATES:-/etc/ssl/certs/ca-certificates.crt}
mode=${DOCKER_BUILD_MODE:-auto}
if [[ $mode == auto ]]; then
  mode=host
  if docker image inspect "$GO_IMAGE" >/dev/null 2>&1; then mode=source; fi
fi

# Docker's legacy builder reads the prebuilt stage's directory even for a source build: it must exist.
rootfs=_out/docker/rootfs
rm -rf "$rootfs"
mkdir -p "$rootfs"

case $mode in
source)
  echo "Compiling the manager in $GO_IMAGE"
  docker build --build-arg GO_IMAGE="$GO_IMAGE" --build-arg BASE_IMAGE="$BASE_IMAGE" -t "$img" .
  ;;
host)
  echo "Compiling the manager on this host ($GO_IMAGE is not present locally)"
  if [[ ! -s $CA_CERTIFICATES ]]; then
    echo "No CA certificates at $CA_CERTIFICATES: set CA_CERTIFICATES to a PEM bundle" >&2
    exit 1
  fi
  arch=$(docker version --format '{{.Server.Arch}}')
  CGO_ENABLED=0 GOOS=linux GOARCH="$arch" go build -trimpath -ldflags="-s -w" -o "$rootfs/manager" ./cmd/manager
  CGO_ENABLED=0 GOOS=linux GOARCH="$arch" go build -trimpath -ldflags="-s -w" -o "$rootfs/mysqlfleet-backup" ./cmd/backup
  CGO_ENABLED=0 GOOS=linux GOARCH="$arch" go build -trimpath -ldflags="-s -w" -o "$rootfs/mysqlfleet-member" ./cmd/member
  install -D -m 0644 "$CA_CERTIFICATES" "$rootfs/etc/ssl/certs/ca-certificates.crt"
  docker build --target prebuilt --build-arg BASE_IMAGE="$BASE_IMAGE" -t "$img" .
  ;;
*)
  echo "DOCKER_BUILD_MODE must be auto, source or host, not $mode" >&2
  exit 1
  ;;
esac
