package controllers

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
)

// testPace is a pace whose clock and timer the test moves, and which records what it queues again.
type testPace struct {
	*pace
	clock  time.Time
	fire   func()
	after  time.Duration
	queued []types.NamespacedName
}

func newTestPace() *testPace {
	tp := &testPace{pace: newPace(), clock: time.Unix(1000, 0)}
	tp.now = func() time.Time { return tp.clock }
	tp.afterFunc = func(d time.Duration, f func()) *time.Timer {
		tp.after, tp.fire = d, f
		return time.NewTimer(time.Hour) // never read: the test fires f itself
	}
	return tp
}

func (tp *testPace) add(key types.NamespacedName) { tp.queued = append(tp.queued, key) }

func TestPaceMemberChangePassesWaitForPlacement(t *testing.T) {
	g := NewWithT(t)
	a, b, c := types.NamespacedName{Namespace: "db", Name: "a"}, types.NamespacedName{Namespace: "db", Name: "b"},
		types.NamespacedName{Namespace: "db", Name: "c"}
	tp := newTestPace()

	// With nothing in flight, a member change queues its MySQLCluster at once, and that pass runs.
	g.Expect(tp.memberChanged(a, tp.add)).To(BeTrue())
	run, end := tp.begin(a, true)
	g.Expect(run).To(BeTrue())

	// A member-change pass is not placement: another one queued meanwhile still runs at once.
	g.Expect(tp.memberChanged(b, tp.add)).To(BeTrue())
	run, endB := tp.begin(b, true)
	g.Expect(run).To(BeTrue())
	end()
	endB()

	// A placement pass (a new MySQLCluster) is in flight: member changes park their MySQLClusters.
	run, endPlacing := tp.begin(c, false)
	g.Expect(run).To(BeTrue())
	g.Expect(tp.memberChanged(a, tp.add)).To(BeFalse(), "queued beside a placement pass")
	g.Expect(tp.memberChanged(a, tp.add)).To(BeFalse(), "parked once only")
	g.Expect(tp.parked).To(HaveLen(1))

	// A member-change pass queued before the placement pass began waits when it is handed out.
	tp.placing = 0
	g.Expect(tp.memberChanged(b, tp.add)).To(BeTrue())
	tp.placing = 1
	run, _ = tp.begin(b, true)
	g.Expect(run).To(BeFalse(), "handed out beside a placement pass")
	g.Expect(tp.parked).To(HaveKey(b))

	// The last placement pass to end releases every parked pass, and they run even if placement starts again.
	g.Expect(tp.queued).To(BeEmpty())
	endPlacing()
	g.Expect(tp.queued).To(ConsistOf(a, b))
	g.Expect(tp.parked).To(BeEmpty())
	run, endPlacing = tp.begin(c, false)
	g.Expect(run).To(BeTrue())
	for _, key := range []types.NamespacedName{a, b} {
		run, end := tp.begin(key, true)
		g.Expect(run).To(BeTrue(), "released: %s", key)
		end()
	}
	endPlacing()
}

func TestPaceOtherReasonsNeverWait(t *testing.T) {
	g := NewWithT(t)
	a, c := types.NamespacedName{Namespace: "db", Name: "a"}, types.NamespacedName{Namespace: "db", Name: "c"}
	tp := newTestPace()
	run, endPlacing := tp.begin(c, false)
	g.Expect(run).To(BeTrue())

	// A MySQLCluster whose new spec has not been acted on, or that is being deleted, runs: that is placement.
	tp.changed[a] = mayWait
	run, end := tp.begin(a, false)
	g.Expect(run).To(BeTrue())
	g.Expect(tp.placing).To(Equal(2), "it counts as placement")
	end()

	// Drift in a member (or a spec change) for a parked MySQLCluster: its pass runs now and takes it off the
	// parked list, so that no second pass follows when placement ends.
	g.Expect(tp.memberChanged(a, tp.add)).To(BeFalse())
	tp.intent(a)
	g.Expect(tp.parked).To(BeEmpty())
	run, end = tp.begin(a, true)
	g.Expect(run).To(BeTrue())
	end()
	endPlacing()
	g.Expect(tp.queued).To(BeEmpty())

	// A MySQLCluster queued for another reason (here a new one, or drift) before a member change: the member
	// change neither parks nor queues it, and its queued pass runs as placement.
	run, endPlacing = tp.begin(c, false)
	g.Expect(run).To(BeTrue())
	tp.intent(a)
	g.Expect(tp.memberChanged(a, tp.add)).To(BeFalse(), "its queued pass does the member change's work")
	g.Expect(tp.parked).To(BeEmpty())
	run, end = tp.begin(a, true)
	g.Expect(run).To(BeTrue())
	g.Expect(tp.placing).To(Equal(2))
	end()
	endPlacing()
	g.Expect(tp.queued).To(BeEmpty())

	// A MySQLCluster that is gone leaves nothing behind.
	tp.intent(a)
	tp.forget(a)
	g.Expect(tp.wanted).To(BeEmpty())

	// A retry of a parked MySQLCluster (asked for by an earlier pass) waits for the release with it.
	run, endPlacing = tp.begin(c, false)
	g.Expect(run).To(BeTrue())
	g.Expect(tp.memberChanged(a, tp.add)).To(BeFalse())
	run, _ = tp.begin(a, true)
	g.Expect(run).To(BeFalse())
	endPlacing()
	g.Expect(tp.queued).To(ConsistOf(a))
}

func TestPaceWaitIsBounded(t *testing.T) {
	g := NewWithT(t)
	a, b, c := types.NamespacedName{Namespace: "db", Name: "a"}, types.NamespacedName{Namespace: "db", Name: "b"},
		types.NamespacedName{Namespace: "db", Name: "c"}
	tp := newTestPace()
	run, endPlacing := tp.begin(c, false) // placement that never ends
	g.Expect(run).To(BeTrue())
	g.Expect(tp.memberChanged(a, tp.add)).To(BeFalse())
	g.Expect(tp.after).To(Equal(memberChangeMaxWait))
	tp.clock = tp.clock.Add(time.Minute)
	g.Expect(tp.memberChanged(b, tp.add)).To(BeFalse())

	// The timer fires at a's bound: a is released, b waits for its own, and the timer is set for it.
	tp.clock = tp.clock.Add(memberChangeMaxWait - time.Minute)
	tp.fire()
	g.Expect(tp.queued).To(ConsistOf(a))
	g.Expect(tp.parked).To(HaveKey(b))
	g.Expect(tp.after).To(Equal(time.Minute))
	tp.clock = tp.clock.Add(time.Minute)
	tp.fire()
	g.Expect(tp.queued).To(ConsistOf(a, b))
	g.Expect(tp.parked).To(BeEmpty())
	endPlacing()
}

func TestNilPaceWaitsForNothing(t *testing.T) {
	g := NewWithT(t)
	var p *pace
	key := types.NamespacedName{Namespace: "db", Name: "a"}
	g.Expect(p.memberChanged(key, nil)).To(BeTrue())
	run, end := p.begin(key, true)
	g.Expect(run).To(BeTrue())
	end()
	p.intent(key)
}
