package mysqlcluster

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
	g.Expect(tp.memberChanged(a, nil, tp.add)).To(BeTrue())
	run, _, end := tp.begin(a, true)
	g.Expect(run).To(BeTrue())

	// A member-change pass is not placement: another one queued meanwhile still runs at once.
	g.Expect(tp.memberChanged(b, nil, tp.add)).To(BeTrue())
	run, _, endB := tp.begin(b, true)
	g.Expect(run).To(BeTrue())
	end()
	endB()

	// A placement pass (a new MySQLCluster) is in flight: member changes park their MySQLClusters.
	run, _, endPlacing := tp.begin(c, false)
	g.Expect(run).To(BeTrue())
	g.Expect(tp.memberChanged(a, nil, tp.add)).To(BeFalse(), "queued beside a placement pass")
	g.Expect(tp.memberChanged(a, nil, tp.add)).To(BeFalse(), "parked once only")
	g.Expect(tp.parked).To(HaveLen(1))

	// A member-change pass queued before the placement pass began waits when it is handed out.
	tp.placing = 0
	g.Expect(tp.memberChanged(b, nil, tp.add)).To(BeTrue())
	tp.placing = 1
	run, _, _ = tp.begin(b, true)
	g.Expect(run).To(BeFalse(), "handed out beside a placement pass")
	g.Expect(tp.parked).To(HaveKey(b))

	// The last placement pass to end releases every parked pass, and they run even if placement starts again.
	g.Expect(tp.queued).To(BeEmpty())
	endPlacing()
	g.Expect(tp.queued).To(ConsistOf(a, b))
	g.Expect(tp.parked).To(BeEmpty())
	run, _, endPlacing = tp.begin(c, false)
	g.Expect(run).To(BeTrue())
	for _, key := range []types.NamespacedName{a, b} {
		run, _, end := tp.begin(key, true)
		g.Expect(run).To(BeTrue(), "released: %s", key)
		end()
	}
	endPlacing()
}

func TestPaceOtherReasonsNeverWait(t *testing.T) {
	g := NewWithT(t)
	a, c := types.NamespacedName{Namespace: "db", Name: "a"}, types.NamespacedName{Namespace: "db", Name: "c"}
	tp := newTestPace()
	run, _, endPlacing := tp.begin(c, false)
	g.Expect(run).To(BeTrue())

	// A MySQLCluster whose new spec has not been acted on, or that is being deleted, runs: that is placement.
	tp.changed[a] = mayWait
	run, _, end := tp.begin(a, false)
	g.Expect(run).To(BeTrue())
	g.Expect(tp.placing).To(Equal(2), "it counts as placement")
	end()

	// Drift in a member (or a spec change) for a parked MySQLCluster: its pass runs now and takes it off the
	// parked list, so that no second pass follows when placement ends.
	g.Expect(tp.memberChanged(a, nil, tp.add)).To(BeFalse())
	tp.intent(a)
	g.Expect(tp.parked).To(BeEmpty())
	run, _, end = tp.begin(a, true)
	g.Expect(run).To(BeTrue())
	end()
	endPlacing()
	g.Expect(tp.queued).To(BeEmpty())

	// A MySQLCluster queued for another reason (here a new one, or drift) before a member change: the member
	// change neither parks nor queues it, and its queued pass runs as placement.
	run, _, endPlacing = tp.begin(c, false)
	g.Expect(run).To(BeTrue())
	tp.intent(a)
	g.Expect(tp.memberChanged(a, nil, tp.add)).To(BeFalse(), "its queued pass does the member change's work")
	g.Expect(tp.parked).To(BeEmpty())
	run, _, end = tp.begin(a, true)
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
	run, _, endPlacing = tp.begin(c, false)
	g.Expect(run).To(BeTrue())
	g.Expect(tp.memberChanged(a, nil, tp.add)).To(BeFalse())
	run, _, _ = tp.begin(a, true)
	g.Expect(run).To(BeFalse())
	endPlacing()
	g.Expect(tp.queued).To(ConsistOf(a))
}

func TestPaceWaitIsBounded(t *testing.T) {
	g := NewWithT(t)
	a, b, c := types.NamespacedName{Namespace: "db", Name: "a"}, types.NamespacedName{Namespace: "db", Name: "b"},
		types.NamespacedName{Namespace: "db", Name: "c"}
	tp := newTestPace()
	run, _, endPlacing := tp.begin(c, false) // placement that never ends
	g.Expect(run).To(BeTrue())
	g.Expect(tp.memberChanged(a, nil, tp.add)).To(BeFalse())
	g.Expect(tp.after).To(Equal(memberChangeMaxWait))
	tp.clock = tp.clock.Add(time.Minute)
	g.Expect(tp.memberChanged(b, nil, tp.add)).To(BeFalse())

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
	g.Expect(p.memberChanged(key, nil, nil)).To(BeTrue())
	run, _, end := p.begin(key, true)
	g.Expect(run).To(BeTrue())
	end()
	p.intent(key)
}

func TestPaceScopesMemberChangePasses(t *testing.T) {
	g := NewWithT(t)
	a, c := types.NamespacedName{Namespace: "db", Name: "a"}, types.NamespacedName{Namespace: "db", Name: "c"}
	tp := newTestPace()
	set := func(ms ...string) map[string]bool {
		out := map[string]bool{}
		for _, m := range ms {
			out[m] = true
		}
		return out
	}

	// Member changes queued before the pass begins add up; the pass gets them, and the next pass starts afresh.
	g.Expect(tp.memberChanged(a, set("x"), tp.add)).To(BeTrue())
	tp.memberChanged(a, set("y"), tp.add)
	run, only, end := tp.begin(a, true)
	g.Expect(run).To(BeTrue())
	g.Expect(only).To(Equal(set("x", "y")))
	end()
	run, only, end = tp.begin(a, true)
	g.Expect(run).To(BeTrue())
	g.Expect(only).To(BeEmpty(), "a pass nothing asked for (a timer's) looks at no member")
	g.Expect(only).NotTo(BeNil(), "a pass nothing asked for (a timer's) looks at no member")
	end()

	// Another reason for the pass, before or after the member change: every member.
	tp.memberChanged(a, set("x"), tp.add)
	tp.intent(a)
	_, only, end = tp.begin(a, true)
	g.Expect(only).To(BeNil())
	end()
	tp.intent(a)
	g.Expect(tp.memberChanged(a, set("x"), tp.add)).To(BeFalse())
	_, only, end = tp.begin(a, true)
	g.Expect(only).To(BeNil())
	end()

	// A pass over every member that asked to be retried: the passes until one ends without asking again look at
	// every member, even if a member change queued them.
	tp.retry(a, nil)
	tp.memberChanged(a, set("x"), tp.add)
	_, only, end = tp.begin(a, true)
	g.Expect(only).To(BeNil())
	end()
	_, only, end = tp.begin(a, true)
	g.Expect(only).To(BeNil(), "still pending: the pass before did not say it was done")
	end()
	tp.done(a, set("x"))
	_, only, end = tp.begin(a, true)
	end()
	g.Expect(only).To(BeNil(), "a pass over some members does not do a retry of every member")
	tp.done(a, nil)
	_, only, end = tp.begin(a, true)
	end()
	g.Expect(only).To(BeEmpty(), "done")

	// A pass over some members that asked to be retried: the passes until one ends without asking again look
	// at those members too; the retry's own requeue, once another pass did it (a member that came back), looks
	// at no member.
	tp.retry(a, set("y"))
	tp.retry(a, set("z"))
	tp.memberChanged(a, set("x"), tp.add)
	_, only, end = tp.begin(a, true)
	end()
	g.Expect(only).To(Equal(set("x", "y", "z")))
	tp.done(a, set("x", "y"))
	_, only, end = tp.begin(a, true)
	end()
	g.Expect(only).To(Equal(set("z")), "the retry's requeue looks where a retry is still pending")
	tp.done(a, set("z"))
	_, only, end = tp.begin(a, true)
	end()
	g.Expect(only).To(BeEmpty())
	g.Expect(tp.retrying).To(BeEmpty())

	// A spec not yet acted on: every member.
	tp.memberChanged(a, set("x"), tp.add)
	_, only, end = tp.begin(a, false)
	g.Expect(only).To(BeNil())
	end()

	// Parked behind a placement pass, the member changes are kept for the pass that runs once released.
	_, _, endPlacing := tp.begin(c, false)
	g.Expect(tp.memberChanged(a, set("x"), tp.add)).To(BeFalse())
	tp.memberChanged(a, set("y"), tp.add)
	endPlacing()
	g.Expect(tp.queued).To(ConsistOf(a))
	run, only, end = tp.begin(a, true)
	g.Expect(run).To(BeTrue())
	g.Expect(only).To(Equal(set("x", "y")))
	end()

	// An object that changed in a member asks for a pass there, which does not wait; member changes join it.
	_, _, endPlacing = tp.begin(c, false)
	tp.drift(a, "x")
	g.Expect(tp.memberChanged(a, set("y"), tp.add)).To(BeFalse(), "its queued pass does the member change's work")
	run, only, end = tp.begin(a, true)
	g.Expect(run).To(BeTrue(), "drift is repaired beside placement passes")
	g.Expect(only).To(Equal(set("x", "y")))
	end()
	tp.drift(a, "x")
	tp.intent(a)
	_, only, end = tp.begin(a, true)
	g.Expect(only).To(BeNil(), "the MySQLCluster changed too")
	end()
	endPlacing()

	// A MySQLCluster that is gone leaves nothing behind.
	tp.memberChanged(a, set("x"), tp.add)
	tp.retry(a, set("x"))
	tp.forget(a)
	g.Expect(tp.scope).To(BeEmpty())
	g.Expect(tp.whole).To(BeEmpty())
	g.Expect(tp.retrying).To(BeEmpty())
}
