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
)

func init() {
	metrics.Registry.MustRegister(memberReconciles, applies)
}
