package fleet

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
)

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
	type target struct {
		cl      cluster.Cluster
		health  rest.Interface
		traffic *traffic
	}
	p.mu.RLock()
	targets := map[string]target{}
	for name, m := range p.members {
		if m.cl != nil && m.health != nil {
			targets[name] = target{m.cl, m.health, m.traffic}
		}
	}
	p.mu.RUnlock()
	var wg sync.WaitGroup
	for name, t := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			began := time.Now()
			p.setHealth(name, t.cl, probeVerdict(readyz(ctx, t.health), t.traffic, began))
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

// setHealth records an engaged member's reachability, as probed through its cluster cl, and tells the
// reconciler when it changed. A probe of a cluster since replaced says nothing about the new one.
func (p *Provider) setHealth(name string, cl cluster.Cluster, err error) {
	p.mu.Lock()
	m := p.members[name]
	if m == nil || m.cl == nil || m.cl != cl || (m.err == nil) == (err == nil) {
		p.mu.Unlock()
		return
	}
	m.err = err
	if err != nil {
		m.lose(err)
	} else {
		m.revive()
	}
	p.report(name, m)
	p.mu.Unlock()
	if err != nil {
		p.log.Info("Member stopped answering", "member", name, "err", err.Error())
	} else {
		p.log.Info("Member answers again", "member", name)
	}
	p.changed(name)
}
