package fleet

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/kubeconfig"
	"github.com/mysqlfleet/mysqlfleet/internal/placement"
)

type member struct {
	facts   placement.Member
	factErr error
	hash    string
	cl      cluster.Cluster
	cancel  context.CancelFunc
	err     error
	backoff time.Duration
	// engagedAt is when the running cluster was engaged; the backoff starts again once it ran for maxBackoff.
	engagedAt time.Time
	// health probes the member's /readyz; set while engaged.
	health rest.Interface
	// traffic sees the requests of the member's cluster; probing is true while a probe of it is under way, and
	// probedAt is when the last one ended.
	traffic *traffic
	// limit bounds the requests outstanding against the member; it outlives re-registrations, so that an old
	// cluster's requests still draining and a new one's share the bound.
	limit    *inflight
	probing  bool
	probedAt time.Time
	// attempted is true once a registration of the current Secret finished, whatever its outcome.
	attempted bool
	// alive is cancelled, with the reason, when the member is found unreachable or disengaged; a new one
	// begins when it answers again.
	alive context.Context
	kill  context.CancelCauseFunc
}

// Reconcile registers, updates or removes the member of one Secret.
func (p *Provider) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	name := req.Name
	log := p.log.WithValues("member", name)
	var secret corev1.Secret
	if err := p.hub.Get(ctx, req.NamespacedName, &secret); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, p.remove(ctx, name, log, "registration Secret deleted")
		}
		return ctrl.Result{}, err
	}
	if !secret.DeletionTimestamp.IsZero() || secret.Labels[v1alpha1.MemberSecretLabel] != "true" {
		return ctrl.Result{}, p.remove(ctx, name, log, "registration withdrawn")
	}

	reportToken(name, &secret)
	facts, factErr := placement.MemberFromSecret(&secret)
	if factErr != nil {
		factErr = fmt.Errorf("%w: %w", ErrRefused, factErr)
	}
	data := secret.Data[v1alpha1.KubeconfigKey]
	// The namespaces a member allows shape its cache, so a change to them rebuilds the cluster like a new
	// kubeconfig does.
	hash := sha256.Sum256(append(append([]byte{}, data...), strings.Join(facts.Namespaces, ",")...))
	hashStr := hex.EncodeToString(hash[:])

	p.mu.Lock()
	m, exists := p.members[name]
	if !exists {
		m = &member{limit: newInflight(name, p.opts.MaxInFlight, p.opts.RequestTimeout)}
		p.members[name] = m
	}
	factsChanged := !equalMember(m.facts, facts) || (m.factErr == nil) != (factErr == nil)
	m.facts, m.factErr = facts, factErr
	sameConfig := m.hash == hashStr && m.cl != nil
	p.report(name, m)
	p.mu.Unlock()
	defer p.markAttempted(name)
	if factErr != nil {
		p.event(&secret, corev1.EventTypeWarning, "InvalidRegistration", factErr.Error())
	}
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
		err = fmt.Errorf("%w: %w", ErrRefused, err)
		log.Error(err, "Refused member kubeconfig")
		p.setErr(name, hashStr, err)
		p.event(&secret, corev1.EventTypeWarning, "KubeconfigRefused", err.Error())
		p.changed(name)
		return ctrl.Result{}, nil // nothing to retry until the Secret changes
	}
	if err := p.engage(ctx, name, hashStr, cfg, m.limit, facts.Namespaces, log); err != nil {
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
)

// engage builds the member's cluster, starts it, waits (bounded) for its informers, and engages it.
func (p *Provider) engage(ctx context.Context, name, hash string, cfg *rest.Config, limit *inflight, namespaces []string, log logr.Logger) error {
	// Every request of the member's cluster (applies, reads, and the cache's lists and watches) passes through
	// the failure detector, so that requests waiting with no answer get the member probed at once. The health
	// client stays out: its probe is the verdict, and a probe waiting on a partitioned member must not count
	// as the member's silence and trigger a second probe. Outside the detector, the in-flight bound: a request
	// waiting for a slot has not been sent, so the member cannot be blamed for it.
	tr := &traffic{}
	clusterCfg := rest.CopyConfig(cfg)
	clusterCfg.Wrap(countRequests(name))
	clusterCfg.Wrap(tr.wrap)
	clusterCfg.Wrap(limit.wrap)
	cl, err := p.newCluster(clusterCfg, func(o *cluster.Options) {
		o.Scheme = p.opts.Scheme
		o.Logger = log
		o.Cache = MemberCacheOptions(namespaces)
	})
	if err != nil {
		return fmt.Errorf("building client for member %s: %w", name, err)
	}
	health, err := healthClient(cfg)
	if err != nil {
		return fmt.Errorf("building health client for member %s: %w", name, err)
	}
	p.mu.RLock()
	for _, idx := range p.indexers {
		if err := cl.GetFieldIndexer().IndexField(ctx, idx.obj, idx.field, idx.extract); err != nil {
			p.mu.RUnlock()
			return err
		}
	}
	p.mu.RUnlock()

	clusterCtx, stop := context.WithCancelCause(p.baseContext(ctx))
	cancel := func() { stop(errDisengaged) }
	go p.run(clusterCtx, stop, name, cl, log)
	syncCtx, syncCancel := context.WithTimeout(clusterCtx, p.opts.SyncTimeout)
	defer syncCancel()
	unsynced := func() error {
		cancel()
		if cause := context.Cause(clusterCtx); cause != errDisengaged {
			return cause // the cluster stopped on its own: say why, rather than blame the member
		}
		return fmt.Errorf("%w: no answer from %s within %s", ErrUnreachable, cfg.Host, p.opts.SyncTimeout)
	}
	for _, obj := range p.opts.WatchedObjects {
		if _, err := cl.GetCache().GetInformer(syncCtx, obj); err != nil {
			return unsynced()
		}
	}
	// GetInformer waits for an informer to sync only once the cache has started, and the cluster starts it in
	// run, concurrently: it often returned at once, and the cache then synced inside the manager's Engage, one
	// member at a time (multicluster-runtime's controller engages under a lock, and its sources wait for the
	// cache), after the member was reported engaged. WaitForCacheSync waits for the start and then for every
	// informer.
	if !cl.GetCache().WaitForCacheSync(syncCtx) {
		return unsynced()
	}

	p.mu.Lock()
	m := p.members[name]
	if m == nil || m.hash != "" && m.hash != hash && m.cl != nil {
		// Removed or replaced while we synced.
		p.mu.Unlock()
		cancel()
		return fmt.Errorf("member %s changed during registration", name)
	}
	if clusterCtx.Err() != nil {
		// Stopped on its own after the informers synced, before run could find it engaged.
		p.mu.Unlock()
		return context.Cause(clusterCtx)
	}
	m.cl, m.cancel, m.hash, m.err, m.traffic, m.health = cl, cancel, hash, nil, tr, health
	m.engagedAt = time.Now()
	m.revive()
	p.report(name, m)
	p.mu.Unlock()

	if err := p.engager.Engage(clusterCtx, multicluster.ClusterName(name), cl); err != nil {
		p.disengage(name)
		return fmt.Errorf("engaging member %s: %w", name, err)
	}
	return nil
}

// run runs a member's cluster until it is stopped. A cluster whose Start returns while nobody stopped it (its
// cache failed) leaves the member with a dead cache: nothing would ever be read or watched there again. It is
// disengaged, its error recorded, and its registration retried after the backoff.
func (p *Provider) run(ctx context.Context, stop context.CancelCauseFunc, name string, cl cluster.Cluster, log logr.Logger) {
	err := cl.Start(ctx)
	if ctx.Err() != nil {
		if err != nil {
			log.Error(err, "Member cluster stopped")
		}
		return
	}
	if err == nil {
		err = errors.New("it returned with no error")
	}
	err = fmt.Errorf("member %s cluster stopped: %w", name, err)
	log.Error(err, "Member cluster stopped; retrying")
	stop(err)

	p.mu.Lock()
	m := p.members[name]
	if m == nil || m.cl != cl {
		// Not engaged yet (engage sees the stopped context and reports it), or already replaced or removed.
		p.mu.Unlock()
		return
	}
	m.lose(err)
	m.cl, m.cancel, m.health, m.traffic = nil, nil, nil, nil
	backoff := m.fail(err)
	p.report(name, m)
	p.mu.Unlock()
	p.changed(name)
	p.retryAfter(name, backoff)
}

// retryAfter has the registration controller process the member's Secret again after d.
func (p *Provider) retryAfter(name string, d time.Duration) {
	ctx := p.baseContext(context.Background())
	ev := event.GenericEvent{Object: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: p.opts.Namespace, Name: name}}}
	time.AfterFunc(d, func() {
		select {
		case p.retries <- ev:
		case <-ctx.Done():
		}
	})
}

func (p *Provider) setErr(name, hash string, err error) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := p.members[name]
	if m == nil {
		return initialBackoff
	}
	m.hash = hash
	backoff := m.fail(err)
	p.report(name, m)
	return backoff
}

// fail records why a member cannot be used and returns how long to wait before registering it again. The wait
// doubles with each failure and starts again from initialBackoff once the member's cluster had run for
// maxBackoff, so that a cluster that stops soon after every start is not rebuilt every few seconds. Callers
// hold p.mu.
func (m *member) fail(err error) time.Duration {
	m.err = err
	if !m.engagedAt.IsZero() && time.Since(m.engagedAt) >= maxBackoff {
		m.backoff = 0
	}
	m.engagedAt = time.Time{}
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
		p.report(name, m)
	}
}

func (p *Provider) remove(ctx context.Context, name string, log logr.Logger, why string) error {
	p.mu.Lock()
	m, ok := p.members[name]
	if ok {
		if m.cancel != nil {
			m.cancel()
		}
		m.lose(errDisengaged)
		delete(p.members, name)
		forget(name)
	}
	p.mu.Unlock()
	if !ok {
		return nil
	}
	log.Info("Member removed", "reason", why)
	p.changed(name)
	return nil
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
