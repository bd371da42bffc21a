package mysqlcluster_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

// mysqlfleet_cluster_phase has one series per phase for each MySQLCluster, 1 for its current phase, and none
// once the MySQLCluster is gone: what the MySQLFleetClusterNotReady alert reads. The phase here is Progressing:
// the Pods are ready but no member controller runs in this suite's members to report a replicating set.
func TestClusterPhaseMetric(t *testing.T) {
	g := NewWithT(t)
	c := newCluster("phase-metric", "db", func(c *v1alpha1.MySQLCluster) { c.Spec.Placement.Members = []string{aws} })
	create(t, c)
	key := client.ObjectKeyFromObject(c)
	eventuallyConverged(g, key)
	g.Eventually(func() map[string]float64 { return phaseSeries(g, key) }, 30*time.Second, 250*time.Millisecond).Should(Equal(map[string]float64{
		"Pending": 0, "Restoring": 0, "Progressing": 1, "Ready": 0, "Degraded": 0, "Paused": 0, "Unreachable": 0, "Deleting": 0,
	}))
	g.Expect(hub.Delete(context.Background(), c)).To(Succeed())
	eventuallyGone(g, key)
	g.Eventually(func() map[string]float64 { return phaseSeries(g, key) }, 30*time.Second, 250*time.Millisecond).Should(BeEmpty())
}

// phaseSeries reads the manager's mysqlfleet_cluster_phase series of one MySQLCluster, by phase.
func phaseSeries(g Gomega, key client.ObjectKey) map[string]float64 {
	out := map[string]float64{}
	for _, m := range managerMetrics(g)["mysqlfleet_cluster_phase"].GetMetric() {
		if labels := labelsOf(m); labels["cluster_namespace"] == key.Namespace && labels["cluster_name"] == key.Name {
			out[labels["phase"]] = m.GetGauge().GetValue()
		}
	}
	return out
}
