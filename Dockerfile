# The manager image: static binaries on an empty base (FROM scratch plus CA certificates), run as 65532: the
# manager (the entrypoint); /mysqlfleet-backup, the backup runner, which a backup Job's init container copies
# into the database image (it is static, so it runs on any Linux image) to run that image's dump tool; and
# /mysqlfleet-member, the member controller, which runs in each member from this same image (command
# /mysqlfleet-member), so that a member runs exactly the release the hub runs.
#
#   docker build -t mysqlfleet/manager:dev .
#       compiles the manager in GO_IMAGE; needs GO_IMAGE locally or from a registry.
#   docker build --target prebuilt -t mysqlfleet/manager:dev .
#       packs a manager compiled on the host, from _out/docker/rootfs; needs no registry at all.
#
# make docker-build (hack/docker-build.sh) picks one: the first if GO_IMAGE is present locally, else the second.
# Base images are build arguments, e.g. --build-arg BASE_IMAGE=gcr.io/distroless/static-debian12:nonroot.
#
# The order of the stages matters: Docker's legacy builder (no BuildKit) builds every stage up to the target, so
# "prebuilt" comes first and a --target prebuilt build never needs GO_IMAGE. A source build through the legacy
# builder passes through "prebuilt" too, which needs _out/docker/rootfs to exist (make docker-build makes it).

ARG GO_IMAGE=golang:1.26
ARG BASE_IMAGE=scratch

# The binaries compiled on the host: _out/docker/rootfs holds /manager, /mysqlfleet-backup, /mysqlfleet-member
# and /etc/ssl/certs/ca-certificates.crt.
FROM ${BASE_IMAGE} AS prebuilt
COPY _out/docker/rootfs/ /
USER 65532:65532
HEALTHCHECK --interval=30s --timeout=10s CMD ["/manager", "--probe=http://127.0.0.1:8081/healthz"]
ENTRYPOINT ["/manager"]

FROM ${GO_IMAGE} AS builder
# Set by BuildKit for the platform being built; empty under the legacy builder, where Go builds for the host.
ARG TARGETOS
ARG TARGETARCH
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags="-s -w" -o /out/manager ./cmd/manager
RUN CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags="-s -w" -o /out/mysqlfleet-backup ./cmd/backup
RUN CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags="-s -w" -o /out/mysqlfleet-member ./cmd/member

FROM ${BASE_IMAGE} AS manager
COPY --from=builder /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=builder /out/manager /manager
COPY --from=builder /out/mysqlfleet-backup /mysqlfleet-backup
COPY --from=builder /out/mysqlfleet-member /mysqlfleet-member
USER 65532:65532
HEALTHCHECK --interval=30s --timeout=10s CMD ["/manager", "--probe=http://127.0.0.1:8081/healthz"]
ENTRYPOINT ["/manager"]
