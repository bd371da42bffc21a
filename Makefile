# mysqlfleet: make help lists the targets.
SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
include hack/versions.env

BIN := $(CURDIR)/bin
CONTROLLER_GEN := $(BIN)/controller-gen
# envtest and the test fleet find kube-apiserver, etcd and the rest here.
export KUBEBUILDER_ASSETS := $(BIN)
export MYSQLFLEET_BIN := $(BIN)
# The race detector is on for every test run: the reconciler fans out across members in goroutines.
GO_TEST_FLAGS ?= -race -count=1 -timeout=40m
IMG ?= mysqlfleet/manager:dev

# Binaries a test run needs: control planes for hub and members, kwok for fake nodes, promtool for the chart's
# alert tests, an S3 server (versitygw) and a GCS emulator (fake-gcs-server) for the backup tests.
TEST_TOOLS := kube-apiserver etcd kube-controller-manager kube-scheduler kwok kubectl promtool versitygw fake-gcs-server

.DEFAULT_GOAL := help

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: tools
tools: ## Build every pinned tool into ./bin (cached in ~/.cache/mysqlfleet by version).
	hack/tools.sh

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate the CRD and the manager's hub RBAC from markers, and copy both into the chart.
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=mysqlfleet-manager paths="./controllers/mysqlcluster/...;./cmd/manager/..." output:rbac:artifacts:config=config/rbac
	go run ./hack/chartgen -crds config/crd/bases -rbac config/rbac/role.yaml -chart charts/mysqlfleet

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deepcopy and apply configurations.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt applyconfiguration:headerFile=hack/boilerplate.go.txt paths=./api/...

.PHONY: check-generate
check-generate: manifests generate ## Fail if generated files differ from what is committed.
	git diff --exit-code -- api config charts || { echo "generated files are stale: run make manifests generate"; exit 1; }
	test -z "$$(git ls-files --others --exclude-standard -- api config charts)" || { git ls-files --others --exclude-standard -- api config charts; echo "untracked generated files"; exit 1; }

.PHONY: fmt
fmt: ## Run gofmt on the code.
	gofmt -w $$(git ls-files '*.go')

.PHONY: vet
vet: ## Run go vet (the e2e suite too).
	go vet ./...
	go vet -tags e2e ./e2e/...

.PHONY: lint
lint: $(BIN)/golangci-lint ## Run golangci-lint (pinned), plus gofmt.
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(BIN)/golangci-lint run ./...

##@ Test

.PHONY: deps
deps: ## Install the Debian packages the build and tests use, when missing (make, git, procps, MariaDB 10.11).
	hack/install-deps.sh

.PHONY: test-tools
test-tools:
	hack/tools.sh $(TEST_TOOLS) controller-gen

.PHONY: test
test: deps test-tools check-generate vet ## Install packages and build tools, check generated files, vet, run every test against real API servers and MariaDB servers, then e2e.
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@# The failures are repeated at the end: a CI log is read from its tail, where a failing test's own lines are long gone.
	go test $(GO_TEST_FLAGS) ./... 2>&1 | tee $(BIN)/test.log || { echo "== failed (from $(BIN)/test.log) =="; \
		grep -E -- '^\s*--- FAIL|^FAIL|^panic:|^\s+\S+_test\.go:[0-9]+:' $(BIN)/test.log | head -80; exit 1; }
	$(MAKE) test-e2e

.PHONY: test-e2e
test-e2e: test-tools ## Run the multi-cluster e2e suite (Ginkgo) on the local fleet from clusters/, then make demo's tour.
	go test -tags e2e ./e2e/ -count=1 -timeout 40m -ginkgo.v
	go test -tags e2e ./hack/fleet/ -count=1 -timeout 30m -v

.PHONY: helm-lint
helm-lint: ## Lint and render the chart with the pinned helm (go test ./charts/... checks it in depth).
	hack/tools.sh helm
	$(BIN)/helm lint --strict --kube-version $(KUBE_VERSION) charts/mysqlfleet
	$(BIN)/helm template mysqlfleet charts/mysqlfleet --namespace mysqlfleet-system --kube-version $(KUBE_VERSION) >/dev/null

##@ Build

.PHONY: build
build: ## Build the manager, the CLI, the member controller and the backup runner into ./bin.
	CGO_ENABLED=0 go build -trimpath -o $(BIN)/manager ./cmd/manager
	CGO_ENABLED=0 go build -trimpath -o $(BIN)/mysqlfleet ./cmd/mysqlfleet
	CGO_ENABLED=0 go build -trimpath -o $(BIN)/mysqlfleet-member ./cmd/member
	CGO_ENABLED=0 go build -trimpath -o $(BIN)/mysqlfleet-backup ./cmd/backup

.PHONY: run
run: build ## Run the manager against the hub in $KUBECONFIG.
	$(BIN)/manager --leader-elect=false

GO_IMAGE ?= golang:1.26
BASE_IMAGE ?= scratch
.PHONY: docker-build
docker-build: ## Build the manager image $(IMG): compiled in GO_IMAGE if present locally, else on this host (no registry needed).
	GO_IMAGE=$(GO_IMAGE) BASE_IMAGE=$(BASE_IMAGE) hack/docker-build.sh $(IMG)

##@ Benchmark

BENCH_FLAGS ?=
.PHONY: bench
bench: test-tools ## Run the fleet benchmark (hub + 10 members, 100 MySQLClusters); figures in bench/results/.
	go run ./bench $(BENCH_FLAGS)

FAILOVER_FLAGS ?= -runs=10
.PHONY: bench-failover
bench-failover: deps test-tools ## Time failover (kill -9, frozen primary) and switchover to the first write through <name>-primary on real MariaDB servers; figures in bench/results/failover-*.json.
	go test -run '^$$' -bench . -benchtime 1x -timeout 60m ./bench/failover -args $(FAILOVER_FLAGS)

.PHONY: bench-docs
bench-docs: ## Regenerate the tables of docs/benchmarks.md from bench/results/*.json (go test ./bench checks them).
	go run ./bench -docs docs/benchmarks.md -readme README.md

BACKUP_FLAGS ?= -runs=3
.PHONY: bench-backup
bench-backup: deps ## Time the backup runner against `mariadb-dump | gzip`, and its physical backups against `mariadb-backup | zstd` (and the restores), on a database of 1.1 GiB on real MariaDB; figures in bench/results/backup-*.json and physical-*.json.
	go test -run '^$$' -bench . -benchtime 1x -timeout 90m ./bench/backup -args $(BACKUP_FLAGS)

ARCHIVE_FLAGS ?= -runs=3
.PHONY: bench-archive
bench-archive: deps test-tools ## Archive a primary's binary log into S3 (versitygw) under 4 writers for 60 s on real MariaDB: the recovery point's age, the catch-up, and a replay holding every acknowledged write; figures in bench/results/archive-*.json.
	go test -run '^$$' -bench . -benchtime 1x -timeout 60m ./bench/archive -args $(ARCHIVE_FLAGS)

##@ Fleet

.PHONY: demo
demo: deps test-tools ## The main job: local fleet, chart and manager on the hub, members joined, a MySQLCluster on 3 clouds served by real MariaDB servers, the fleet view and a tour.
	hack/tools.sh kubectl
	go build -o $(BIN)/fleet ./hack/fleet
	go build -o $(BIN)/mysqlfleet ./cmd/mysqlfleet
	$(BIN)/fleet up

DEMO_RUN ?= warm
.PHONY: demo-time
demo-time: ## Time make demo from a stopped fleet under GNU time and record it in bench/results/demo-*.json (DEMO_RUN=cold on a machine where nothing was built yet); make bench-docs puts it in the README.
	@command -v /usr/bin/time >/dev/null || { echo "demo-time needs GNU time (Debian's package time)"; exit 1; }
	if [ -d .fleet ]; then $(MAKE) demo-down; fi
	/usr/bin/time -v -o .demo-time.log $(MAKE) demo
	go run ./bench -demo-record $(DEMO_RUN)=.demo-time.log -out bench/results
	rm -f .demo-time.log

.PHONY: demo-down
demo-down: ## Stop the local fleet (every server and control plane) and remove its files.
	go build -o $(BIN)/fleet ./hack/fleet
	$(BIN)/fleet down

$(CONTROLLER_GEN):
	hack/tools.sh controller-gen

$(BIN)/golangci-lint:
	hack/tools.sh golangci-lint

##@ Kind tier

# Which images make kind-images builds. Where a registry is reachable, build only the project's own and name
# public ones instead, e.g. KIND_IMAGES="provisioner manager" KIND_NODE_IMAGE=kindest/node:v1.36.3
# KIND_MARIADB_IMAGE=mariadb:10.11 (see docs/testing.md, kind tier).
KIND_IMAGES ?= node mariadb provisioner manager
KIND_MEMBERS ?= 0
.PHONY: kind-images
kind-images: ## Build the kind tier's images with no registry (node image, MariaDB, provisioner, manager), cached by version.
	hack/kind/images.sh $(KIND_IMAGES)

.PHONY: kind-up
kind-up: kind-images ## Start the fleet of clusters/ as kind clusters, install the chart on the hub, join the members.
	hack/tools.sh kubectl helm kind
	go build -o $(BIN)/mysqlfleet ./cmd/mysqlfleet
	go build -o $(BIN)/kindfleet ./hack/kindfleet
	$(BIN)/kindfleet up -members $(KIND_MEMBERS)

.PHONY: kind-down
kind-down: ## Delete the kind clusters of make kind-up.
	go build -o $(BIN)/kindfleet ./hack/kindfleet
	$(BIN)/kindfleet down

# E2E_KIND_MEMBERS=N starts only the first N members of clusters/; E2E_KIND_LABELS selects specs by label
# (ginkgo's label filter; empty: every spec kind can run).
E2E_KIND_MEMBERS ?=
E2E_KIND_LABELS ?=

.PHONY: test-e2e-kind
test-e2e-kind: kind-images ## Run the e2e suite on kind clusters (fresh e2e-* clusters, deleted after; E2E_KIND_KEEP=1 keeps them).
	hack/tools.sh kubectl kind
	E2E_PROVIDER=kind E2E_KIND_MEMBERS=$(E2E_KIND_MEMBERS) go test -tags e2e -v ./e2e/ -count=1 -timeout 100m -ginkgo.v \
		$(if $(E2E_KIND_LABELS),-ginkgo.label-filter='$(E2E_KIND_LABELS)')

.PHONY: test-kind-ci
test-kind-ci: ## The kind tier as CI runs it: the real-Pods specs (replication, failover, backup and restore) on a hub and one member.
	$(MAKE) test-e2e-kind E2E_KIND_MEMBERS=1 E2E_KIND_LABELS='real-pods && !bench'

BENCH_RUNS ?= 5
.PHONY: bench-failover-kind
bench-failover-kind: kind-images ## Time each fault of the primary on kind (kill -9, Pod deleted, frozen, cut off, its node frozen or cut off, switchover) to the first write through <name>-primary from a client Pod, and to full redundancy; figures in bench/results/failover-kind-*.json.
	hack/tools.sh kubectl kind
	E2E_PROVIDER=kind E2E_KIND_MEMBERS=1 BENCH_RUNS=$(BENCH_RUNS) go test -tags e2e -v ./e2e/ -count=1 -timeout 150m -ginkgo.v \
		-ginkgo.label-filter='bench && !commit-bench'

.PHONY: bench-commit-kind
bench-commit-kind: kind-images ## Commits/s through <name>-primary at 1 and 8 connections, a MySQLCluster of three against the same image's three servers wired by hand, on kind; figures in bench/results/commit-kind-*.json.
	hack/tools.sh kubectl kind
	E2E_PROVIDER=kind E2E_KIND_MEMBERS=1 go test -tags e2e -v ./e2e/ -count=1 -timeout 60m -ginkgo.v \
		-ginkgo.label-filter='commit-bench'
