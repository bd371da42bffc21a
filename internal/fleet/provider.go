// Package fleet keeps the hub's registry of member clusters. It is a multicluster-runtime provider: a controller
// on the hub reads member registration Secrets (label mysqlfleet.io/member=true in the manager's namespace),
// passes every kubeconfig through the gate in internal/kubeconfig before any client exists, builds a cluster
// whose cache holds only what mysqlfleet manages, proves the member answers, and engages it with the manager.
//
// It replaces multicluster-runtime's kubeconfig provider, which it follows in shape, for three reasons found in
// that provider's source (v0.24.1): it builds the rest.Config with clientcmd.RESTConfigFromKubeConfig, which
// reads files named in the kubeconfig before any hook can refuse it; it reconciles Secrets with one worker; and
// it waits for a member's cache with no deadline, so one unreachable member holds every later registration.
// Here, registrations run concurrently, the first sync of each member is bounded, and a member that does not
// answer is retried with backoff while the others go on.
//
// registry.go turns registration Secrets into engaged member clusters; health.go probes engaged members' /readyz
// on a period; detector.go probes a member at once when requests to it wait with no answer.
package fleet

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/kubeconfig"
	"github.com/mysqlfleet/mysqlfleet/internal/placement"
)

// Options configure the provider.
type Options struct {
	// Namespace holds the member registration Secrets: the manager's own namespace.
	Namespace string
	// Kubeconfig tunes the gate and the member clients.
	Kubeconfig kubeconfig.Options
	// Scheme of the member clusters' clients and caches.
	Scheme *runtime.Scheme
	// WatchedObjects are the kinds the manager watches in members. Their informers are started and synced when a
	// member registers, which is how the provider learns that the member answers.
	WatchedObjects []client.Object
	// SyncTimeout bounds a member's first sync. Default 20s.
	SyncTimeout time.Duration
	// MaxConcurrentRegistrations is how many Secrets are processed at once. Default 8.
	MaxConcurrentRegistrations int
	// HealthInterval is how often every engaged member's /readyz is probed. A member that stops answering
	// sends no events, so without the probe nothing would notice it until the next change. Default 10s.
	HealthInterval time.Duration
	// MaxInFlight bounds the requests the manager has outstanding against one member API server (watches
	// excluded); the rest wait in the manager for a slot. Default DefaultMaxInFlight.
	MaxInFlight int
	// RequestTimeout bounds one request to a member, counted from when it has a slot. Default
	// DefaultRequestTimeout.
	RequestTimeout time.Duration
	// OnChange is called with a member's name whenever its facts or reachability change, so that the
	// MySQLClusters placed there are reconciled again.
	OnChange func(member string)
}

// State is what the hub knows about one registered member.
type State struct {
	placement.Member
	// Engaged is true when the member's cluster is running and engaged with the manager.
	Engaged bool
	// Err is why the member cannot be used, nil when it is engaged and answers. Tell the kinds apart with
	// errors.Is:
	//   - ErrRefused: the registration itself is wrong (a kubeconfig the gate refused, or invalid facts such
	//     as a missing cloud label). Nothing is retried until the Secret changes.
	//   - ErrUnreachable: the member's API server did not answer (first sync timed out, or a /readyz probe
	//     failed). Retried with backoff, or probed until it answers.
	//   - anything else: the manager could not build or run the member's cluster (its cache stopped, say).
	//     Retried with backoff.
	Err error
	// Alive, set while the member is engaged and answers, is cancelled as soon as the member is found
	// unreachable or leaves, with the reason as its cause. Work in flight there derives its context from it, so
	// that when one request finds a partition every reconcile waiting on that member stops at once, instead of
	// each waiting out its own deadline.
	Alive context.Context
}

// Provider is the member registry.
type Provider struct {
	opts Options
	log  logr.Logger

	mu       sync.RWMutex
	members  map[string]*member
	indexers []index

	engager  engager
	hub      client.Client
	recorder events.EventRecorder
	// ctx is the manager's context, the parent of every member cluster's context.
	ctx context.Context

	// newCluster builds a member's cluster: cluster.New, replaced in tests.
	newCluster func(*rest.Config, ...cluster.Option) (cluster.Cluster, error)
	// retries has the registration controller process a member's Secret again: a member whose cluster
	// stopped on its own is retried after its backoff, and no Secret event would bring it back.
	retries chan event.GenericEvent
}

// engager engages a member's cluster with the manager: the multicluster manager, or a stand-in in tests.
type engager interface {
	Engage(ctx context.Context, name multicluster.ClusterName, cl cluster.Cluster) error
}

type index struct {
	obj     client.Object
	field   string
	extract client.IndexerFunc
}

var _ multicluster.Provider = &Provider{}

var (
	// ErrUnreachable wraps the error of a member whose API server did not answer in time.
	ErrUnreachable = errors.New("member unreachable")
	// ErrRefused wraps the error of a registration that cannot be used as it stands: its kubeconfig was
	// refused by the gate, or its facts (labels, annotations) are invalid. Only a change of the Secret helps.
	ErrRefused = errors.New("member registration refused")
)

const (
	// DefaultMaxInFlight is as many requests per member as the Go server-side apply floor of the benchmark keeps
	// outstanding (its workers per member): enough for one MySQLCluster's objects to land in one round trip,
	// and few enough that a burst of reconciles waits in the manager, not in the member's API server queue.
	DefaultMaxInFlight = 8
	// DefaultRequestTimeout bounds one request once it is sent.
	DefaultRequestTimeout = 15 * time.Second
)

// New returns a provider; SetupWithManager wires it.
func New(opts Options) *Provider {
	if opts.SyncTimeout == 0 {
		opts.SyncTimeout = 20 * time.Second
	}
	if opts.MaxConcurrentRegistrations == 0 {
		opts.MaxConcurrentRegistrations = 8
	}
	if opts.HealthInterval == 0 {
		opts.HealthInterval = 10 * time.Second
	}
	if opts.MaxInFlight == 0 {
		opts.MaxInFlight = DefaultMaxInFlight
	}
	if opts.RequestTimeout == 0 {
		opts.RequestTimeout = DefaultRequestTimeout
	}
	return &Provider{opts: opts, log: ctrl.Log.WithName("fleet"), members: map[string]*member{},
		newCluster: cluster.New, retries: make(chan event.GenericEvent, 64)}
}

// SetupWithManager registers the registration controller on the hub's manager. It runs only on the elected
// leader, like every controller, so standbys hold no member connections.
func (p *Provider) SetupWithManager(mgr mcmanager.Manager) error {
	p.engager = mgr
	local := mgr.GetLocalManager()
	p.hub = local.GetClient()
	p.recorder = local.GetEventRecorder("mysqlfleet")
	isRegistration := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetNamespace() == p.opts.Namespace && o.GetLabels()[v1alpha1.MemberSecretLabel] == "true"
	})
	return ctrl.NewControllerManagedBy(local).
		Named("member-registration").
		For(&corev1.Secret{}, builder.WithPredicates(isRegistration)).
		WatchesRawSource(source.Channel(p.retries, &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: p.opts.MaxConcurrentRegistrations}).
		Complete(p)
}

// Get returns an engaged member's cluster.
func (p *Provider) Get(_ context.Context, name multicluster.ClusterName) (cluster.Cluster, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if m, ok := p.members[string(name)]; ok && m.cl != nil {
		return m.cl, nil
	}
	return nil, multicluster.ErrClusterNotFound
}

// IndexField adds an index to every member's cache, present and future.
func (p *Provider) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.indexers = append(p.indexers, index{obj, field, extract})
	var errs []error
	for name, m := range p.members {
		if m.cl != nil {
			if err := m.cl.GetFieldIndexer().IndexField(ctx, obj, field, extract); err != nil {
				errs = append(errs, fmt.Errorf("index %s in member %s: %w", field, name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// Members returns every registered member, engaged or not, sorted by name. Members whose facts are invalid
// are included with Err set so that placement can name them instead of calling them unknown.
func (p *Provider) Members() []State {
	p.mu.RLock()
	defer p.mu.RUnlock()
	out := make([]State, 0, len(p.members))
	for name, m := range p.members {
		s := State{Member: m.facts, Engaged: m.cl != nil, Err: m.err}
		if m.cl != nil && m.err == nil {
			s.Alive = m.alive
		}
		s.Name = name
		if m.factErr != nil {
			s.Err = m.factErr
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// baseContext is the manager's context once known; the first registration's context stands in before that.
// Member clusters must outlive the reconcile that created them.
func (p *Provider) baseContext(ctx context.Context) context.Context {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ctx == nil {
		p.ctx = context.WithoutCancel(ctx)
	}
	return p.ctx
}

// Start records the manager's context so that member clusters stop with the manager, and probes the health of
// engaged members until the manager stops.
func (p *Provider) Start(ctx context.Context) error {
	p.mu.Lock()
	p.ctx = ctx
	p.mu.Unlock()
	t := time.NewTicker(p.opts.HealthInterval)
	defer t.Stop()
	detect := time.NewTicker(suspectAfter / 2)
	defer detect.Stop()
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case <-t.C:
			go p.probe(ctx) // a member that does not answer must not hold up the silence checks
		case now := <-detect.C:
			p.detect(now)
		}
	}
	p.mu.Lock()
	for _, m := range p.members {
		if m.cancel != nil {
			m.cancel()
		}
		m.lose(errDisengaged)
	}
	p.mu.Unlock()
	return nil
}

// NeedLeaderElection: the member clusters exist only on the leader.
func (p *Provider) NeedLeaderElection() bool { return true }

func (p *Provider) changed(name string) {
	if p.opts.OnChange != nil {
		p.opts.OnChange(name)
	}
}

func (p *Provider) event(obj runtime.Object, typ, reason, note string) {
	if p.recorder != nil {
		p.recorder.Eventf(obj, nil, typ, reason, "Register", "%s", note)
	}
}

// Synced reports whether every registration Secret on the hub has been processed at least once. Until then
// the registry is incomplete: a leader that just took over would otherwise call registered members unknown.
func (p *Provider) Synced(ctx context.Context) (bool, error) {
	var secrets corev1.SecretList
	if err := p.hub.List(ctx, &secrets, client.InNamespace(p.opts.Namespace),
		client.MatchingLabels{v1alpha1.MemberSecretLabel: "true"}); err != nil {
		return false, err
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	for _, s := range secrets.Items {
		if m := p.members[s.Name]; m == nil || !m.attempted {
			return false, nil
		}
	}
	return true, nil
}
