package member

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

// semiSyncEnabled reads, as root, whether Pod i's server has semi-sync on as a source.
func (s *set) semiSyncEnabled(g Gomega, i int) string {
	var name, value string
	g.Expect(s.server(i).OpenRoot().QueryRow("SHOW GLOBAL VARIABLES LIKE 'rpl_semi_sync_master_enabled'").
		Scan(&name, &value)).To(Succeed())
	return value
}

// Durability Preferred: with both replicas' servers stopped, the member controller switches the primary's
// semi-sync off, writes go on being acknowledged (asynchronously) and the report shows the window; once the
// replicas are back and in sync, semi-sync is on again and the window closes. Every write acknowledged before
// the window and after it is on the replicas; those acknowledged during it need not have been, and a failover
// then could have lost them (that is what Preferred allows), though here the replicas catch up with them too.
func TestPreferredDurabilityGoesOnWithoutReplicas(t *testing.T) {
	g := NewWithT(t)
	e := startEnv(t)
	s := e.startSet("preferred", 3)
	g.Expect(e.c.Patch(e.ctx, s.sts.DeepCopy(), client.RawPatch(types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"`+v1alpha1.DurabilityAnnotation+`":"Preferred"}}}`)))).To(Succeed())
	s.waitFormed(g, 0, 1, 2)
	ws := s.startWriters(2)
	waitEachAcks(g, ws, 30)
	var before []int
	for _, w := range ws {
		before = append(before, w.Acked()...)
	}

	s.server(1).Stop()
	s.server(2).Stop()
	waitEachAcks(g, ws, 30) // acknowledged by the primary alone
	g.Eventually(func() *v1alpha1.ReplicationReport { return s.report() }, convergeWithin, 100*time.Millisecond).
		Should(And(HaveField("Async", ContainSubstring("durability Preferred")),
			HaveField("AsyncSince", Not(BeNil())), HaveField("WritesBlocked", BeEmpty())))
	g.Expect(s.semiSyncEnabled(g, 0)).To(Equal("OFF"))

	s.server(1).Restart()
	s.server(2).Restart()
	g.Eventually(func() string { return s.semiSyncEnabled(g, 0) }, convergeWithin, 100*time.Millisecond).
		Should(Equal("ON"))
	g.Eventually(func() *v1alpha1.ReplicationReport { return s.report() }, convergeWithin, 100*time.Millisecond).
		Should(And(HaveField("Async", BeEmpty()), HaveField("AsyncSince", BeNil())))
	marks := make([]int, len(ws))
	for k, w := range ws {
		marks[k] = len(w.Acked())
	}
	waitEachAcks(g, ws, 30)
	s.waitFormed(g, 0, 1, 2)
	stopWriters(t, ws)
	after := before
	for k, w := range ws {
		after = append(after, w.Acked()[marks[k]:]...)
	}
	for _, r := range []int{1, 2} {
		g.Eventually(func() []int { return s.missing(g, r, after) }, convergeWithin, 100*time.Millisecond).
			Should(BeEmpty(), "acknowledged writes from outside the window missing on %s", s.pod(r))
	}
}

// Durability Required (no annotation): with both replicas stopped, no write is acknowledged and the report says
// why; semi-sync stays on.
func TestRequiredDurabilityBlocksWritesWithoutReplicas(t *testing.T) {
	g := NewWithT(t)
	e := startEnv(t)
	s := e.startSet("required", 3)
	s.waitFormed(g, 0, 1, 2)
	w := s.startWriter(1)
	waitAcks(g, w, 20)

	s.server(1).Stop()
	s.server(2).Stop()
	g.Eventually(func() string { return s.report().WritesBlocked }, convergeWithin, 100*time.Millisecond).
		ShouldNot(BeEmpty())
	g.Expect(w.WaitAcks(1, 3*time.Second)).NotTo(Succeed(), "a write was acknowledged with no replica up")
	g.Expect(s.report().Async).To(BeEmpty())
	g.Expect(s.semiSyncEnabled(g, 0)).To(Equal("ON"))
}
