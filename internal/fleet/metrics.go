package fleet

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// memberReachable is the registry's own verdict on each registered member, the one placement and status act on.
var memberReachable = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "mysqlfleet_member_reachable",
	Help: "1 while the member is engaged and answers; 0 while it is registered but refused, unreachable or not engaged.",
}, []string{"member"})

func init() {
	metrics.Registry.MustRegister(memberReachable)
}

// usable is the verdict: engaged, answering, and registered with valid facts. Callers hold p.mu.
func (m *member) usable() bool {
	return m.cl != nil && m.err == nil && m.factErr == nil
}

// report sets a member's gauge from its verdict; every change of cl, err or factErr is followed by a report.
// Callers hold p.mu, so that two changes cannot report in the opposite order.
func (p *Provider) report(name string, m *member) {
	v := 0.0
	if m.usable() {
		v = 1
	}
	memberReachable.WithLabelValues(name).Set(v)
}

// forget drops the gauge of a member whose registration was removed: a member that no longer exists is
// neither reachable nor unreachable.
func forget(name string) {
	memberReachable.DeleteLabelValues(name)
}
