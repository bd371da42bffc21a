#!/usr/bin/env bash
# Installs the few system packages the build and tests use, from Debian, when they are missing: make and git
# for the build, procps (pgrep, pkill) for the test fleet's guardian. Go itself is expected at /usr/local/go or
# on PATH; every other tool is built from the Go module proxy by hack/tools.sh.
set -euo pipefail
need=()
command -v make >/dev/null || need+=(make)
command -v git >/dev/null || need+=(git)
command -v pkill >/dev/null || need+=(procps)
if ((${#need[@]})); then
  if [[ $(id -u) != 0 ]]; then
    echo "install-deps: missing ${need[*]}; run as root or install them" >&2
    exit 1
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
fi
command -v go >/dev/null || [[ -x /usr/local/go/bin/go ]] || { echo "install-deps: Go 1.26 is required" >&2; exit 1; }
