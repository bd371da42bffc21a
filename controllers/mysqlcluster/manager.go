// Package manager assembles the hub manager: a multicluster-runtime manager on the hub, the member registry
// (internal/fleet) as its provider, and the MySQLCluster reconciler. cmd/manager parses flags into Options;
// tests build the very same manager in-process.
package mysqlcluster

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	crmanager "sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/fleet"
	"github.com/mysqlfleet/mysqlfleet/internal/fleet/shard"
	"github.com/mysqlfleet/mysqlfleet/internal/hubclient"
	"github.com/mysqlfleet/mysqlfleet/internal/kubeconfig"
)

// Options of the hub manager.
type Options struct {
	// Namespace is the manager's namespace: member registration Secrets, generated credentials and the leader
	// election Lease live there, and the manager reads Secrets nowhere else.
	Namespace string

	LeaderElection bool
	// LeaderElectionID names the leader's Lease, and starts the names of the sharding Leases.
	LeaderElectionID string
	// Sharding divides the members among the replicas (internal/fleet/shard): every replica works in its share
	// and writes its members' rows of status; the elected leader writes the rest of the status. It needs
	// LeaderElection.
	Sharding bool
	// ShardIdentity names this replica among the sharded ones; default DefaultShardIdentity().
	ShardIdentity string
	// LeaseDuration, RenewDeadline and RetryPeriod time the leader's Lease and, sharded, the replicas' peer
	// Leases: a replica that dies hands its members over after LeaseDuration.
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration

	MetricsBindAddress     string
	HealthProbeBindAddress string

	// Member clients and registration.
	Kubeconfig        kubeconfig.Options
	MemberSyncTimeout time.Duration
	// MemberHealthInterval is how often engaged members are probed for reachability.
	MemberHealthInterval time.Duration
	// MemberTimeout bounds one request to a member, counted from when it is sent; zero means
	// fleet.DefaultRequestTimeout.
	MemberTimeout time.Duration
	// MemberMaxInFlight bounds the requests outstanding against one member (watches excluded); zero means
	// fleet.DefaultMaxInFlight.
	MemberMaxInFlight int
	// Workers is how many MySQLClusters are reconciled at once; zero means controllers.DefaultWorkers.
	Workers int
	// RunnerImage is the image backup and restore Jobs copy the backup runner from; default
	// render.DefaultRunnerImage.
	RunnerImage string
	// DeletionTimeout bounds how long deletion waits for unreachable members.
	DeletionTimeout time.Duration
	// OrphanScanInterval is how often the member caches are searched for orphans; zero means
	// controllers.DefaultOrphanScanInterval.
	OrphanScanInterval time.Duration

	// SkipControllerNameValidation lets one process build several managers, one after another (tests):
	// controller-runtime otherwise refuses a controller name it has seen, for the sake of its metrics.
	SkipControllerNameValidation bool
}

// Scheme holds the built-in kinds and the mysqlfleet API.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// New builds the hub manager. Start it with Start(ctx).
func New(cfg *rest.Config, opts Options) (mcmanager.Manager, error) {
	if opts.Namespace == "" {
		return nil, fmt.Errorf("the manager's namespace is required")
	}
	// Zero takes the fleet's defaults; a negative bound would make every member unusable (no slot, or
	// requests that end before they are sent), so it is refused rather than read as "none".
	if opts.MemberMaxInFlight < 0 || opts.MemberTimeout < 0 || opts.Workers < 0 {
		return nil, fmt.Errorf("the member in-flight bound (%d), request timeout (%s) and workers (%d) must not be negative",
			opts.MemberMaxInFlight, opts.MemberTimeout, opts.Workers)
	}
	if opts.LeaderElectionID == "" {
		opts.LeaderElectionID = "mysqlfleet-manager"
	}
	if opts.Sharding && !opts.LeaderElection {
		return nil, fmt.Errorf("sharding needs leader election: the leader writes each MySQLCluster's summary")
	}
	scheme := Scheme()
	r := &MySQLClusterReconciler{
		Namespace: opts.Namespace, DeletionTimeout: opts.DeletionTimeout, RunnerImage: opts.RunnerImage,
		Sharded: opts.Sharding, Workers: opts.Workers, OrphanScanInterval: opts.OrphanScanInterval,
	}
	var provider *fleet.Provider
	var sh *shard.Shard
	if opts.Sharding {
		if opts.ShardIdentity == "" {
			opts.ShardIdentity = DefaultShardIdentity()
		}
		var err error
		sh, err = shard.New(shard.Options{
			Namespace: opts.Namespace, Prefix: opts.LeaderElectionID, Identity: opts.ShardIdentity,
			LeaseDuration: opts.LeaseDuration, RenewDeadline: opts.RenewDeadline, RetryPeriod: opts.RetryPeriod,
			OnChange: func() { provider.Rebalance() },
		})
		if err != nil {
			return nil, err
		}
	}
	provider = fleet.New(fleet.Options{
		Namespace:      opts.Namespace,
		Kubeconfig:     opts.Kubeconfig,
		Scheme:         scheme,
		WatchedObjects: MemberObjects(),
		SyncTimeout:    opts.MemberSyncTimeout,
		HealthInterval: opts.MemberHealthInterval,
		MaxInFlight:    opts.MemberMaxInFlight,
		RequestTimeout: opts.MemberTimeout,
		OnChange:       r.MemberChanged,
		Shard:          sh,
	})
	mgr, err := mcmanager.New(cfg, provider, crmanager.Options{
		Scheme:                        scheme,
		Metrics:                       metricsserver.Options{BindAddress: opts.MetricsBindAddress},
		HealthProbeBindAddress:        opts.HealthProbeBindAddress,
		LeaderElection:                opts.LeaderElection,
		LeaderElectionID:              opts.LeaderElectionID,
		LeaderElectionNamespace:       opts.Namespace,
		LeaseDuration:                 &opts.LeaseDuration,
		RenewDeadline:                 &opts.RenewDeadline,
		RetryPeriod:                   &opts.RetryPeriod,
		LeaderElectionReleaseOnCancel: true,
		Controller:                    config.Controller{SkipNameValidation: &opts.SkipControllerNameValidation},
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			// Registrations and credentials: Secrets are read in the manager's namespace only.
			&corev1.Secret{}: {Namespaces: map[string]cache.Config{opts.Namespace: {}}},
			// The sharding Leases, there too; the leader's Lease is read by leader election itself.
			&coordinationv1.Lease{}: {Namespaces: map[string]cache.Config{opts.Namespace: {}}, Label: shardLeases},
			// The pending teardown records, there too; the hub's other ConfigMaps are none of the manager's.
			&corev1.ConfigMap{}: {Namespaces: map[string]cache.Config{opts.Namespace: {}},
				Label: labels.SelectorFromSet(labels.Set{v1alpha1.PendingTeardownLabel: "true"})},
		}},
	})
	if err != nil {
		return nil, err
	}
	local := mgr.GetLocalManager()
	// The Leases (leader election's, the shard's) have clients of their own, outside this bound.
	r.Hub, r.HubReader = hubclient.StatusBounded(local.GetClient(), hubclient.DefaultMaxStatusWrites), local.GetAPIReader()
	if opts.Sharding {
		// The leader's summaries, bounded on their own (see MySQLClusterReconciler.Summary).
		r.Summary = hubclient.StatusBounded(local.GetClient(), hubclient.DefaultMaxStatusWrites)
	}
	r.Fleet = provider
	r.Recorder = local.GetEventRecorder("mysqlfleet")
	if sh != nil {
		if err := sh.SetupWithManager(local, local.GetLogger().WithName("shard")); err != nil {
			return nil, err
		}
	}
	if err := provider.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	if err := local.Add(provider); err != nil {
		return nil, err
	}
	if err := r.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	if err := local.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, err
	}
	if err := local.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return nil, err
	}
	return mgr, nil
}

// shardLeases selects the Leases of sharding.
var shardLeases = func() labels.Selector {
	req, err := labels.NewRequirement(shard.LeaseLabel, selection.Exists, nil)
	if err != nil {
		panic(err)
	}
	return labels.NewSelector().Add(*req)
}()

// DefaultShardIdentity names a replica: its host name (a Pod's name) and five random characters, new at every
// start, so that a restarted container is never taken for the process it replaces (whose claims are then taken
// over as a dead replica's).
func DefaultShardIdentity() string {
	host, _ := os.Hostname()
	host = strings.Trim(invalidInLabel.ReplaceAllString(strings.ToLower(host), "-"), "-")
	if len(host) > 40 {
		host = strings.TrimRight(host[:40], "-")
	}
	if host == "" {
		host = "manager"
	}
	return host + "-" + utilrand.String(5)
}

var invalidInLabel = regexp.MustCompile(`[^a-z0-9-]+`)
