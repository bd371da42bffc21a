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
package fleet

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
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
	// OnChange is called with a member's name whenever its facts or reachability change, so that the
	// MySQLClusters placed there are reconciled again.
	OnChange func(member string)
}

// State is what the hub knows about one registered member.
type State struct {
	placement.Member
	// Engaged is true when the member's cluster is running and engaged with the manager.
	Engaged bool
	// Err is why the member is not engaged: a refused kubeconfig, invalid facts, or an unreachable API server.
	Err error
	// Alive, set while the member is engaged and answers, is cancelled as soon as the member is found
	// unreachable or leaves, with the reason as its cause. Work in flight there derives its context from it, so
	// that when one request finds a partition every reconcile waiting on that member stops at once, instead of
	// each waiting out its own deadline.
	Alive context.Context
}

type member struct {
	facts   placement.Member
	factErr error
	hash    string
	cl      cluster.Cluster
	cancel  context.CancelFunc
	err     error
	backoff time.Duration
	// health probes the member's /readyz; set while engaged.
	health rest.Interface
	// traffic sees the requests to the member; probing is true while a probe of it is under way.
	traffic *traffic
	probing bool
	// attempted is true once a registration of the current Secret finished, whatever its outcome.
	attempted bool
	// alive is cancelled, with the reason, when the member is found unreachable or disengaged; a new one
	// begins when it answers again.
	alive context.Context
	kill  context.CancelCauseFunc
}

// errDisengaged ends the alive context of a member whose cluster was stopped.
var errDisengaged = errors.New("member disengaged")

// revive starts a new alive context for an engaged member that answers. Callers hold p.mu.
func (m *member) revive() {
	m.alive, m.kill = context.WithCancelCause(context.Background())
}

// lose ends the member's alive context, if any, with the reason. Callers hold p.mu.
func (m *member) lose(cause error) {
	if m.kill != nil {
		m.kill(cause)
		m.kill = nil
	}
}

// Provider is the member registry.
type Provider struct {
	opts Options
	log  logr.Logger

	mu       sync.RWMutex
	members  map[string]*member
	indexers []index

	mgr      mcmanager.Manager
	hub      client.Client
	recorder events.EventRecorder
	// ctx is the manager's context, the parent of every member cluster's context.
	ctx context.Context
}

type index struct {
	obj     client.Object
	field   string
	extract client.IndexerFunc
}

var _ multicluster.Provider = &Provider{}

// ErrUnreachable wraps the error of a member whose API server did not answer in time.
var ErrUnreachable = errors.New("member unreachable")

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
	return &Provider{opts: opts, log: ctrl.Log.WithName("fleet"), members: map[string]*member{}}
}

// SetupWithManager registers the registration controller on the hub's manager. It runs only on the elected
// leader, like every controller, so standbys hold no member connections.
func (p *Provider) SetupWithManager(mgr mcmanager.Manager) error {
	p.mgr = mgr
	local := mgr.GetLocalManager()
	p.hub = local.GetClient()
	p.recorder = local.GetEventRecorder("mysqlfleet")
	isRegistration := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetNamespace() == p.opts.Namespace && o.GetLabels()[v1alpha1.MemberSecretLabel] == "true"
	})
	return ctrl.NewControllerManagedBy(local).
		Named("member-registration").
		For(&corev1.Secret{}, builder.WithPredicates(isRegistration)).
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

// Reconcile registers, updates or removes the member of one Secret.
func (p *Provider) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	name := req.Name
	log := p.log.WithValues("member", name)
	var secret corev1.Secret
	if err := p.hub.Get(ctx, req.NamespacedName, &secret); err != nil {
		if apierrors.IsNotFound(err) {
			p.remove(name, log, "registration Secret deleted")
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if !secret.DeletionTimestamp.IsZero() || secret.Labels[v1alpha1.MemberSecretLabel] != "true" {
		p.remove(name, log, "registration withdrawn")
		return ctrl.Result{}, nil
	}

	facts, factErr := placement.MemberFromSecret(&secret)
	data := secret.Data[v1alpha1.KubeconfigKey]
	// The namespaces a member allows shape its cache, so a change to them rebuilds the cluster like a new
	// kubeconfig does.
	hash := sha256.Sum256(append(append([]byte{}, data...), strings.Join(facts.Namespaces, ",")...))
	hashStr := hex.EncodeToString(hash[:])

	p.mu.Lock()
	m, exists := p.members[name]
	if !exists {
		m = &member{}
		p.members[name] = m
	}
	factsChanged := !equalMember(m.facts, facts) || (m.factErr == nil) != (factErr == nil)
	m.facts, m.factErr = facts, factErr
	sameConfig := m.hash == hashStr && m.cl != nil
	p.mu.Unlock()
	if factErr != nil {
		p.event(&secret, corev1.EventTypeWarning, "InvalidRegistration", factErr.Error())
	}
	defer p.markAttempted(name)
	if sameConfig {
		if factsChanged {
			p.changed(name)
		}
		return ctrl.Result{}, nil
	}

	// A new or changed kubeconfig: the old cluster, if any, goes first.
	p.disengage(name)
	cfg, err := kubeconfig.RESTConfig(name, data, p.opts.Kubeconfig)
	if err != nil {
		// The error names the refused field, never a secret value.
		log.Error(err, "Refused member kubeconfig")
		p.setErr(name, hashStr, err)
		p.event(&secret, corev1.EventTypeWarning, "KubeconfigRefused", err.Error())
		p.changed(name)
		return ctrl.Result{}, nil // nothing to retry until the Secret changes
	}
	if err := p.engage(ctx, name, hashStr, cfg, facts.Namespaces, log); err != nil {
		backoff := p.setErr(name, hashStr, err)
		if !errors.Is(err, ErrUnreachable) || backoff == initialBackoff {
			p.event(&secret, corev1.EventTypeWarning, "MemberUnreachable", err.Error())
		}
		p.changed(name)
		log.Info("Member not engaged; retrying", "err", err.Error(), "after", backoff)
		return ctrl.Result{RequeueAfter: backoff}, nil
	}
	p.event(&secret, corev1.EventTypeNormal, "MemberEngaged", "member API server answered; caches synced")
	log.Info("Member engaged", "server", cfg.Host)
	p.changed(name)
	return ctrl.Result{}, nil
}

const (
	initialBackoff = 2 * time.Second
	maxBackoff     = 2 * time.Minute

	// suspectAfter is how long requests to a member may wait with no answer at all before the member is probed
	// at once, rather than at the next health interval.
	suspectAfter = time.Second
	// suspectProbeTimeout bounds that probe; a member that does not answer it is unreachable. /readyz is exempt
	// from API Priority and Fairness, so a member that is only busy answers it quickly.
	suspectProbeTimeout = 3 * time.Second
)

// engage builds the member's cluster, starts it, waits (bounded) for its informers, and engages it.
func (p *Provider) engage(ctx context.Context, name, hash string, cfg *rest.Config, namespaces []string, log logr.Logger) error {
	cl, err := cluster.New(cfg, func(o *cluster.Options) {
		o.Scheme = p.opts.Scheme
		o.Logger = log
		o.Cache = memberCacheOptions(namespaces)
	})
	if err != nil {
		return fmt.Errorf("building client for member %s: %w", name, err)
	}
	p.mu.RLock()
	for _, idx := range p.indexers {
		if err := cl.GetFieldIndexer().IndexField(ctx, idx.obj, idx.field, idx.extract); err != nil {
			p.mu.RUnlock()
			return err
		}
	}
	p.mu.RUnlock()

	clusterCtx, cancel := context.WithCancel(p.baseContext(ctx))
	tr := &traffic{}
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(tr.wrap)
	go func() {
		if err := cl.Start(clusterCtx); err != nil {
			log.Error(err, "Member cluster stopped")
		}
	}()
	syncCtx, syncCancel := context.WithTimeout(clusterCtx, p.opts.SyncTimeout)
	defer syncCancel()
	for _, obj := range p.opts.WatchedObjects {
		if _, err := cl.GetCache().GetInformer(syncCtx, obj); err != nil {
			cancel()
			return fmt.Errorf("%w: no answer from %s within %s", ErrUnreachable, cfg.Host, p.opts.SyncTimeout)
		}
	}

	p.mu.Lock()
	m := p.members[name]
	if m == nil || m.hash != "" && m.hash != hash && m.cl != nil {
		// Removed or replaced while we synced.
		p.mu.Unlock()
		cancel()
		return fmt.Errorf("member %s changed during registration", name)
	}
	m.cl, m.cancel, m.hash, m.err, m.backoff, m.traffic = cl, cancel, hash, nil, 0, tr
	m.revive()
	m.health, err = healthClient(cfg)
	p.mu.Unlock()
	if err != nil {
		p.disengage(name)
		return err
	}

	if err := p.mgr.Engage(clusterCtx, multicluster.ClusterName(name), cl); err != nil {
		p.disengage(name)
		return fmt.Errorf("engaging member %s: %w", name, err)
	}
	return nil
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
	silence := time.NewTicker(suspectAfter / 2)
	defer silence.Stop()
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case <-t.C:
			go p.probe(ctx) // a member that does not answer must not hold up the silence checks
		case now := <-silence.C:
			p.suspectSilent(now)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range p.members {
		if m.cancel != nil {
			m.cancel()
		}
		m.lose(errDisengaged)
	}
	return nil
}

// NeedLeaderElection: the member clusters exist only on the leader.
func (p *Provider) NeedLeaderElection() bool { return true }

func (p *Provider) setErr(name, hash string, err error) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := p.members[name]
	if m == nil {
		return initialBackoff
	}
	m.hash, m.err = hash, err
	if m.backoff == 0 {
		m.backoff = initialBackoff
	} else {
		m.backoff = min(2*m.backoff, maxBackoff)
	}
	return m.backoff
}

func (p *Provider) disengage(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if m := p.members[name]; m != nil && m.cancel != nil {
		m.cancel()
		m.lose(errDisengaged)
		m.cl, m.cancel, m.hash, m.health, m.traffic = nil, nil, "", nil, nil
	}
}

func (p *Provider) remove(name string, log logr.Logger, why string) {
	p.mu.Lock()
	m, ok := p.members[name]
	if ok {
		if m.cancel != nil {
			m.cancel()
		}
		m.lose(errDisengaged)
		delete(p.members, name)
	}
	p.mu.Unlock()
	if ok {
		log.Info("Member removed", "reason", why)
		p.changed(name)
	}
}

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

func equalMember(a, b placement.Member) bool {
	if a.Name != b.Name || a.Cloud != b.Cloud || a.Region != b.Region || a.StorageClassOverride != b.StorageClassOverride ||
		len(a.Labels) != len(b.Labels) {
		return false
	}
	for k, v := range a.Labels {
		if b.Labels[k] != v {
			return false
		}
	}
	return true
}

// markAttempted records that the current registration Secret of a member has been processed once.
func (p *Provider) markAttempted(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if m := p.members[name]; m != nil {
		m.attempted = true
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

// healthClient is a client for the member's /readyz with a short timeout; it never watches.
func healthClient(cfg *rest.Config) (rest.Interface, error) {
	c := rest.CopyConfig(cfg)
	c.Timeout = 5 * time.Second
	c.GroupVersion = &corev1.SchemeGroupVersion
	c.APIPath = "/api"
	c.NegotiatedSerializer = clientgoscheme.Codecs.WithoutConversion()
	return rest.RESTClientFor(c)
}

// probe asks every engaged member's API server whether it is ready, all at once, and records changes.
func (p *Provider) probe(ctx context.Context) {
	p.mu.RLock()
	targets := map[string]rest.Interface{}
	for name, m := range p.members {
		if m.cl != nil && m.health != nil {
			targets[name] = m.health
		}
	}
	p.mu.RUnlock()
	var wg sync.WaitGroup
	for name, hc := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.setHealth(name, readyz(ctx, hc))
		}()
	}
	wg.Wait()
}

// readyz asks a member's API server whether it answers; the error says why not. An answer that it is not ready
// is an answer: under heavy load /readyz reports "[-]etcd failed" now and then while every request is served,
// and calling such a member unreachable would stop all work there and requeue everything placed on it, twice.
// If the member really cannot serve, its applies fail with the API server's own errors and say so in status.
func readyz(ctx context.Context, hc rest.Interface) error {
	_, err := hc.Get().AbsPath("/readyz").DoRaw(ctx)
	var answered apierrors.APIStatus
	if err == nil || errors.As(err, &answered) {
		return nil
	}
	return fmt.Errorf("%w: /readyz: %v", ErrUnreachable, err)
}

// suspectSilent probes at once every reachable member whose requests have waited suspectAfter with no answer.
func (p *Provider) suspectSilent(now time.Time) {
	p.mu.RLock()
	var silent []string
	for name, m := range p.members {
		if m.err == nil && m.traffic != nil && m.traffic.silence(now) > suspectAfter {
			silent = append(silent, name)
		}
	}
	p.mu.RUnlock()
	for _, name := range silent {
		p.Suspect(name)
	}
}

// Suspect probes an engaged member at once, unless a probe of it is under way: a request to it went
// unanswered. The probe, not the request, decides: a request may also time out on a member that is only busy
// (queued by its API Priority and Fairness, or by the manager's own rate limit), and calling such a member
// unreachable would stop all work there. A member that fails the probe is unreachable until its health probe
// sees it answer again.
func (p *Provider) Suspect(name string) {
	p.mu.Lock()
	m := p.members[name]
	if m == nil || m.health == nil || m.err != nil || m.probing || p.ctx == nil {
		p.mu.Unlock()
		return
	}
	m.probing = true
	hc, ctx := m.health, p.ctx
	p.mu.Unlock()
	go func() {
		pctx, cancel := context.WithTimeout(ctx, suspectProbeTimeout)
		err := readyz(pctx, hc)
		cancel()
		p.mu.Lock()
		if cur := p.members[name]; cur == m {
			m.probing = false
		}
		p.mu.Unlock()
		if err != nil {
			p.setHealth(name, err)
		}
	}()
}

// setHealth records an engaged member's reachability and tells the reconciler when it changed.
func (p *Provider) setHealth(name string, err error) {
	p.mu.Lock()
	m := p.members[name]
	if m == nil || m.cl == nil || (m.err == nil) == (err == nil) {
		p.mu.Unlock()
		return
	}
	m.err = err
	if err != nil {
		m.lose(err)
	} else {
		m.revive()
	}
	p.mu.Unlock()
	if err != nil {
		p.log.Info("Member stopped answering", "member", name, "err", err.Error())
	} else {
		p.log.Info("Member answers again", "member", name)
	}
	p.changed(name)
}
