#!/usr/bin/env bash
# Builds the project's tools from the Go module proxy, pinned by hack/versions.env, into a cache outside the
# clone keyed by tool and version, and links them into ./bin. A fresh clone on a machine that already built a
# version is ready in seconds; a new machine pays the cold build once (about 40 minutes on 2 shared cores,
# beside the kind images as CI builds them, measured in December 2026).
#
# Usage: hack/tools.sh [tool ...]   (no argument: every tool)
# Tools: kube-apiserver kube-controller-manager kube-scheduler kubectl etcd kwok helm controller-gen
#        kind ginkgo golangci-lint promtool versitygw fake-gcs-server
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=versions.env
source "$root/hack/versions.env"
cache=${MYSQLFLEET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mysqlfleet}/tools
bin=$root/bin
mkdir -p "$cache" "$bin"
export CGO_ENABLED=0 GOFLAGS=-mod=mod

log() { printf '[tools] %s\n' "$*" >&2; }

# locked KEY CMD... runs CMD holding an exclusive lock on KEY in the cache. CI runs this script twice at once
# (make tools, and hack/kind/images.sh for the node image's control plane): both once built the Kubernetes
# binaries into the same directory, and the second to finish failed on the first's rename. The second now waits,
# then finds the tool built.
locked() {
  local key=$1
  shift
  (flock 9 && "$@") 9>"$cache/.$key.lock"
}

# version_ldflags PKG... stamps the Kubernetes version into the given version packages, so that
# `kube-apiserver --version` and the server's /version (which Helm's kubeVersion checks) report the pin.
version_ldflags() {
  local ld="-s -w" p
  local minor=${KUBE_VERSION#v1.}; minor=${minor%%.*}
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld+=" -X $p.gitVersion=$KUBE_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
    ld+=" -X $p.buildDate=1970-01-01T00:00:00Z"
  done
  printf '%s' "$ld"
}

# kube_wrapper writes a module that requires k8s.io/kubernetes and points each of its ./staging replaces at the
# published module of the same minor version; `go install k8s.io/kubernetes/cmd/...@vX` cannot resolve them.
kube_wrapper() {
  local dir=$1 modfile staging=v0${KUBE_VERSION#v1}
  mkdir -p "$dir"
  modfile=$(cd "$dir" && go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  {
    echo "module mysqlfleet.io/tools/kube"
    echo
    echo "go 1.26"
    echo
    echo "require k8s.io/kubernetes $KUBE_VERSION"
    echo
    echo "replace ("
    sed -n 's#^\s*\(k8s.io/[^ ]*\) => ./staging/.*#\t\1 => \1 '"$staging"'#p' "$modfile"
    echo ")"
  } >"$dir/go.mod"
  cat >"$dir/tools.go" <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubectl/pkg/cmd"
)
GO
  (cd "$dir" && go mod tidy)
}

# build_kube builds every Kubernetes binary that is missing from the cache in one `go build`, so that the
# packages they share compile once.
build_kube() {
  local want=() pkgs=() t out=$cache/kube-$KUBE_VERSION
  for t in "$@"; do [[ -x $out/$t ]] || want+=("$t"); done
  ((${#want[@]})) || return 0
  log "building ${want[*]} $KUBE_VERSION (cold: several minutes)"
  local src=$cache/src/kube-$KUBE_VERSION
  [[ -f $src/go.mod ]] || kube_wrapper "$src"
  for t in "${want[@]}"; do
    case $t in
      kubectl) pkgs+=(k8s.io/kubernetes/cmd/kubectl) ;;
      *) pkgs+=("k8s.io/kubernetes/cmd/$t") ;;
    esac
  done
  mkdir -p "$out.tmp"
  (cd "$src" && go build -trimpath -ldflags "$(version_ldflags)" -o "$out.tmp/" "${pkgs[@]}")
  mkdir -p "$out" && mv "$out.tmp"/* "$out/" && rmdir "$out.tmp"
}

build_etcd() {
  local out=$cache/etcd-$ETCD_VERSION src=$cache/src/etcd-$ETCD_VERSION
  [[ -x $out/etcd ]] && return 0
  log "building etcd $ETCD_VERSION"
  mkdir -p "$src" "$out"
  printf 'module mysqlfleet.io/tools/etcd\n\ngo 1.26\n\nrequire go.etcd.io/etcd/server/v3 %s\n' "$ETCD_VERSION" >"$src/go.mod"
  printf '//go:build tools\n\npackage tools\n\nimport _ "go.etcd.io/etcd/server/v3"\n' >"$src/tools.go"
  (cd "$src" && go mod tidy >/dev/null && go build -trimpath -ldflags "-s -w" -o "$out/etcd.tmp" go.etcd.io/etcd/server/v3)
  mv "$out/etcd.tmp" "$out/etcd"
}

# go_install NAME VERSION PKG [LDFLAGS [KEY-SUFFIX]] installs PKG@VERSION into the cache as NAME; a build with
# extra ldflags gets its own cache key.
go_install() { locked "$1-$2${5:-}" go_install_unlocked "$@"; }
go_install_unlocked() {
  local name=$1 version=$2 pkg=$3 ld="-s -w ${4:-}" out=$cache/$1-$2${5:-}
  [[ -x $out/$name ]] && return 0
  log "building $name $version"
  mkdir -p "$out.tmp"
  GOBIN=$out.tmp go install -trimpath -ldflags "$ld" "$pkg@$version"
  mkdir -p "$out" && mv "$out.tmp"/* "$out/" && rmdir "$out.tmp"
  [[ -x $out/$name ]] || { log "$pkg did not produce $name"; return 1; }
}

# build_promtool builds promtool in the Prometheus module itself, with its own go.mod and go.sum (-mod=readonly):
# `go install` refuses a module with replace directives, and Prometheus has one. GOWORK=off: the module ships a
# go.work naming nested modules that are not part of its zip. remove_all_sd is upstream's tag that leaves the
# cloud service discovery plugins out: `promtool test rules` uses none, and the build is smaller.
build_promtool() {
  local out=$cache/promtool-$PROMETHEUS_VERSION dir
  [[ -x $out/promtool ]] && return 0
  log "building promtool $PROMETHEUS_VERSION (cold: several minutes)"
  dir=$(cd "$cache" && go mod download -json "github.com/prometheus/prometheus@$PROMETHEUS_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  # Prometheus 3.x is tagged v0.3XX.Y in Go module terms: v0.313.5 is Prometheus 3.13.5.
  local v=${PROMETHEUS_VERSION#v0.3}; v=3.$((10#${v%%.*})).${v#*.}
  mkdir -p "$out"
  (cd "$dir" && GOWORK=off GOFLAGS=-mod=readonly go build -trimpath -tags netgo,remove_all_sd \
    -ldflags "-s -w -X github.com/prometheus/common/version.Version=$v -X github.com/prometheus/common/version.Branch=$PROMETHEUS_VERSION" \
    -o "$out/promtool.tmp" ./cmd/promtool)
  mv "$out/promtool.tmp" "$out/promtool"
}

link() { ln -sf "$1" "$bin/$(basename "$1")"; }

# build_object_store builds the object-store servers that internal/backup's tests run as processes: versitygw,
# an S3 gateway whose posix backend keeps buckets as directories, and fake-gcs-server, an emulator of the GCS
# JSON API. Both are plain `go install`s of a pinned version, cached by version like every tool.
build_object_store() {
  case $1 in
    versitygw) go_install versitygw "$VERSITYGW_VERSION" github.com/versity/versitygw/cmd/versitygw &&
      link "$cache/versitygw-$VERSITYGW_VERSION/versitygw" ;;
    fake-gcs-server) go_install fake-gcs-server "$FAKE_GCS_SERVER_VERSION" github.com/fsouza/fake-gcs-server &&
      link "$cache/fake-gcs-server-$FAKE_GCS_SERVER_VERSION/fake-gcs-server" ;;
  esac
}

# kwok_stages writes the stage definitions that make fake nodes Ready and fake Pods run, become Ready, complete
# and go away, taken from the kwok module of the pinned version.
kwok_stages() {
  local out=$cache/kwok-$KWOK_VERSION/kwok-stages.yaml dir f
  [[ -s $out ]] && return 0
  dir=$(cd "$cache" && go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  : >"$out.tmp"
  for f in node/fast/node-initialize.yaml node/heartbeat/node-heartbeat.yaml pod/fast/pod-ready.yaml \
    pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
    { echo "---"; cat "$dir/kustomize/stage/$f"; } >>"$out.tmp"
  done
  mv "$out.tmp" "$out"
}

tools=("$@")
((${#tools[@]})) || tools=(kube-apiserver kube-controller-manager kube-scheduler kubectl etcd kwok helm
  controller-gen kind ginkgo golangci-lint promtool versitygw fake-gcs-server)

kube=()
for t in "${tools[@]}"; do
  case $t in kube-apiserver | kube-controller-manager | kube-scheduler | kubectl) kube+=("$t") ;; esac
done
((${#kube[@]})) && locked "kube-$KUBE_VERSION" build_kube "${kube[@]}"

for t in "${tools[@]}"; do
  case $t in
    kube-apiserver | kube-controller-manager | kube-scheduler | kubectl) link "$cache/kube-$KUBE_VERSION/$t" ;;
    etcd) locked "etcd-$ETCD_VERSION" build_etcd && link "$cache/etcd-$ETCD_VERSION/etcd" ;;
    kwok) go_install kwok "$KWOK_VERSION" sigs.k8s.io/kwok/cmd/kwok && locked "kwok-stages-$KWOK_VERSION" kwok_stages &&
      link "$cache/kwok-$KWOK_VERSION/kwok" && link "$cache/kwok-$KWOK_VERSION/kwok-stages.yaml" ;;
    # Helm's release builds stamp its version and the Kubernetes version it assumes without a cluster (helm
    # template, lint); a plain go install would assume Kubernetes 1.20 and fail the chart's kubeVersion.
    helm) helm_minor=${KUBE_VERSION#v1.}; helm_minor=${helm_minor%%.*}
      go_install helm "$HELM_VERSION" helm.sh/helm/v3/cmd/helm \
        "-X helm.sh/helm/v3/internal/version.version=$HELM_VERSION -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$helm_minor" \
        "-k8s1.$helm_minor" &&
        link "$cache/helm-$HELM_VERSION-k8s1.$helm_minor/helm" ;;
    controller-gen) go_install controller-gen "$CONTROLLER_TOOLS_VERSION" sigs.k8s.io/controller-tools/cmd/controller-gen &&
      link "$cache/controller-gen-$CONTROLLER_TOOLS_VERSION/controller-gen" ;;
    kind) go_install kind "$KIND_VERSION" sigs.k8s.io/kind && link "$cache/kind-$KIND_VERSION/kind" ;;
    ginkgo) go_install ginkgo "$GINKGO_VERSION" github.com/onsi/ginkgo/v2/ginkgo && link "$cache/ginkgo-$GINKGO_VERSION/ginkgo" ;;
    golangci-lint) go_install golangci-lint "$GOLANGCI_LINT_VERSION" github.com/golangci/golangci-lint/v2/cmd/golangci-lint &&
      link "$cache/golangci-lint-$GOLANGCI_LINT_VERSION/golangci-lint" ;;
    promtool) locked "promtool-$PROMETHEUS_VERSION" build_promtool && link "$cache/promtool-$PROMETHEUS_VERSION/promtool" ;;
    versitygw | fake-gcs-server) build_object_store "$t" ;;
    *) log "unknown tool $t"; exit 2 ;;
  esac
done
