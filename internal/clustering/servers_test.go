package clustering_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/mysqlfleet/mysqlfleet/internal/clustering"
)

// TestBootstrapFormsAPrimaryAndTwoReplicas forms the set from three fresh servers through the engine, checks
// that rows written to the primary reach both replicas, and that a steady set gets no write at all.
func TestBootstrapFormsAPrimaryAndTwoReplicas(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	f := newBootstrappedFleet(t, 3)
	g.Expect(f.decisions[0]).To(Equal(clustering.Decision{Kind: clustering.Bootstrap, From: -1, To: 0}))
	g.Expect(f.primaryIndex()).To(Equal(0))

	primary := f.status(0)
	g.Expect(primary.ReadOnly).To(BeFalse())
	g.Expect(primary.SemiSync.SourceEnabled).To(BeTrue())
	g.Expect(primary.SemiSync.WaitPoint).To(Equal("AFTER_SYNC"))
	g.Expect(primary.SemiSync.Timeout).To(BeNumerically(">", 49*24*time.Hour))
	g.Eventually(func() int { return f.status(0).SemiSync.Replicas }).WithTimeout(30*time.Second).
		Should(Equal(2), "both replicas connect as semi-sync replicas")

	f.insert(0, ints(1, 50)...)
	f.waitReplicas(0)
	want := f.ids(0)
	g.Expect(want).To(HaveLen(50))
	for i := 1; i < 3; i++ {
		got, want := f.sameRows(i, 0)
		g.Expect(got).To(Equal(want), "replica %d", i)
		st := f.status(i)
		g.Expect(st.ReadOnly).To(BeTrue())
		g.Expect(st.Replica.SourcePort).To(Equal(f.servers[0].Port))
	}
	g.Expect(f.status(0).SemiSync.AsyncCommits).To(BeZero(), "commits returned without an acknowledgement")

	// Steady: a pass reads and writes nothing, however often it runs.
	f.ops = readsOnly{Ops: f.server, t: t}
	for range 3 {
		plan, err := f.pass()
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(plan.Decision.Kind).To(Equal(clustering.Steady))
		g.Expect(plan.Steps).To(BeEmpty())
		g.Expect(plan.Report.Primary).To(Equal(0))
		g.Expect(plan.Report.InSync()).To(Equal([]int{1, 2}))
		g.Expect(plan.Report.Errant()).To(BeEmpty())
		g.Expect(plan.Report.LastError).To(BeEmpty())
	}
}

// TestFailoverUnderWritesKeepsEveryAcknowledgedWrite kills the primary with SIGKILL while a client commits
// one row after another, runs the engine until it is steady, and checks that every write the client was told
// was committed is on the new primary, that writes go on there, and that the old primary, restarted, rejoins
// as a replica or, if it holds a commit no replica received, is kept out as errant.
func TestFailoverUnderWritesKeepsEveryAcknowledgedWrite(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	f := newBootstrappedFleet(t, 3)
	w := f.startWriter(1, f.primaryIndex)
	w.waitAcks(200)

	f.servers[0].Kill() // returns once the process is gone
	killed := time.Now()
	f.converge()
	g.Expect(f.decided(clustering.FailoverStarted, 0, -1)).To(BeTrue(), "decisions %v", f.decisions)
	g.Expect(f.decided(clustering.Failover, 0, -1)).To(BeTrue(), "decisions %v", f.decisions)
	p := f.primaryIndex()
	g.Expect(p).NotTo(Equal(0))
	other := 3 - p

	w.waitAcks(100) // writes resume on the new primary
	at, where := w.FirstAckAfter(killed)
	t.Logf("killed to first acknowledged write on instance %d: %s", where, at.Sub(killed).Round(time.Millisecond))
	g.Expect(where).To(Equal(p))
	w.Stop()
	acked := w.Acked()
	t.Logf("writer: %s", w)
	g.Expect(f.missing(p, acked)).To(BeEmpty(), "acknowledged writes lost by the failover")
	f.waitReplicas(p, 0)
	got, want := f.sameRows(other, p)
	g.Expect(got).To(Equal(want))

	restart(t, f.servers[0])
	plan := f.converge()
	in := plan.Report.Instances[0]
	t.Logf("the old primary came back as %s (errant %q)", in.Role, in.Errant)
	g.Expect(f.status(0).ReadOnly).To(BeTrue())
	switch in.Role {
	case clustering.RoleReplica:
		f.waitReplicas(p)
		got, want := f.sameRows(0, p)
		g.Expect(got).To(Equal(want))
		f.until("the old primary in sync", func(p clustering.Plan) bool {
			return p.Decision.Kind == clustering.Steady && len(p.Report.InSync()) == 2
		})
	case clustering.RoleErrant:
		// Its extra commit was in flight at the kill; the client retried it on the new primary.
		g.Expect(in.Errant).To(HavePrefix(fmt.Sprintf("0-%d-", f.servers[0].ServerID)))
		for id := range f.ids(0) {
			g.Expect(f.ids(p)).To(HaveKey(id))
		}
		g.Expect(plan.Report.InSync()).To(Equal([]int{other}))
	default:
		t.Fatalf("the old primary is %s\n%s", in.Role, f.describe())
	}
}

// TestFailoverChoosesTheReplicaThatHasEverything stops replica 1 (the lowest index) while the primary takes
// writes that only replica 2 acknowledges, then kills the primary: the engine must promote replica 2.
func TestFailoverChoosesTheReplicaThatHasEverything(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	f := newBootstrappedFleet(t, 3)
	f.insert(0, ints(1, 10)...)
	f.waitReplicas(0)
	g.Expect(f.admin[1].StopReplica(context.Background())).To(Succeed())
	f.insert(0, ints(11, 40)...)

	f.servers[0].Kill()
	f.converge()
	g.Expect(f.decided(clustering.Failover, 0, 2)).To(BeTrue(), "decisions %v", f.decisions)
	g.Expect(f.missing(2, ints(1, 50))).To(BeEmpty())
	f.insert(2, ints(51, 10)...)
	f.waitReplicas(2, 0)
	g.Expect(f.replicated(1, ints(1, 60))).To(BeEmpty(), "the stopped replica caught up from the new primary")
}

// TestFailoverFinishedByAStandbyWhenTheControllerDies kills the primary under writes, lets the member
// controller die at a step of the failover (before it records the new primary, before it promotes it, before
// it repoints the other replica), and hands over to a standby that starts from the record as it was saved:
// it must finish the failover with one writable primary and every acknowledged write.
func TestFailoverFinishedByAStandbyWhenTheControllerDies(t *testing.T) {
	t.Parallel()
	for _, at := range []clustering.Action{clustering.ActionSaveRecord, clustering.ActionPromote,
		clustering.ActionReplicate} {
		t.Run(string(at), func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			f := newBootstrappedFleet(t, 3)
			w := f.startWriter(1, f.primaryIndex)
			w.waitAcks(100)
			d := &dying{Ops: f.server, at: at}
			f.ops = d
			d.arm()
			f.servers[0].Kill()
			f.until("the controller's death", func(clustering.Plan) bool { return d.dead() })
			t.Logf("died at %s with record %s", at, f.record())

			f.ops = f.server // the standby
			handover := len(f.steps)
			f.converge()
			// The record moves before a new primary turns writable: the standby never finds a writable
			// instance the record does not name, and never has to fence one (nor fail over twice).
			g.Expect(f.steps[handover:]).NotTo(ContainElement(HaveField("Action", clustering.ActionFence)))
			p := f.primaryIndex()
			g.Expect(p).NotTo(Equal(0))
			g.Expect(f.writable()).To(Equal([]int{p}))
			w.waitAcks(50)
			w.Stop()
			g.Expect(f.missing(p, w.Acked())).To(BeEmpty(), "acknowledged writes lost")
			f.waitReplicas(p, 0)
			got, want := f.sameRows(3-p, p)
			g.Expect(got).To(Equal(want))
		})
	}
}

// TestPrimaryBackOnAnEmptyVolumeIsFailedOver replaces the primary with an empty server, as a Pod recreated on
// a new volume: the engine must fail over to a replica that has the data, not make the empty server the
// writable primary (and every replica errant); the empty server then joins as a replica and gets the data.
func TestPrimaryBackOnAnEmptyVolumeIsFailedOver(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	f := newBootstrappedFleet(t, 3)
	f.insert(0, ints(1, 20)...)
	f.waitReplicas(0)
	f.servers[0].Kill()
	f.replace(0)

	f.converge()
	p := f.primaryIndex()
	g.Expect(f.missing(p, ints(1, 20))).To(BeEmpty(), "the primary lacks the data: decisions %v", f.decisions)
	g.Expect(f.decisions).To(ContainElement(HaveField("Reason", ContainSubstring("primary 0 has lost its data"))))
	g.Expect(f.decided(clustering.Failover, 0, -1)).To(BeTrue(), "decisions %v", f.decisions)
	g.Expect(p).NotTo(Equal(0))
	g.Expect(f.writable()).To(Equal([]int{p}))
	f.insert(p, 21)
	f.waitReplicas(p)
	g.Expect(f.replicated(0, ints(1, 21))).To(BeEmpty(), "the new server did not get the data")
}

// TestFailoverRefusedWhileTheOnlyHolderIsSilent stops replica 1, lets replica 2 alone acknowledge writes, and
// kills the primary and replica 2: with MariaDB's one acknowledgement, replica 1 cannot know it holds
// everything, so the engine refuses to fail over (no instance is writable, writes wait) until replica 2 is
// back, and then promotes it.
func TestFailoverRefusedWhileTheOnlyHolderIsSilent(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	f := newBootstrappedFleet(t, 3)
	g.Expect(f.admin[1].StopReplica(context.Background())).To(Succeed())
	f.insert(0, ints(1, 20)...)
	// Applied, not only received: a replica restarted after a crash does not replay the relay log it
	// acknowledged from (GTID mode fetches again from what it applied), so a primary and its only acknowledging
	// replica lost together within the applier's lag lose those writes whatever the engine does. That is two
	// failures; one acknowledgement covers one.
	f.waitReplicas(0, 1)
	g.Expect(f.replicated(2, ints(1, 20))).To(BeEmpty())
	f.servers[2].Kill()
	f.servers[0].Kill()

	plan := f.until("a refused failover", func(p clustering.Plan) bool {
		return p.Decision.Kind == clustering.Refused && strings.Contains(p.Decision.Reason, "failover refused")
	})
	t.Logf("refused: %s", plan.Decision.Reason)
	g.Expect(plan.Decision.Reason).To(ContainSubstring("2 of the 2 other instances must answer"))
	g.Expect(f.primaryIndex()).To(Equal(0))
	g.Expect(f.status(1).ReadOnly).To(BeTrue())

	restart(t, f.servers[2])
	f.converge()
	g.Expect(f.decided(clustering.Failover, 0, 2)).To(BeTrue(), "decisions %v", f.decisions)
	g.Expect(f.missing(2, ints(1, 20))).To(BeEmpty(), "acknowledged writes lost")
	f.waitReplicas(2, 0)
	g.Expect(f.replicated(1, ints(1, 20))).To(BeEmpty())
}

// TestPartitionedPrimaryCannotHaveWritesAcknowledgedThatAreLost cuts the member controller off the primary,
// which keeps running and keeps its clients. The engine fails over; the old primary's clients must not get a
// single acknowledgement for a write the new primary lacks. When the partition heals, the old primary is
// fenced before anything else and, holding commits nobody received (its own, from its term, semi-sync in force
// throughout), is rebuilt by itself: emptied, seeded from the set, and back in sync, with every acknowledged
// write and none of the writes it never acknowledged.
func TestPartitionedPrimaryCannotHaveWritesAcknowledgedThatAreLost(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	f := newBootstrappedFleet(t, 3)
	cut := &partition{Ops: f.server, cut: map[int]bool{}}
	f.ops = cut
	following := f.startWriter(1, f.primaryIndex)
	stale := f.startWriter(1_000_000, func() int { return 0 }) // clients that still reach the old primary
	following.waitAcks(100)
	stale.waitAcks(100)

	cut.set(0, true)
	f.converge()
	g.Expect(f.decided(clustering.Failover, 0, -1)).To(BeTrue(), "decisions %v", f.decisions)
	p := f.primaryIndex()
	staleBefore := len(stale.Acked())
	// The old primary's clients go on trying, past the engines' default semi-sync timeout (10 s), which would
	// acknowledge their commits asynchronously had the product's timeout not taken: a shorter wait could not
	// tell "never" from "after 10 s". It costs the test 12 s.
	time.Sleep(12 * time.Second)
	g.Expect(f.missing(p, stale.Acked())).To(BeEmpty(), "writes acknowledged by the old primary are lost")
	g.Expect(stale.Acked()).To(HaveLen(staleBefore), "the old primary acknowledged writes after the failover")
	following.waitAcks(50)

	cut.set(0, false)
	plan := f.until("the old primary rebuilt", func(p clustering.Plan) bool {
		return slices.ContainsFunc(p.Steps, func(s clustering.Step) bool { return s.Action == clustering.ActionRebuild })
	})
	g.Expect(f.decided(clustering.Repair, -1, -1)).To(BeTrue())
	g.Expect(plan.Report.Instances[0].Role).To(Equal(clustering.RoleErrant),
		"the old primary's in-doubt commits make it errant\n%s", f.describe())
	g.Expect(plan.Report.Errant()).To(Equal([]int{0}))
	rebuild := plan.Steps[slices.IndexFunc(plan.Steps, func(s clustering.Step) bool { return s.Action == clustering.ActionRebuild })]
	t.Logf("rebuilt: %s: %s", rebuild, rebuild.Why)
	g.Expect(rebuild.Instance).To(Equal(0))
	g.Expect(rebuild.Discarded.Without(strconv.Itoa(int(f.servers[0].ServerID))).IsEmpty()).To(BeTrue(),
		"it discarded only its own transactions: %s", rebuild.Discarded)
	g.Expect(rebuild.Discarded.IsEmpty()).To(BeFalse())

	following.Stop()
	stale.Stop()
	t.Logf("following writer: %s; stale writer: %s", following, stale)
	g.Expect(f.missing(p, following.Acked())).To(BeEmpty())
	g.Expect(f.missing(p, stale.Acked())).To(BeEmpty())

	// Seeded from the set and in sync again: every acknowledged write is on it, and every server holds the same.
	f.until("the old primary back in sync", func(plan clustering.Plan) bool {
		return plan.Decision.Kind == clustering.Steady && slices.Contains(plan.Report.InSync(), 0)
	})
	g.Expect(f.record().Errant).To(BeEmpty())
	g.Expect(f.record().Deposed).To(BeEmpty(), "forgotten once rebuilt")
	f.waitReplicas(p)
	g.Expect(f.missing(0, following.Acked())).To(BeEmpty())
	g.Expect(f.missing(0, stale.Acked())).To(BeEmpty())
	g.Expect(f.ids(0)).To(Equal(f.ids(p)), "the rebuilt server holds exactly what the primary holds")
}

// TestSwitchoverBothWays moves the primary to replica 1 and back under a stream of writes.
func TestSwitchoverBothWays(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	f := newBootstrappedFleet(t, 3)
	w := f.startWriter(1, f.primaryIndex)
	w.waitAcks(100)

	for _, to := range []int{1, 0} {
		from := f.primaryIndex()
		f.desired.Primary = &to
		start := time.Now()
		plan := f.converge()
		t.Logf("switchover %d → %d: %s to a steady pass", from, to, time.Since(start).Round(time.Millisecond))
		g.Expect(f.decided(clustering.Switchover, from, to)).To(BeTrue(), "decisions %v", f.decisions)
		g.Expect(f.primaryIndex()).To(Equal(to))
		g.Expect(plan.Report.Primary).To(Equal(to))
		g.Expect(f.status(from).ReadOnly).To(BeTrue())
		w.waitAcks(100)
		f.untilInSync("both replicas in sync, the old primary among them", from)
	}
	w.Stop()
	t.Logf("writer: %s", w)
	f.expectEverywhere(g, 0, w.Acked())
}

// untilInSync runs passes until a steady one has both replicas of a set of three in sync, i among them.
func (f *fleet) untilInSync(what string, i int) {
	f.t.Helper()
	f.until(what, func(p clustering.Plan) bool {
		return p.Decision.Kind == clustering.Steady && slices.Contains(p.Report.InSync(), i) && len(p.Report.InSync()) == 2
	})
}

// untilRebuilt runs passes until one has a step that rebuilds instance i.
func (f *fleet) untilRebuilt(what string, i int) {
	f.t.Helper()
	f.until(what, func(p clustering.Plan) bool {
		return slices.ContainsFunc(p.Steps, func(s clustering.Step) bool {
			return s.Action == clustering.ActionRebuild && s.Instance == i
		})
	})
}

// expectEverywhere checks that every acknowledged write is on primary and, once every other server has applied
// what primary has, that each holds exactly primary's rows.
func (f *fleet) expectEverywhere(g Gomega, primary int, acked []int) {
	f.t.Helper()
	g.Expect(f.missing(primary, acked)).To(BeEmpty())
	f.waitReplicas(primary)
	for i := range f.servers {
		if i == primary {
			continue
		}
		got, want := f.sameRows(i, primary)
		g.Expect(got).To(Equal(want), "server %d holds what the primary holds", i)
	}
}

// TestSwitchoverWaitsForATargetBehindInReceiving stops the target's receiver just before the old primary is
// fenced, while the other replica goes on acknowledging, and starts it again half a second later: the
// switchover must wait for the target to receive and apply the fenced primary's last transactions before it
// promotes it.
func TestSwitchoverWaitsForATargetBehindInReceiving(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	f := newBootstrappedFleet(t, 3)
	w := f.startWriter(1, f.primaryIndex)
	w.waitAcks(100)
	restarted := make(chan error, 1)
	f.ops = hooked{Ops: f.server, beforeFence: func(i int) {
		if i != 0 {
			return
		}
		g.Expect(f.rootExec(1, "STOP SLAVE IO_THREAD")).To(Succeed())
		time.Sleep(300 * time.Millisecond) // the writer's commits are acknowledged by replica 2 alone
		go func() {
			time.Sleep(500 * time.Millisecond)
			restarted <- f.rootExec(1, "START SLAVE IO_THREAD")
		}()
	}}
	to := 1
	f.desired.Primary = &to
	f.converge()
	g.Expect(f.decided(clustering.Switchover, 0, 1)).To(BeTrue(), "decisions %v", f.decisions)
	g.Expect(f.missing(1, w.Acked())).To(BeEmpty(), "acknowledged writes lost by the switchover")
	g.Expect(<-restarted).To(Succeed(), "the target was promoted before its receiver came back")
	w.waitAcks(50)
	w.Stop()
	t.Logf("writer: %s", w)
	g.Expect(f.missing(1, w.Acked())).To(BeEmpty(), "acknowledged writes lost after the switchover")
}

// TestSwitchoverReplicasAcknowledgeAtOnce: the replica that stays a replica follows the target before the
// target is promoted, so the new primary's first commit finds its acknowledger connected. Checked the moment
// the promotion returns, before the plan repoints anything more: the new primary counts replica 2 as a
// semi-sync replica (it attached while the target's source side was off), and a commit on it returns
// acknowledged, not by the fallback to asynchronous.
func TestSwitchoverReplicasAcknowledgeAtOnce(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	f := newBootstrappedFleet(t, 3)
	f.insert(0, ints(1, 10)...)
	checked := false
	f.ops = hooked{Ops: f.server, afterPromote: func(i int) {
		if i != 1 || checked {
			return
		}
		checked = true
		// Bounded, not timed: START SLAVE returns before the receiver has connected.
		g.Eventually(func() int { return f.status(1).SemiSync.Replicas }, 10*time.Second, 20*time.Millisecond).
			Should(Equal(1), func() string {
				return "semi-sync replicas of the new primary when its promotion returned\n" + f.describe()
			})
		f.insert(1, 11)
		semi := f.status(1).SemiSync
		g.Expect(semi.SourceActive).To(BeTrue(), "semi-sync on the new primary after its first commit: %+v", semi)
		g.Expect(semi.AsyncCommits).To(BeZero(), "commits that returned unacknowledged")
	}}
	to := 1
	f.desired.Primary = &to
	f.converge()
	g.Expect(checked).To(BeTrue(), "instance 1 was never promoted; decisions %v", f.decisions)
	g.Expect(f.decided(clustering.Switchover, 0, 1)).To(BeTrue(), "decisions %v", f.decisions)
	g.Expect(f.replicated(2, ints(1, 11))).To(BeEmpty())
	f.untilInSync("both replicas in sync, the old primary among them", 0)
	g.Expect(f.replicated(0, ints(1, 11))).To(BeEmpty())
}

// TestFailoverWaitsForTheNewPrimaryToApplyWhatItReceived makes replica 1 apply 3 s late (MASTER_DELAY) and
// stops replica 2, so that replica 1 alone acknowledges the last writes and holds them unapplied in its relay
// log when the primary is killed: an acknowledgement means received, not applied. Promoting it at once would
// throw them away.
func TestFailoverWaitsForTheNewPrimaryToApplyWhatItReceived(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	f := newBootstrappedFleet(t, 3)
	f.root(1, "STOP SLAVE", "CHANGE MASTER TO MASTER_DELAY = 3", "START SLAVE")
	g.Expect(f.admin[2].StopReplica(context.Background())).To(Succeed())
	f.insert(0, ints(1, 20)...)
	g.Expect(f.missing(1, ints(1, 20))).To(HaveLen(20), "replica 1 applied the writes before the kill")

	f.servers[0].Kill()
	f.converge()
	g.Expect(f.decided(clustering.Failover, 0, 1)).To(BeTrue(), "decisions %v", f.decisions)
	g.Expect(f.missing(1, ints(1, 20))).To(BeEmpty(), "acknowledged writes lost by the failover")
	f.insert(1, 21)
	f.waitReplicas(1, 0)
	g.Expect(f.replicated(2, ints(1, 21))).To(BeEmpty())
}

// TestSwitchoverRefusedToALaggingReplica delays replica 2 beyond the lag bound: the switchover is refused
// with the reason, the primary is neither fenced nor changed; once the lag is gone it goes ahead.
func TestSwitchoverRefusedToALaggingReplica(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	f := newBootstrappedFleet(t, 3)
	f.desired.MaxLag = time.Second
	f.root(2, "STOP SLAVE", "CHANGE MASTER TO MASTER_DELAY = 60", "START SLAVE")
	f.insert(0, 1)
	to := 2
	f.desired.Primary = &to
	plan := f.until("a refused switchover", func(p clustering.Plan) bool {
		return p.Decision.Kind == clustering.Refused && strings.Contains(p.Decision.Reason, "lags")
	})
	t.Logf("refused: %s", plan.Decision.Reason)
	g.Expect(plan.Decision.Reason).To(MatchRegexp(
		`switchover to instance 2 refused: it lags \d+s behind the primary, more than the bound of 1s`))
	g.Expect(plan.Report.LastError).To(Equal(plan.Decision.Reason))
	g.Expect(f.primaryIndex()).To(Equal(0))
	f.insert(0, 2) // the primary was not fenced

	f.root(2, "STOP SLAVE", "CHANGE MASTER TO MASTER_DELAY = 0", "START SLAVE")
	f.converge()
	g.Expect(f.decided(clustering.Switchover, 0, 2)).To(BeTrue(), "decisions %v", f.decisions)
	g.Expect(f.missing(2, []int{1, 2})).To(BeEmpty())
}

// TestErrantReplicaIsFencedAndReported writes on replica 2 past read_only (as root can): the engine records
// and reports it errant, stops its receiver, leaves it out of the replicas in sync, and never promotes it.
func TestErrantReplicaIsFencedAndReported(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	f := newBootstrappedFleet(t, 3)
	f.insert(0, ints(1, 10)...)
	f.waitReplicas(0)
	f.root(2, "INSERT INTO shop_db.orders (id, server) VALUES (100, 2)")

	plan := f.converge()
	g.Expect(f.decided(clustering.Repair, -1, -1)).To(BeTrue())
	g.Expect(plan.Report.Errant()).To(Equal([]int{2}))
	g.Expect(plan.Report.Instances[2].Errant).To(HavePrefix(fmt.Sprintf("0-%d-", f.servers[2].ServerID)))
	g.Expect(plan.Report.InSync()).To(Equal([]int{1}))
	g.Expect(f.record().Errant).To(Equal([]int{2}))
	g.Expect(f.status(2).Replica.IOState).To(Equal("No"), "the errant replica still receives")
	t.Logf("report: %+v", plan.Report.Instances[2])

	f.insert(0, ints(11, 10)...)
	f.waitReplicas(0, 2)
	g.Expect(f.replicated(1, ints(1, 20))).To(BeEmpty())
	g.Expect(f.ids(2)).NotTo(HaveKey(20), "the fenced replica applied the primary's later writes")

	// It is never promoted, though it answers and holds transactions of its own.
	f.servers[0].Kill()
	plan = f.converge()
	g.Expect(f.decided(clustering.Failover, 0, 1)).To(BeTrue(), "decisions %v", f.decisions)
	g.Expect(plan.Report.Errant()).To(Equal([]int{2}))
	g.Expect(f.status(2).Replica.SourcePort).To(Equal(f.servers[0].Port), "the errant replica was repointed")
	g.Expect(f.missing(1, ints(1, 20))).To(BeEmpty())
}

// TestFallenBackPrimaryIsReArmed lets a commit on the primary wait out a short timeout while its only replica is
// stopped, so that it returns without an acknowledgement and leaves semi-sync asynchronous (enabled, not
// active), as MySQL's longest timeout (49.7 days) would; the timeout is then set back to the product's. The
// settings now look right, but the engine reads back that the primary is not waiting for acknowledgements and
// reconfigures it, which re-arms it: the next commit waits, the replica still stopped, until the replica is
// back.
func TestFallenBackPrimaryIsReArmed(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	f := newBootstrappedFleet(t, 2)
	g.Expect(f.admin[1].StopReplica(context.Background())).To(Succeed())
	f.root(0, "SET GLOBAL rpl_semi_sync_master_timeout = 200")
	f.insert(0, 1)
	f.root(0, "SET GLOBAL rpl_semi_sync_master_timeout = 18446744073709551615")
	st := f.status(0).SemiSync
	g.Expect(st.SourceActive).To(BeFalse(), "semi-sync did not fall back: %+v", st)
	g.Expect(st.AsyncCommits).To(BeEquivalentTo(1))

	// The member controller cannot reach the replica, so the plan is about the primary alone.
	cut := &partition{Ops: f.server, cut: map[int]bool{1: true}}
	f.ops = cut
	plan, err := f.pass()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(plan.Decision.Kind).To(Equal(clustering.Repair))
	g.Expect(plan.Steps).To(HaveLen(2))
	g.Expect(plan.Steps[0].String()).To(Equal("save-record primary=0 errant=[] unacknowledged"),
		"the term is recorded as one whose commits returned unacknowledged")
	g.Expect(plan.Steps[1].String()).To(Equal("configure-semi-sync 0 (wait 1)"))
	t.Logf("why: %s", plan.Steps[1].Why)
	st = f.status(0).SemiSync
	g.Expect(st.SourceActive).To(BeTrue(), "not re-armed: %+v", st)
	g.Expect(st.Timeout).To(BeNumerically(">", 49*24*time.Hour))

	done := make(chan error, 1)
	go func() {
		_, err := f.app(0).Exec("INSERT INTO orders (id, server) VALUES (2, 0)")
		done <- err
	}()
	g.Eventually(func() int { return f.status(0).SemiSync.WaitingSessions }).WithTimeout(10*time.Second).
		Should(Equal(1), "the next commit does not wait for an acknowledgement")
	cut.set(1, false)
	f.converge()
	g.Eventually(done).WithTimeout(60 * time.Second).Should(Receive(BeNil()))
	g.Expect(f.status(0).SemiSync.AsyncCommits).To(BeEquivalentTo(1))
	g.Expect(f.replicated(1, []int{1, 2})).To(BeEmpty())
}

// TestFormerPrimaryRejoinsAPrimaryRebuiltMeanwhile is two faults in a row as kind showed them: a server rebuilt
// (seeded again, its binary log starting at the seed) becomes the primary while the previous primary, which was
// a replica before its term, has to follow it. That one must resume from its own last write: the position it had
// applied as a replica predates the rebuilt server's binary log, which refuses it (error 1236, "Could not find
// GTID state requested by slave in any binlog files"), and the set would stay short of a replica for good.
func TestFormerPrimaryRejoinsAPrimaryRebuiltMeanwhile(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	f := newBootstrappedFleet(t, 3)
	w := f.startWriter(1, f.primaryIndex)
	w.waitAcks(50)
	first := f.primaryIndex()
	former := (first + 1) % 3 // a replica now, the primary next
	rebuilt := (first + 2) % 3

	f.desired.Primary = &former
	f.converge()
	g.Expect(f.decided(clustering.Switchover, first, former)).To(BeTrue(), "decisions %v", f.decisions)
	w.waitAcks(50)

	// The primary's binary logs no longer reach back to the start, so the rebuilt server is seeded from a dump
	// and its own binary log starts there.
	f.servers[former].PurgeBinaryLogs()
	f.desired.Rebuild = []clustering.RebuildRequest{{Instance: rebuilt, ID: "r1"}}
	f.untilRebuilt("the server rebuilt", rebuilt)
	f.until("the rebuilt server back in sync", func(p clustering.Plan) bool {
		return p.Decision.Kind == clustering.Steady && len(p.Report.InSync()) == 2
	})
	w.waitAcks(50)

	f.desired.Primary = &rebuilt
	f.converge()
	g.Expect(f.decided(clustering.Switchover, former, rebuilt)).To(BeTrue(), "decisions %v", f.decisions)
	w.waitAcks(50)
	f.untilInSync("the former primary in sync with the rebuilt primary", former)
	w.Stop()
	t.Logf("writer: %s", w)
	f.expectEverywhere(g, rebuilt, w.Acked())
}

// A replica that stopped while the primary went on and then purged its binary logs cannot catch up by GTID
// auto-positioning. All it holds is on the primary, so the controller empties it by itself and seeds it: the
// set is whole again without a human, every acknowledged write on every server.
func TestReplicaBehindPurgedBinaryLogsIsRebuiltAndSeeded(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	f := newBootstrappedFleet(t, 3)
	w := f.startWriter(1, f.primaryIndex)
	w.waitAcks(50)
	p := f.primaryIndex()
	behind := (p + 1) % 3
	g.Expect(f.admin[behind].StopReplica(context.Background())).To(Succeed())
	w.waitAcks(100)
	f.servers[p].PurgeBinaryLogs()
	w.waitAcks(50)

	f.untilRebuilt("the replica behind rebuilt", behind)
	f.untilInSync("the rebuilt replica seeded and in sync", behind)
	w.waitAcks(50)
	w.Stop()
	t.Logf("writer: %s", w)
	f.expectEverywhere(g, p, w.Acked())
}
