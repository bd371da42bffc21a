package controllers

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
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
	memberReachable = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mysqlfleet_member_reachable",
		Help: "1 when the member answered the last reconcile, 0 when it did not.",
	}, []string{"member"})
)

func init() {
	metrics.Registry.MustRegister(memberReconciles, applies, memberReachable)
}
