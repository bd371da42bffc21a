package shard

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	// membersOwned is how many members this replica works in: the claims it holds.
	membersOwned = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "mysqlfleet_members_owned",
		Help: "Members whose claims this replica holds (sharded): the members it engages, caches and reconciles.",
	})
	// replicasLive is how many replicas this one sees alive, itself included.
	replicasLive = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "mysqlfleet_replicas_live",
		Help: "Manager replicas whose peer Lease this replica sees live, itself included (sharded).",
	})
)

func init() {
	metrics.Registry.MustRegister(membersOwned, replicasLive)
}
