#!/usr/bin/env bash
# Builds, with no container registry, every image the kind tier needs, pinned by hack/versions.env and cached on
# this machine by version and by a hash of their inputs (the scripts and files under hack/kind, and the
# provisioner library test/provisioner):
#
#   mysqlfleet/kind-node:$KUBE_VERSION-<key>   kind's node image: Debian bookworm (debootstrap) with systemd,
#       containerd, runc, iptables/nftables and Debian's CNI plugins; kind's base files copied from the kind module
#       (sigs.k8s.io/kind@$KIND_VERSION in the module cache) at build time; kubelet, kubeadm, kubectl from the
#       k8s.io/kubernetes wrapper module of hack/tools.sh; the control-plane, kube-proxy, etcd, coredns and pause
#       images preloaded into its containerd; as its default CNI (kind installs /kind/manifests/default-cni.yaml),
#       mysqlfleet's pod network agent (hack/kind/net, test/kindnet) instead of kindnetd, which no module serves.
#   mariadb:$KIND_MARIADB_VERSION               MariaDB from Debian's packages, with an entrypoint that honours the
#       official image's environment variables (hack/kind/mariadb/docker-entrypoint.sh).
#   mysqlfleet/kind-local-path:<key>             the storage provisioner of the cloud-named StorageClasses
#       (hack/kind/provisioner, over the library test/provisioner).
#   mysqlfleet/manager:kind                     the manager image (make docker-build), with /manager,
#       /mysqlfleet-backup and /mysqlfleet-member.
#
# Every image is also kept as a docker-archive tarball in $cache/kind/images, which is what `kind load
# image-archive` loads into the clusters; hack/kind/images.env (written here, git-ignored) names them for
# `make kind-up` and the e2e suite.
#
# Usage: hack/kind/images.sh [node|mariadb|provisioner|manager|rootfs ...]   (no argument: all but rootfs, which
# only debootstraps both roots). The node and database images are built as root (debootstrap,
# chroot).
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
here=$root/hack/kind
# shellcheck source=../versions.env
source "$root/hack/versions.env"
cache=${MYSQLFLEET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mysqlfleet}/tools
kcache=$cache/kind
mirror=${KIND_DEBIAN_MIRROR:-http://deb.debian.org/debian}
suite=${KIND_DEBIAN_SUITE:-bookworm}
mkdir -p "$kcache/images" "$kcache/debs"
export CGO_ENABLED=0 GOFLAGS=-mod=mod

log() { printf '[kind-images] %s %s\n' "$(date +%T)" "$*" >&2; }

need_root() { ((EUID == 0)) || { log "the $1 image is built as root (debootstrap, chroot, mounts)"; exit 1; }; }

# Work directories of this run, removed however it ends.
work=()
cleanup() {
  local d
  for d in "${work[@]}"; do
    if mountpoint -q "$d/proc" 2>/dev/null; then umount "$d/proc" || true; fi
    rm -rf "$d"
  done
}
trap cleanup EXIT

# key FILE... is a short hash of the given inputs, plus the pins, so that an image is rebuilt when what makes it
# changes and never otherwise. The inputs name the functions of this script that build the image (declare -f),
# not the whole script, so that a change to one image's recipe rebuilds only that image.
key() {
  { cat "$@"; echo "$KUBE_VERSION $KIND_VERSION $KIND_ETCD_VERSION $KIND_COREDNS_VERSION $suite"; } | sha256sum | cut -c1-12
}

# have_image REF ARCHIVE: the image is in the engine, or is loaded from its archive; false if neither.
have_image() {
  local ref=$1 archive=$2
  docker image inspect "$ref" >/dev/null 2>&1 && [[ -s $archive ]] && return 0
  if [[ -s $archive ]]; then
    log "loading $ref from $archive"
    docker load -i "$archive" >/dev/null && return 0
  fi
  return 1
}

# save REF ARCHIVE writes the image as a docker-archive tarball atomically.
save() {
  docker save "$1" -o "$2.tmp" && mv "$2.tmp" "$2"
}

# prune REPOSITORY ARCHIVE-GLOB CURRENT-REF CURRENT-ARCHIVE: removes the images of REPOSITORY with another tag and
# the archives of other keys, so that rebuilds do not pile up in the cache (an image a container still uses
# stays).
prune() {
  local repo=$1 glob=$2 ref=$3 archive=$4 a r
  for a in $glob; do [[ $a == "$archive" ]] || rm -f "$a"; done
  [[ -n $repo ]] || return 0
  for r in $(docker images --format '{{.Repository}}:{{.Tag}}' "$repo"); do
    [[ $r == "$ref" ]] || docker rmi "$r" >/dev/null 2>&1 || true
  done
}

# drop_previous ID REF removes image ID if REF no longer names it.
drop_previous() {
  [[ -n $1 && $(docker image inspect -f '{{.Id}}' "$2" 2>/dev/null) != "$1" ]] || return 0
  docker rmi "$1" >/dev/null 2>&1 || true
}

# import_dir DIR REF [--change ...]: a single-layer image of DIR's contents.
import_dir() {
  local dir=$1 ref=$2
  shift 2
  tar --numeric-owner -C "$dir" -c . | docker import "$@" - "$ref" >/dev/null
}

# ---------------------------------------------------------------------------------------------------------------
# Debian root filesystems

# need_debootstrap installs Debian's debootstrap when it is missing (as install-deps.sh installs the test
# dependencies), or says how to get it.
need_debootstrap() {
  command -v debootstrap >/dev/null || [[ -x /usr/sbin/debootstrap ]] && return 0
  if command -v apt-get >/dev/null; then
    log "installing debootstrap from Debian"
    apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >&2
    return
  fi
  log "debootstrap is missing: install it (any distribution packages it), or build only the project's images: KIND_IMAGES=\"provisioner manager\" with public node and database images (docs/testing.md, kind tier)"
  return 1
}

# rootfs NAME PACKAGES: a debootstrapped (minbase) Debian root with PACKAGES, trimmed, as a tarball in the cache.
# The .deb files are cached too, so that another flavour or a rebuild downloads only what is new.
rootfs() {
  local name=$1 pkgs=$2 k out dir
  k=$(echo "$suite $mirror $pkgs" | sha256sum | cut -c1-12)
  out=$kcache/rootfs-$name-$suite-$k.tar
  if [[ -s $out ]]; then printf '%s' "$out"; return 0; fi
  need_debootstrap || return 1
  log "debootstrap $suite ($name): $pkgs (cold: a few minutes)"
  dir=$(mktemp -d "$kcache/rootfs-$name.XXXX")
  work+=("$dir")
  debootstrap --variant=minbase --cache-dir="$kcache/debs" --include="$pkgs" "$suite" "$dir" "$mirror" >&2 ||
    { tail -n 30 "$dir/debootstrap/debootstrap.log" >&2 || true; rm -rf "$dir"; return 1; }
  # Trim what no container reads: documentation, manuals, locales, apt's lists and caches.
  rm -rf "$dir"/usr/share/{doc,man,info,lintian,linda} "$dir"/var/cache/apt/* "$dir"/var/lib/apt/lists/* \
    "$dir"/var/log/* "$dir"/var/cache/debconf/*-old
  find "$dir/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name 'C.*' -exec rm -rf {} + 2>/dev/null || true
  tar --numeric-owner -C "$dir" -cf "$out.tmp" . && mv "$out.tmp" "$out"
  rm -rf "$dir"
  printf '%s' "$out"
}

# unpack TARBALL DIR: a fresh directory with the root filesystem, for assembling one image.
unpack() {
  tar --numeric-owner -C "$2" -xf "$1"
}

# ---------------------------------------------------------------------------------------------------------------
# Kubernetes binaries: the same wrapper module as hack/tools.sh (its control-plane binaries come from there), with
# the node binaries added: kubelet, kubeadm, kube-proxy.

kube_bin() { printf '%s' "$cache/kube-$KUBE_VERSION"; }
kube_node_bin() { printf '%s' "$cache/kube-node-$KUBE_VERSION"; }

version_ldflags() {
  local ld="-s -w" p minor=${KUBE_VERSION#v1.}
  minor=${minor%%.*}
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld+=" -X $p.gitVersion=$KUBE_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
    ld+=" -X $p.buildDate=1970-01-01T00:00:00Z"
  done
  printf '%s' "$ld"
}

build_kube() {
  "$root/hack/tools.sh" kube-apiserver kube-controller-manager kube-scheduler kubectl kind >&2
  local out src=$cache/src/kube-$KUBE_VERSION
  out=$(kube_node_bin)
  [[ -x $out/kubelet && -x $out/kubeadm && -x $out/kube-proxy ]] && return 0
  log "building kubelet, kubeadm, kube-proxy $KUBE_VERSION in the wrapper module $src (cold: several minutes)"
  mkdir -p "$out.tmp"
  (cd "$src" && go build -trimpath -ldflags "$(version_ldflags)" -o "$out.tmp/" \
    k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kubeadm k8s.io/kubernetes/cmd/kube-proxy)
  mkdir -p "$out" && mv "$out.tmp"/* "$out/" && rmdir "$out.tmp"
}

# wrapper_build NAME VERSION MODULE: builds MODULE@VERSION, whose module root is package main and which has replace
# directives that `go install` refuses, from a wrapper module that requires it (as tools.sh builds etcd), into
# $cache/NAME-VERSION/NAME.
wrapper_build() {
  local name=$1 version=$2 mod=$3 out=$cache/$1-$2 src=$cache/src/$1-$2
  [[ -x $out/$name ]] && return 0
  log "building $name $version"
  mkdir -p "$src" "$out"
  printf 'module mysqlfleet.io/tools/%s\n\ngo 1.26\n\nrequire %s %s\n' "$name" "$mod" "$version" >"$src/go.mod"
  printf '//go:build tools\n\npackage tools\n\nimport _ "%s"\n' "$mod" >"$src/tools.go"
  (cd "$src" && go mod tidy >/dev/null && go build -trimpath -ldflags "-s -w" -o "$out/$name.tmp" "$mod")
  mv "$out/$name.tmp" "$out/$name"
}

# coredns_build: CoreDNS $KIND_COREDNS_VERSION with only the plugins of the Corefile kubeadm writes (errors,
# health, ready, kubernetes, prometheus, forward, cache, loop, reload, loadbalance) and log, from a main of our own
# over coremain, the way CoreDNS documents builds with a chosen plugin set. The full set pulls in every cloud's
# DNS SDK (route53, clouddns, azure) and was most of a cold node-image build on two shared cores. The plugins'
# order comes from CoreDNS's own directive list (core/dnsserver), not from these imports.
coredns_build() {
  local version=$KIND_COREDNS_VERSION mod=github.com/coredns/coredns p
  local out=$cache/coredns-min-$version src=$cache/src/coredns-min-$version
  [[ -x $out/coredns ]] && return 0
  log "building coredns $version (kubeadm's plugins only)"
  mkdir -p "$src" "$out"
  printf 'module mysqlfleet.io/tools/coredns\n\ngo 1.26\n\nrequire %s %s\n' "$mod" "$version" >"$src/go.mod"
  {
    printf 'package main\n\nimport (\n'
    for p in cache errors forward health kubernetes loadbalance log loop metrics ready reload; do
      printf '\t_ "%s/plugin/%s"\n' "$mod" "$p"
    done
    printf '\n\t"%s/coremain"\n)\n\nfunc main() { coremain.Run() }\n' "$mod"
  } >"$src/main.go"
  (cd "$src" && go mod tidy >/dev/null && go build -trimpath -ldflags "-s -w" -o "$out/coredns.tmp" .)
  mv "$out/coredns.tmp" "$out/coredns"
}

# ---------------------------------------------------------------------------------------------------------------
# Images preloaded into the node: single-layer images of static binaries, tagged as kubeadm asks for them.

# copy_with_libs ROOTFS DEST BIN...: copies each binary of ROOTFS and the shared libraries it links into DEST, so
# that a tool such as nft runs in an otherwise empty image.
copy_with_libs() {
  local rootfs=$1 dest=$2 b l
  shift 2
  for b in "$@"; do
    install -D -m 0755 "$rootfs$b" "$dest$b"
    for l in $(chroot "$rootfs" ldd "$b" | grep -o '/[^ ]*'); do
      [[ -e $dest$l ]] || install -D "$(readlink -f "$rootfs$l")" "$dest$l"
    done
  done
}

# control_plane_images ROOTFS OUTDIR: writes a docker-archive tarball for each image kubeadm lists, into OUTDIR.
control_plane_images() {
  local rootfs=$1 outdir=$2 img name tag dir t
  local kadm
  kadm=$(kube_node_bin)/kubeadm
  mkdir -p "$outdir"
  coredns_build
  wrapper_build etcd "$KIND_ETCD_VERSION" go.etcd.io/etcd/server/v3
  # pause: a static Go program of ours (hack/kind/pause), the sandbox of every Pod.
  go build -C "$root" -trimpath -ldflags "-s -w" -o "$outdir/pause.bin" ./hack/kind/pause
  for img in $("$kadm" config images list --kubernetes-version "$KUBE_VERSION" 2>/dev/null) "$KIND_SANDBOX_IMAGE"; do
    name=${img##*/}; tag=${name#*:}; name=${name%%:*}
    # The images hold exactly the versions kubeadm names: a new Kubernetes pin must move these pins too.
    case $name:$tag in
      etcd:*) [[ $tag == "${KIND_ETCD_VERSION#v}-0" ]] || { log "kubeadm wants etcd $tag: set KIND_ETCD_VERSION"; return 1; } ;;
      coredns:*) [[ $tag == "$KIND_COREDNS_VERSION" ]] || { log "kubeadm wants coredns $tag: set KIND_COREDNS_VERSION"; return 1; } ;;
    esac
    dir=$(mktemp -d "$kcache/work.XXXX")
    work+=("$dir")
    mkdir -p "$dir/usr/local/bin" "$dir/tmp" "$dir/etc"
    chmod 1777 "$dir/tmp"
    printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n' >"$dir/etc/passwd"
    printf 'root:x:0:\nnogroup:x:65534:\n' >"$dir/etc/group"
    local entry=()
    case $name in
      kube-apiserver | kube-controller-manager | kube-scheduler) install -m 0755 "$(kube_bin)/$name" "$dir/usr/local/bin/" ;;
      kube-proxy)
        install -m 0755 "$(kube_node_bin)/kube-proxy" "$dir/usr/local/bin/"
        # kube-proxy programs nftables through the nft binary and cleans up after iptables modes with iptables.
        copy_with_libs "$rootfs" "$dir" /usr/sbin/nft /usr/sbin/xtables-nft-multi /usr/sbin/xtables-legacy-multi \
          /usr/sbin/conntrack
        for t in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore; do
          ln -sf xtables-nft-multi "$dir/usr/sbin/$t"
        done
        entry=(--change 'ENTRYPOINT ["/usr/local/bin/kube-proxy"]')
        ;;
      etcd) install -m 0755 "$cache/etcd-$KIND_ETCD_VERSION/etcd" "$dir/usr/local/bin/" ;;
      coredns)
        install -m 0755 "$cache/coredns-min-$KIND_COREDNS_VERSION/coredns" "$dir/coredns"
        entry=(--change 'ENTRYPOINT ["/coredns"]')
        ;;
      pause)
        install -m 0755 "$outdir/pause.bin" "$dir/pause"
        entry=(--change 'ENTRYPOINT ["/pause"]' --change 'USER 65535:65535')
        ;;
      *) log "kubeadm asks for an image this script does not know: $img"; return 1 ;;
    esac
    import_dir "$dir" "$img" --change 'ENV PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin' "${entry[@]}"
    rm -rf "$dir"
    save "$img" "$outdir/$name-$tag.tar"
    docker rmi "$img" >/dev/null
  done
  rm -f "$outdir/pause.bin"
}

# kind_net_image OUTDIR: the pod network agent (hack/kind/net) as mysqlfleet/kind-net:preloaded, which the
# default CNI manifest names with imagePullPolicy Never: it exists only inside the node image, and changes with it.
kind_net_image() {
  local outdir=$1 dir
  dir=$(mktemp -d "$kcache/work.XXXX")
  work+=("$dir")
  go build -C "$root" -trimpath -ldflags "-s -w" -o "$dir/mysqlfleet-kind-net" ./hack/kind/net
  import_dir "$dir" mysqlfleet/kind-net:preloaded --change 'ENTRYPOINT ["/mysqlfleet-kind-net"]'
  rm -rf "$dir"
  save mysqlfleet/kind-net:preloaded "$outdir/kind-net.tar"
  docker rmi mysqlfleet/kind-net:preloaded >/dev/null
}

# preload ROOTFS ARCHIVE...: imports the archives into the node root's containerd (namespace k8s.io, as the CRI
# plugin reads it), with a containerd of the node started in a chroot; unpacking waits for first use.
preload() {
  local rootfs=$1 a pid state
  shift
  state=/run/mysqlfleet-kind-build-$$
  mkdir -p "$rootfs/proc" "$rootfs$state"
  mount -t proc proc "$rootfs/proc"
  cat >"$rootfs$state/config.toml" <<EOF
version = 2
root = "/var/lib/containerd"
state = "$state/state"
[grpc]
  address = "$state/containerd.sock"
[plugins."io.containerd.grpc.v1.cri"]
  disable = true
EOF
  chroot "$rootfs" /usr/bin/containerd --config "$state/config.toml" >"$kcache/preload-containerd.log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do [[ -S $rootfs$state/containerd.sock ]] && break; sleep 0.2; done
  for a in "$@"; do
    chroot "$rootfs" /usr/bin/ctr --address "$state/containerd.sock" -n k8s.io images import \
      --no-unpack --digests --all-platforms - <"$a" >&2
  done
  chroot "$rootfs" /usr/bin/ctr --address "$state/containerd.sock" -n k8s.io images ls -q >&2
  kill "$pid"; wait "$pid" || true
  umount "$rootfs/proc"
  rm -rf "${rootfs:?}$state"
}

# ---------------------------------------------------------------------------------------------------------------
# The node image

NODE_PACKAGES=systemd,systemd-sysv,dbus,containerd,runc,containernetworking-plugins,iptables,nftables,conntrack,ebtables,iproute2,ethtool,util-linux,mount,kmod,libseccomp2,pigz,e2fsprogs,jq,procps,ca-certificates,socat,bash,findutils

node_image() {
  local kinddir k ref archive tarball dir
  kinddir=$(cd "$cache" && go mod download -json "sigs.k8s.io/kind@$KIND_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  k=$(key <(declare -f node_image control_plane_images kind_net_image preload copy_with_libs import_dir rootfs wrapper_build coredns_build) \
    "$here"/node/* "$root/hack/kind/pause/main.go" "$here"/net/* "$root"/test/kindnet/*.go "$root/go.sum" <(echo "$NODE_PACKAGES"))
  ref=mysqlfleet/kind-node:$KUBE_VERSION-$k
  archive=$kcache/images/kind-node-$KUBE_VERSION-$k.tar
  NODE_IMAGE=$ref
  if have_image "$ref" "$archive"; then log "node image $ref is cached"; return 0; fi
  build_kube
  need_root node
  tarball=$(rootfs node "$NODE_PACKAGES")
  dir=$(mktemp -d "$kcache/work.XXXX")
  work+=("$dir")
  unpack "$tarball" "$dir"
  log "assembling the node image $ref"

  # kind's base image files, from the kind module of the pinned version (Apache-2.0; copied, never committed).
  local f=$kinddir/images/base/files
  install -m 0755 "$f"/usr/local/bin/* "$dir/usr/local/bin/"
  mkdir -p "$dir/kind/bin" "$dir/LICENSES" "$dir/etc/containerd" "$dir/etc/systemd/system/kubelet.service.d"
  install -m 0755 "$f"/kind/bin/* "$dir/kind/bin/"
  install -m 0644 "$f"/kind/README.txt "$dir/kind/"
  install -m 0644 "$f"/LICENSES/* "$dir/LICENSES/"
  install -m 0644 "$f"/etc/crictl.yaml "$dir/etc/"
  install -m 0644 "$f"/etc/containerd/* "$dir/etc/containerd/"
  install -m 0644 "$f"/etc/default/* "$dir/etc/default/"
  install -m 0644 "$f"/etc/sysctl.d/* "$dir/etc/sysctl.d/"
  install -m 0644 "$f"/etc/systemd/system/*.service "$f"/etc/systemd/system/*.slice "$dir/etc/systemd/system/"
  install -m 0644 "$f"/etc/systemd/system/kubelet.service.d/* "$dir/etc/systemd/system/kubelet.service.d/"
  # What kind's base Dockerfile does after installing its packages.
  find "$dir/lib/systemd/system/sysinit.target.wants/" -name systemd-tmpfiles-setup.service -delete
  rm -f "$dir"/lib/systemd/system/multi-user.target.wants/* "$dir"/etc/systemd/system/*.wants/* \
    "$dir"/lib/systemd/system/local-fs.target.wants/* "$dir"/lib/systemd/system/sockets.target.wants/*udev* \
    "$dir"/lib/systemd/system/sockets.target.wants/*initctl* "$dir"/lib/systemd/system/basic.target.wants/*
  echo "ReadKMsg=no" >>"$dir/etc/systemd/journald.conf"
  ln -sf /usr/lib/systemd/systemd "$dir/sbin/init"
  chroot "$dir" systemctl enable kubelet.service containerd.service undo-mount-hacks.service >&2
  chroot "$dir" systemctl mask systemd-binfmt.service >&2
  mkdir -p "$dir/etc/kubernetes/manifests"
  # Debian installs containerd and its shim in /usr/bin, runc in /usr/sbin; kind's units name /usr/local/bin.
  ln -sf /usr/bin/containerd "$dir/usr/local/bin/containerd"
  ln -sf /usr/bin/ctr "$dir/usr/local/bin/ctr"
  chroot "$dir" sh -c 'ctr oci spec | jq ".hooks.createContainer[.hooks.createContainer|length] |= . + {\"path\": \"/kind/bin/mount-product-files.sh\"}" | jq "del(.process.rlimits)" > /etc/containerd/cri-base.json'
  # Debian's CNI plugins, where kubelet and containerd look for them; the configuration is the agent's to write
  # (each node's own pod range), and its DaemonSet is the manifest kind installs as the default CNI.
  mkdir -p "$dir/opt/cni/bin" "$dir/etc/cni/net.d" "$dir/kind/manifests"
  for p in "$dir"/usr/lib/cni/*; do ln -sf "/usr/lib/cni/$(basename "$p")" "$dir/opt/cni/bin/"; done
  install -m 0644 "$here/net/default-cni.yaml" "$dir/kind/manifests/default-cni.yaml"
  # Kubernetes.
  install -m 0755 "$(kube_node_bin)/kubelet" "$(kube_node_bin)/kubeadm" "$(kube_bin)/kubectl" "$dir/usr/bin/"
  echo "$KUBE_VERSION" >"$dir/kind/version"
  # mysqlfleet's entry hook and the adapter's pieces (used only where the node lacks CAP_SYS_RESOURCE).
  install -m 0755 "$here/node/entry" "$here/node/pin-host-sysctls" "$dir/usr/local/bin/"
  mv "$dir/usr/local/bin/entry" "$dir/usr/local/bin/mysqlfleet-node-entry"

  local imgdir=$kcache/work-images-$k
  work+=("$imgdir")
  control_plane_images "$dir" "$imgdir"
  kind_net_image "$imgdir"
  preload "$dir" "$imgdir"/*.tar
  rm -rf "$imgdir"

  import_dir "$dir" "$ref-rootfs" --change 'ENV container=docker' \
    --change "LABEL io.mysqlfleet.kind.key=$k" \
    --change 'ENTRYPOINT ["/usr/local/bin/mysqlfleet-node-entry", "/sbin/init"]'
  rm -rf "$dir"
  # docker import cannot set a stop signal; systemd stops cleanly on SIGRTMIN+3. A build that adds only this
  # setting needs no registry.
  printf 'FROM %s\nSTOPSIGNAL SIGRTMIN+3\n' "$ref-rootfs" | docker build -q -t "$ref" - >/dev/null
  docker rmi "$ref-rootfs" >/dev/null
  save "$ref" "$archive"
  prune mysqlfleet/kind-node "$kcache/images/kind-node-*.tar" "$ref" "$archive"
  log "node image $ref built ($(du -h "$archive" | cut -f1))"
}

# ---------------------------------------------------------------------------------------------------------------
# The database image

# mariadb-backup: the physical backups of the backup agent sidecar (the official images ship it too).
MARIADB_PACKAGES=mariadb-server,mariadb-client,mariadb-backup,ca-certificates,procps,gzip,tzdata

mariadb_image() {
  local k ref archive tarball dir
  k=$(key <(declare -f mariadb_image import_dir rootfs) "$here"/mariadb/* <(echo "$MARIADB_PACKAGES"))
  ref=mariadb:$KIND_MARIADB_VERSION
  archive=$kcache/images/mariadb-$KIND_MARIADB_VERSION-$k.tar
  MARIADB_ARCHIVE=$archive MARIADB_IMAGE=$ref
  # The tag alone is not enough: a public mariadb:10.11 may be present; ours is labelled with its key.
  if [[ $(docker image inspect -f '{{index .Config.Labels "io.mysqlfleet.kind.key"}}' "$ref" 2>/dev/null) == "$k" && -s $archive ]]; then
    log "database image $ref is cached"; return 0
  fi
  # The tag moves to this build: the image it named before is dropped unless a container uses it.
  local previous
  previous=$(docker image inspect -f '{{.Id}}' "$ref" 2>/dev/null || true)
  if [[ -s $archive ]]; then
    log "loading $ref from $archive"
    docker load -i "$archive" >/dev/null
    drop_previous "$previous" "$ref"
    return 0
  fi
  need_root database
  tarball=$(rootfs mariadb "$MARIADB_PACKAGES")
  dir=$(mktemp -d "$kcache/work.XXXX")
  work+=("$dir")
  unpack "$tarball" "$dir"
  log "assembling the database image $ref"
  local v
  v=$(chroot "$dir" dpkg-query -W -f '${Version}' mariadb-server)
  [[ $v == 1:$KIND_MARIADB_VERSION.* ]] || { log "Debian's mariadb-server is $v, not $KIND_MARIADB_VERSION"; return 1; }
  # The official images' mysql user and group are 999; the StatefulSet runs as 999 from the start.
  chroot "$dir" sh -ec 'groupmod -g 999 mysql && usermod -u 999 -g 999 mysql'
  rm -rf "$dir/var/lib/mysql" "$dir/run/mysqld"
  mkdir -p "$dir/var/lib/mysql" "$dir/run/mysqld" "$dir/docker-entrypoint-initdb.d" "$dir/etc/mysql/conf.d"
  chown 999:999 "$dir/var/lib/mysql" "$dir/run/mysqld"
  chmod 1777 "$dir/run/mysqld"
  ln -sfn /run/mysqld "$dir/var/run/mysqld" 2>/dev/null || true
  install -m 0644 "$here/mariadb/my.cnf" "$dir/etc/mysql/my.cnf"
  install -m 0644 "$here/mariadb/50-server.cnf" "$dir/etc/mysql/mariadb.conf.d/50-server.cnf"
  install -m 0755 "$here/mariadb/docker-entrypoint.sh" "$dir/usr/local/bin/docker-entrypoint.sh"
  import_dir "$dir" "$ref" \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' --change 'ENV LANG=C.UTF-8' \
    --change 'VOLUME /var/lib/mysql' --change 'EXPOSE 3306' \
    --change "LABEL io.mysqlfleet.kind.key=$k io.mysqlfleet.kind.source=debian-$suite-mariadb-server-$v" \
    --change 'ENTRYPOINT ["docker-entrypoint.sh"]' --change 'CMD ["mariadbd"]'
  rm -rf "$dir"
  save "$ref" "$archive"
  prune "" "$kcache/images/mariadb-*.tar" "$ref" "$archive"
  drop_previous "$previous" "$ref"
  log "database image $ref built ($(du -h "$archive" | cut -f1))"
}

# ---------------------------------------------------------------------------------------------------------------
# The storage provisioner and the manager

provisioner_image() {
  local k ref archive dir
  k=$(key <(declare -f provisioner_image import_dir) "$here"/provisioner/*.go "$root"/test/provisioner/*.go "$root/go.sum")
  ref=mysqlfleet/kind-local-path:$k
  archive=$kcache/images/kind-local-path-$k.tar
  PROVISIONER_IMAGE=$ref PROVISIONER_ARCHIVE=$archive
  if have_image "$ref" "$archive"; then log "provisioner image $ref is cached"; return 0; fi
  dir=$(mktemp -d "$kcache/work.XXXX")
  work+=("$dir")
  go build -C "$root" -trimpath -ldflags "-s -w" -o "$dir/local-path-provisioner" ./hack/kind/provisioner
  import_dir "$dir" "$ref" --change 'ENTRYPOINT ["/local-path-provisioner"]'
  rm -rf "$dir"
  save "$ref" "$archive"
  prune mysqlfleet/kind-local-path "$kcache/images/kind-local-path-*.tar" "$ref" "$archive"
}

# The manager image is the project's own, rebuilt every time (it is the code under test); make docker-build
# compiles it on this host when no Go image is present.
manager_image() {
  MANAGER_IMAGE=${KIND_MANAGER_IMAGE:-mysqlfleet/manager:kind}
  MANAGER_ARCHIVE=$kcache/images/manager-kind.tar
  log "building the manager image $MANAGER_IMAGE"
  (cd "$root" && hack/docker-build.sh "$MANAGER_IMAGE" >&2)
  save "$MANAGER_IMAGE" "$MANAGER_ARCHIVE"
}

# ---------------------------------------------------------------------------------------------------------------

# main is called on the script's last line, so that bash has read the whole script before running any of it.
main() {
  local what=("$@") w start env_file line k
  ((${#what[@]})) || what=(node mariadb provisioner manager)
  start=$SECONDS
  # Every image is built into, or loaded from its archive into, a Docker engine: say so plainly when none answers.
  if ! docker info >/dev/null 2>&1; then
    log "no Docker engine answers ('docker info' fails): the kind tier needs one; start it, or run as a user allowed to use it"
    exit 1
  fi
  for w in "${what[@]}"; do
    case $w in
      node) node_image ;;
      mariadb) mariadb_image ;;
      provisioner) provisioner_image ;;
      manager) manager_image ;;
      # Two commands, not one && list: set -e does not stop at a failure before the last command of such a list,
      # and a failed debootstrap must fail the run.
      rootfs)
        rootfs node "$NODE_PACKAGES" >/dev/null
        rootfs mariadb "$MARIADB_PACKAGES" >/dev/null
        ;;
      *) log "unknown image $w"; exit 2 ;;
    esac
  done

  # What kind-up and the e2e suite read: the images and their archives (only those built in this run are written).
  env_file=$here/images.env
  {
    echo "# Written by hack/kind/images.sh on $(date -u +%FT%TZ); not committed."
    [[ -n ${NODE_IMAGE:-} ]] && echo "KIND_NODE_IMAGE=$NODE_IMAGE"
    [[ -n ${MARIADB_IMAGE:-} ]] && echo "KIND_MARIADB_IMAGE=$MARIADB_IMAGE" && echo "KIND_MARIADB_ARCHIVE=$MARIADB_ARCHIVE"
    [[ -n ${PROVISIONER_IMAGE:-} ]] && echo "KIND_PROVISIONER_IMAGE=$PROVISIONER_IMAGE" && echo "KIND_PROVISIONER_ARCHIVE=$PROVISIONER_ARCHIVE"
    [[ -n ${MANAGER_IMAGE:-} ]] && echo "KIND_MANAGER_IMAGE=$MANAGER_IMAGE" && echo "KIND_MANAGER_ARCHIVE=$MANAGER_ARCHIVE"
  } >"$env_file.tmp"
  # Keep the entries of images not built in this run.
  if [[ -f $env_file ]]; then
    while IFS= read -r line; do
      k=${line%%=*}
      [[ $line == \#* || -z $line ]] && continue
      grep -q "^$k=" "$env_file.tmp" || echo "$line" >>"$env_file.tmp"
    done <"$env_file"
  fi
  mv "$env_file.tmp" "$env_file"
  log "done in $((SECONDS - start)) s: $env_file"
}

main "$@"
exit
