package controllers

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

var (
	memberReconciles = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mysqlfleet_member_reconciles_total",
		Help: "Reconciles of a MySQLCluster in one member, by the member's resulting phase.",
	}, []string{"member", "phase"})
	applies = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mysqlfleet_member_applies_total",
		Help: "Server-side applies sent to a member, by kind and action (Create, Update, error). Unchanged objects are not sent.",
	}, []string{"member", "kind", "action"})

	clusterPhase = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mysqlfleet_cluster_phase",
		Help: "1 for the MySQLCluster's current status.phase, 0 for each other phase.",
	}, []string{"cluster_namespace", "cluster_name", "phase"})
)

// phases are every value of status.phase, each a series of mysqlfleet_cluster_phase, so that a query for one
// phase never finds a gap.
var phases = []v1alpha1.Phase{v1alpha1.PhasePending, v1alpha1.PhaseProgressing, v1alpha1.PhaseReady,
	v1alpha1.PhaseDegraded, v1alpha1.PhasePaused, v1alpha1.PhaseUnreachable, v1alpha1.PhaseDeleting}

func init() {
	metrics.Registry.MustRegister(memberReconciles, applies, clusterPhase)
}

// reportPhase sets the MySQLCluster's phase series. The labels are not namespace and name: the ServiceMonitor's
// scrape adds a namespace label of its own, and Prometheus would rename ours.
func reportPhase(c *v1alpha1.MySQLCluster, phase v1alpha1.Phase) {
	for _, p := range phases {
		v := 0.0
		if p == phase {
			v = 1
		}
		clusterPhase.WithLabelValues(c.Namespace, c.Name, string(p)).Set(v)
	}
}

// forgetPhase drops the series of a MySQLCluster that is gone.
func forgetPhase(key types.NamespacedName) {
	clusterPhase.DeletePartialMatch(prometheus.Labels{"cluster_namespace": key.Namespace, "cluster_name": key.Name})
}
