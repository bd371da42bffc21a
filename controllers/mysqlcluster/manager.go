// Package manager assembles the hub manager: a multicluster-runtime manager on the hub, the member registry
// (internal/fleet) as its provider, and the MySQLCluster reconciler. cmd/manager parses flags into Options;
// tests build the very same manager in-process.
package mysqlcluster

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
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
	"github.com/mysqlfleet/mysqlfleet/internal/hubclient"
	"github.com/mysqlfleet/mysqlfleet/internal/kubeconfig"
)

// Options of the hub manager.
type Options struct {
	// Namespace is the manager's namespace: member registration Secrets, generated credentials and the leader
	// election Lease live there, and the manager reads Secrets nowhere else.
	Namespace string

	LeaderElection bool
	// LeaderElectionID names the leader's Lease.
	LeaderElectionID string
	// LeaseDuration, RenewDeadline and RetryPeriod time the leader's Lease: a standby takes over from a leader
	// that died after LeaseDuration.
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
	scheme := Scheme()
	r := &MySQLClusterReconciler{
		Namespace: opts.Namespace, DeletionTimeout: opts.DeletionTimeout, RunnerImage: opts.RunnerImage,
		Workers: opts.Workers, OrphanScanInterval: opts.OrphanScanInterval,
	}
	provider := fleet.New(fleet.Options{
		Namespace:      opts.Namespace,
		Kubeconfig:     opts.Kubeconfig,
		Scheme:         scheme,
		WatchedObjects: MemberObjects(),
		SyncTimeout:    opts.MemberSyncTimeout,
		HealthInterval: opts.MemberHealthInterval,
		MaxInFlight:    opts.MemberMaxInFlight,
		RequestTimeout: opts.MemberTimeout,
		OnChange:       r.MemberChanged,
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
			// The pending teardown records, there too; the hub's other ConfigMaps are none of the manager's.
			&corev1.ConfigMap{}: {Namespaces: map[string]cache.Config{opts.Namespace: {}},
				Label: labels.SelectorFromSet(labels.Set{v1alpha1.PendingTeardownLabel: "true"})},
		}},
	})
	if err != nil {
		return nil, err
	}
	local := mgr.GetLocalManager()
	// Leader election's Lease has a client of its own, outside this bound.
	r.Hub, r.HubReader = hubclient.StatusBounded(local.GetClient(), hubclient.DefaultMaxStatusWrites), local.GetAPIReader()
	r.Fleet = provider
	r.Recorder = local.GetEventRecorder("mysqlfleet")
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
