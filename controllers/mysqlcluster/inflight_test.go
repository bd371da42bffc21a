package mysqlcluster_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/controllers/mysqlcluster"
	mcfleet "github.com/mysqlfleet/mysqlfleet/internal/fleet"
)

// A burst of MySQLClusters never has more requests outstanding against one member than the bound
// (--member-max-in-flight): the rest wait in the manager for a slot. Without the bound the burst's passes send
// dozens at once (32 reconciles in flight, each applying a member's objects in concurrent waves), and the
// member's API server queues them. The figures come from the manager's mysqlfleet_member_request_concurrency,
// observed on every request sent, so a single request past the bound shows.
func TestBurstStaysWithinMemberBound(t *testing.T) {
	g := NewWithT(t)
	const n = 40
	keys := make([]client.ObjectKey, 0, n)
	for i := range n {
		c := newCluster("burst", fmt.Sprintf("db-%02d", i))
		create(t, c)
		keys = append(keys, client.ObjectKeyFromObject(c))
	}
	for _, key := range keys {
		eventuallyApplied(g, key)
	}

	bound := float64(mcfleet.DefaultMaxInFlight)
	for _, member := range []string{aws, "azure-westeurope", gcp} {
		h := requestConcurrency(g, member)
		g.Expect(h.count).To(BeNumerically(">", 0), "requests observed in %s", member)
		g.Expect(h.above(bound)).To(BeZero(), "requests sent to %s with more than %v outstanding", member, bound)
		// The burst did press against the bound: without it this test could not fail.
		g.Expect(h.above(bound/2)).To(BeNumerically(">", 0), "requests sent to %s with more than %v outstanding", member, bound/2)
	}

	for _, key := range keys {
		c := get(g, key)
		g.Expect(hub.Delete(context.Background(), c)).To(Succeed())
	}
	for _, key := range keys {
		eventuallyGone(g, key)
	}
}

// eventuallyApplied waits until every member of the MySQLCluster has applied its current generation: every
// request of the burst has been sent, which is all the bound is about. Ready would also wait for the members'
// controllers to run the Pods, which on a loaded machine takes longer than the burst itself.
func eventuallyApplied(g Gomega, key client.ObjectKey) {
	g.Eventually(func(g Gomega) {
		c := get(g, key)
		g.Expect(c.Status.Members).To(HaveLen(3))
		for _, m := range c.Status.Members {
			applied := meta.FindStatusCondition(m.Conditions, v1alpha1.MemberConditionApplied)
			g.Expect(applied).NotTo(BeNil(), "member %s", m.Name)
			g.Expect(applied.Status).To(Equal(metav1.ConditionTrue), "member %s", m.Name)
			g.Expect(applied.ObservedGeneration).To(Equal(c.Generation), "member %s", m.Name)
		}
	}, 2*time.Minute, 250*time.Millisecond).Should(Succeed())
}

// histogram is one member's series of a histogram: its count and cumulative buckets.
type histogram struct {
	count   uint64
	buckets map[float64]uint64
}

// above is how many observations were greater than v, a bucket bound.
func (h histogram) above(v float64) uint64 {
	upTo, ok := h.buckets[v]
	if !ok {
		panic(fmt.Sprintf("no bucket bound %v", v))
	}
	return h.count - upTo
}

func requestConcurrency(g Gomega, member string) histogram {
	h := histogram{buckets: map[float64]uint64{}}
	for _, m := range managerMetrics(g)["mysqlfleet_member_request_concurrency"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "member" && l.GetValue() == member {
				h.count = m.GetHistogram().GetSampleCount()
				for _, b := range m.GetHistogram().GetBucket() {
					h.buckets[b.GetUpperBound()] = b.GetCumulativeCount()
				}
			}
		}
	}
	return h
}

// The manager's Workers option is how many MySQLClusters the controller reconciles at once (controller-runtime
// reports its workers per controller); the suite sets one more than the default.
func TestWorkers(t *testing.T) {
	g := NewWithT(t)
	// controller-runtime reports them once the controller has started.
	g.Eventually(func() []float64 {
		var workers []float64
		for _, m := range managerMetrics(g)["controller_runtime_max_concurrent_reconciles"].GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == "mysqlcluster" {
					workers = append(workers, m.GetGauge().GetValue())
				}
			}
		}
		return workers
	}).WithTimeout(time.Minute).Should(Equal([]float64{mysqlcluster.DefaultWorkers + 1}))
}
