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
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
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
