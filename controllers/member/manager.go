package member

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/render"
)

// DefaultLeaderElectionID is the name of the member controller's Lease.
const DefaultLeaderElectionID = render.MemberControllerName

// Options of the member controller's manager. cmd/member fills them from flags; tests build the same manager
// in-process.
type Options struct {
	// Namespace is the controller's own namespace, where its leader election Lease lives.
	Namespace string

	LeaderElection   bool
	LeaderElectionID string
	// LeaseDuration is how long a standby waits before it takes over a leader that stopped renewing; default
	// DefaultLeaseDuration. RenewDeadline, default DefaultRenewDeadline, is both how long the leader goes on
	// trying to renew before it gives up and how long after the start of its last renewal it may still change
	// a server: it must be shorter than LeaseDuration in whole seconds, and the difference covers clock drift
	// and a statement's way to the server (see the package documentation). RetryPeriod, default
	// DefaultRetryPeriod, is how often it renews.
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration

	MetricsBindAddress     string
	HealthProbeBindAddress string

	Timing
	// MaxConcurrentReconciles is how many sets are worked on at once; one set is never worked on twice at once.
	MaxConcurrentReconciles int
	// Resolver maps a Pod to its server's address; nil means PodIPResolver.
	Resolver Resolver
	// RunnerImage is the image whose backup runner the seed Jobs run (render.RunnerPath); empty means
	// render.DefaultRunnerImage. `mysqlfleet join` passes the controller's own image.
	RunnerImage string

	// NodeName is the node this process runs on (the downward API's spec.nodeName); empty when unknown. A
	// failover prefers, among equally fit replicas, one on another node (clustering.Desired.WithController).
	NodeName string

	// SkipControllerNameValidation lets one process build several managers (tests).
	SkipControllerNameValidation bool
}

var passesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "mysqlfleet_member_passes_total",
	Help: "Passes of the member controller over replicated sets that reached the servers, by decision.",
}, []string{"decision"})

func init() { ctrlmetrics.Registry.MustRegister(passesTotal) }

// The leader election's defaults: shorter than client-go's usual 15 s, 10 s and 2 s, because when the leader's
// node is lost with the primary's, the standby fails over only once the Lease has expired, so the lease
// duration is part of that failover's time (about the lease duration plus a failover, under 15 s on kind:
// docs/benchmarks.md). The 3 s between the renew deadline and the lease duration are the fence's margin (see
// the package documentation); a renewal is retried every second within the deadline, and the Lease costs one
// write a second per member.
const (
	DefaultLeaseDuration = 8 * time.Second
	DefaultRenewDeadline = 5 * time.Second
	DefaultRetryPeriod   = time.Second
)

// Scheme holds the built-in kinds the member controller uses.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// New builds the member controller's manager. Start it with Start(ctx).
func New(cfg *rest.Config, o Options) (manager.Manager, error) {
	mgr, _, err := newManager(cfg, o)
	return mgr, err
}

func newManager(cfg *rest.Config, o Options) (manager.Manager, *Reconciler, error) {
	if o.Namespace == "" {
		return nil, nil, fmt.Errorf("the member controller's namespace is required")
	}
	if o.LeaderElectionID == "" {
		o.LeaderElectionID = DefaultLeaderElectionID
	}
	if o.Resolver == nil {
		o.Resolver = PodIPResolver
	}
	if o.RunnerImage == "" {
		o.RunnerImage = render.DefaultRunnerImage
	}
	opts := managerOptions(o)
	lease, err := withLeaderElection(cfg, o, &opts)
	if err != nil {
		return nil, nil, err
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return nil, nil, err
	}
	if lease != nil {
		lease.useEvents(mgr.GetEventRecorder(lease.Identity()))
	}
	r := &Reconciler{
		Client:      mgr.GetClient(),
		APIReader:   mgr.GetAPIReader(),
		Resolve:     o.Resolver,
		RunnerImage: o.RunnerImage,
		NodeName:    o.NodeName,
		Timing:      o.withDefaults(),
		lease:       lease,
		events:      mgr.GetEventRecorder("mysqlfleet-member"),
		archives:    newArchivers(lease.storeGuard()),
	}
	// A Runnable that needs the leader election: archives run only in the leader.
	if err := mgr.Add(r.archives); err != nil {
		return nil, nil, err
	}
	if err := r.setupWithManager(mgr, o); err != nil {
		return nil, nil, err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, nil, err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return nil, nil, err
	}
	return mgr, r, nil
}

// managerOptions are the manager's options but leader election's timings and lock (withLeaderElection).
func managerOptions(o Options) manager.Options {
	ours := labels.SelectorFromSet(labels.Set{v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue})
	reports := labels.SelectorFromSet(labels.Set{v1alpha1.ReplicationComponentLabel: v1alpha1.ReplicationComponent})
	return manager.Options{
		Scheme:                        Scheme(),
		Metrics:                       metricsserver.Options{BindAddress: o.MetricsBindAddress},
		HealthProbeBindAddress:        o.HealthProbeBindAddress,
		LeaderElection:                o.LeaderElection,
		LeaderElectionID:              o.LeaderElectionID,
		LeaderElectionNamespace:       o.Namespace,
		LeaderElectionReleaseOnCancel: true,
		Controller:                    config.Controller{SkipNameValidation: &o.SkipControllerNameValidation},
		// Only mysqlfleet's objects are cached: a member may run many other workloads.
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			&appsv1.StatefulSet{}: {Label: ours},
			&corev1.Pod{}:         {Label: ours},
			&corev1.ConfigMap{}:   {Label: reports},
			&batchv1.Job{}:        {Label: ours},
			&corev1.Service{}:     {Label: ours},
		}},
		// Secrets are read live, never listed or watched: the controller may only get them.
		Client: client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
	}
}

// setupWithManager registers the controller of the StatefulSets mysqlfleet renders, and closes the connection
// pools when the manager stops.
func (r *Reconciler) setupWithManager(mgr manager.Manager, o Options) error {
	err := ctrl.NewControllerManagedBy(mgr).
		Named("member").
		For(&appsv1.StatefulSet{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(obj client.Object) bool {
			sts, ok := obj.(*appsv1.StatefulSet)
			return ok && managed(sts)
		}))).
		// The report ConfigMap: a deleted or edited report is rewritten.
		Owns(&corev1.ConfigMap{}).
		// Pods: a new Pod IP, a Pod deleted or recreated. The StatefulSet controller owns them.
		Watches(&corev1.Pod{}, handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(),
			&appsv1.StatefulSet{}, handler.OnlyControllerOwner())).
		// Backup, restore and seed Jobs and their Pods: a Job that ends has an outcome to report.
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(jobRequests)).
		Watches(&batchv1.Job{}, handler.EnqueueRequestsFromMapFunc(jobRequests)).
		// A primary Service that lost or regained its selector changes who writes its endpoints.
		Watches(&corev1.Service{}, handler.EnqueueRequestsFromMapFunc(serviceRequests)).
		WithOptions(controller.Options{
			MaxConcurrentReconciles: max(o.MaxConcurrentReconciles, 1),
			SkipNameValidation:      &o.SkipControllerNameValidation,
		}).
		Complete(r)
	if err != nil {
		return err
	}
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		r.pools.closeAll()
		return nil
	}))
}

// withLeaderElection sets the leader election's timings on opts, controller-runtime's defaults where o has none,
// and the Lease lock, built here rather than by controller-runtime so that every change to a server can be
// refused once the Lease may have passed to a standby (lease.go). It returns the lock, nil without leader
// election.
func withLeaderElection(cfg *rest.Config, o Options, opts *manager.Options) (*leaseLock, error) {
	leaseDuration := cmp.Or(o.LeaseDuration, DefaultLeaseDuration)
	renewDeadline := cmp.Or(o.RenewDeadline, DefaultRenewDeadline)
	retryPeriod := cmp.Or(o.RetryPeriod, DefaultRetryPeriod)
	opts.LeaseDuration, opts.RenewDeadline, opts.RetryPeriod = &leaseDuration, &renewDeadline, &retryPeriod
	if !o.LeaderElection {
		return nil, nil
	}
	lease, err := newLeaseLock(cfg, o.Namespace, o.LeaderElectionID, leaseDuration, renewDeadline)
	if err != nil {
		return nil, err
	}
	opts.LeaderElectionResourceLockInterface = lease
	return lease, nil
}
