package mysqlcluster

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

// Rows that owners write one after another within rowsSettle ask for one summary pass, rowsSettle after the
// first of them; another MySQLCluster's rows ask for their own.
func TestRowsSettledSummarisesRowsTogether(t *testing.T) {
	g := NewWithT(t)
	clock := clocktesting.NewFakeClock(time.Unix(1000, 0))
	q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[mcreconcile.Request](),
		workqueue.TypedRateLimitingQueueConfig[mcreconcile.Request]{Clock: clock})
	defer q.ShutDown()
	h := rowsSettled("", nil)
	update := func(name string) {
		c := &v1alpha1.MySQLCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
		h.Update(context.Background(), event.TypedUpdateEvent[client.Object]{ObjectOld: c, ObjectNew: c}, q)
	}
	// The queue's loop reads the clock, then sets a timer for its next item from that reading: a step in between
	// would put the timer a step late. So each step waits for the loop to have its timer (the fake clock's
	// waiters: the queue's heartbeat and that timer).
	heartbeat := clock.Waiters()
	parked := func() { g.Eventually(clock.Waiters).Should(Equal(heartbeat + 1)) }
	update("a")
	parked()
	clock.Step(rowsSettle / 2)
	update("a")
	update("b")
	g.Consistently(q.Len).WithTimeout(200*time.Millisecond).Should(BeZero(), "nothing before rowsSettle")

	parked()
	clock.Step(rowsSettle / 2)
	g.Eventually(q.Len).Should(Equal(1), "a's rows, once")
	item, _ := q.Get()
	g.Expect(item.Name).To(Equal("a"))
	q.Done(item)

	parked()
	clock.Step(rowsSettle / 2)
	g.Eventually(q.Len).Should(Equal(1), "b's rows")
	item, _ = q.Get()
	g.Expect(item.Name).To(Equal("b"))
	q.Done(item)
	clock.Step(rowsSettle)
	g.Consistently(q.Len).WithTimeout(200*time.Millisecond).Should(BeZero(), "a's second rows were summarised by the first pass")
}

// While a generation's rows come in and tell of progress only, the summary waits for the rest, at most
// summaryHold from the first pass it held back; the first summary, bad news and complete rows never wait.
func TestHoldSummaryWaitsForTheRemainingRows(t *testing.T) {
	g := NewWithT(t)
	now := time.Unix(1000, 0)
	applied := func(member string, gen int64, phase v1alpha1.Phase) v1alpha1.MemberStatus {
		return v1alpha1.MemberStatus{Name: member, Phase: phase, Conditions: []metav1.Condition{{
			Type: v1alpha1.MemberConditionApplied, Status: metav1.ConditionTrue, ObservedGeneration: gen}}}
	}
	// scopeWith is a pass over a MySQLCluster of generation 2 whose last summary said "0/3" and whose rows are
	// now rows; its summary says "1/3".
	scopeWith := func(rows ...v1alpha1.MemberStatus) *scope {
		c := &v1alpha1.MySQLCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db", Generation: 2}}
		c.Status = v1alpha1.MySQLClusterStatus{ObservedGeneration: 1, ReadyMembers: "1/3", Members: rows}
		before := c.Status.DeepCopy()
		before.ReadyMembers = "0/3"
		return &scope{cluster: c, before: before, members: rows}
	}
	key := client.ObjectKey{Namespace: "ns", Name: "db"}
	incomplete := func() *scope {
		return scopeWith(applied("a", 2, v1alpha1.PhaseReady), applied("b", 1, v1alpha1.PhaseProgressing),
			v1alpha1.MemberStatus{Name: "c", Phase: v1alpha1.PhaseProgressing})
	}

	r := &MySQLClusterReconciler{}
	g.Expect(r.holdSummary(key, incomplete(), now)).To(Equal(summaryHold), "rows missing or of generation 1: wait")
	g.Expect(r.holdSummary(key, incomplete(), now.Add(4*time.Second))).To(Equal(summaryHold-4*time.Second),
		"the bound counts from the first pass held back")
	g.Expect(r.holdSummary(key, incomplete(), now.Add(summaryHold))).To(BeZero(), "the bound reached: write")
	g.Expect(r.holdSummary(key, incomplete(), now.Add(summaryHold+time.Second))).To(Equal(summaryHold),
		"once written, the next change waits anew")

	r = &MySQLClusterReconciler{}
	complete := scopeWith(applied("a", 2, v1alpha1.PhaseReady), applied("b", 2, v1alpha1.PhaseProgressing))
	g.Expect(r.holdSummary(key, complete, now)).To(BeZero(), "every row of this generation: write")

	unreachable := incomplete()
	unreachable.members[1].Phase = v1alpha1.PhaseUnreachable
	g.Expect(r.holdSummary(key, unreachable, now)).To(BeZero(), "an unreachable member is news at once")

	failing := incomplete()
	failing.members[1].Phase = v1alpha1.PhaseDegraded
	g.Expect(r.holdSummary(key, failing, now)).To(BeZero(), "a failing member is news at once")

	specErr := incomplete()
	specErr.specErr = errors.New("bad schedule")
	g.Expect(r.holdSummary(key, specErr, now)).To(BeZero(), "a spec error is news at once")

	first := incomplete()
	first.before = &v1alpha1.MySQLClusterStatus{}
	g.Expect(r.holdSummary(key, first, now)).To(BeZero(), "the first summary: the owners wait for it")

	same := incomplete()
	same.before.ReadyMembers = "1/3"
	g.Expect(r.holdSummary(key, same, now)).To(BeZero(), "nothing to write, nothing held")
	g.Expect(r.holdSummary(key, incomplete(), now.Add(time.Second))).To(Equal(summaryHold),
		"the hold begins with the first pass that has something to write")
}
