package member

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/mysqlfleet/mysqlfleet/internal/mysql"
)

// pools keeps the controller's connection pools to each set's servers between passes, so that an idle set's
// passes reuse connections instead of logging in anew every few seconds. A pool is replaced when its DSN
// changes (a new Pod IP, a rotated password) and closed when the set goes away.
type pools struct {
	mu   sync.Mutex
	sets map[types.NamespacedName][]pool
}

type pool struct {
	dsn    string
	server *mysql.Server
}

// servers returns one Server per DSN, by instance index, and why a pool could not be set up; an empty DSN (an
// instance that cannot be reached) gives nil, which clustering.ServerOps reports as unreachable.
func (p *pools) servers(key types.NamespacedName, f mysql.Flavor, dsns []string) ([]*mysql.Server, []error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sets == nil {
		p.sets = map[types.NamespacedName][]pool{}
	}
	old := p.sets[key]
	next := make([]pool, len(dsns))
	errs := make([]error, len(dsns))
	for i, d := range dsns {
		if i < len(old) && old[i].dsn == d && old[i].server != nil && old[i].server.Flavor().Engine() == f.Engine() {
			next[i] = old[i]
			old[i] = pool{}
			continue
		}
		if d == "" {
			continue
		}
		s, err := mysql.Open(f, d)
		if err != nil {
			errs[i] = err
			continue
		}
		next[i] = pool{dsn: d, server: s}
	}
	for _, o := range old {
		if o.server != nil {
			_ = o.server.Close()
		}
	}
	p.sets[key] = next
	out := make([]*mysql.Server, len(next))
	for i, n := range next {
		out[i] = n.server
	}
	return out, errs
}

// forget closes a set's pools.
func (p *pools) forget(key types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, o := range p.sets[key] {
		if o.server != nil {
			_ = o.server.Close()
		}
	}
	delete(p.sets, key)
}

// closeAll closes every pool, when the controller stops.
func (p *pools) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for key, set := range p.sets {
		for _, o := range set {
			if o.server != nil {
				_ = o.server.Close()
			}
		}
		delete(p.sets, key)
	}
}
