package clustering_test

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/mysqlfleet/mysqlfleet/internal/clustering"
	"github.com/mysqlfleet/mysqlfleet/internal/mysql"
)

// deposed is r with instance i recorded as a primary a failover replaced, which served with server_id id.
func deposed(r clustering.Record, i int, id uint32, unacknowledged bool) clustering.Record {
	r.Deposed = append(r.Deposed, clustering.Deposed{Instance: i, ServerID: id, Unacknowledged: unacknowledged})
	return r
}

func fenceErrant() func(*clustering.Desired) {
	return func(d *clustering.Desired) { d.FenceErrant = true }
}

func rebuildRequest(i int, id string) func(*clustering.Desired) {
	return func(d *clustering.Desired) {
		d.Rebuild = append(d.Rebuild, clustering.RebuildRequest{Instance: i, ID: id})
	}
}

func rebuilt(r clustering.Record, ids ...string) clustering.Record {
	r.Rebuilt = ids
	return r
}

// Instance 0 was the primary until a failover to 1; it came back holding 0-1-11, a commit of its own that no
// replica received. The primary 1 and replica 2 hold 0-1-10 (0's term) and 0-2-5 (1's).
func TestDecideRebuild(t *testing.T) {
	// 1's term wrote further in the domain than 0's: a position comparison would hide 0's run.
	const history = "0-1-10,0-2-50"
	oldPrimary := func(opts ...option) clustering.Observation { return md.build(0, "0-1-11", opts) }
	primary := md.primary(1, history)
	replica := md.replica(2, 1, history)
	was := deposed(record(1, 0), 0, 1, false)
	runDecideCases(t, []decideCase{
		{
			name: "a deposed primary's own unacknowledged tail: rebuilt, the record kept until it is empty",
			d:    desired(3), rec: was,
			obs: observe(oldPrimary(), primary, replica),
			want: expect{kind: clustering.Repair, steps: []string{"rebuild 0 discarding 0-1-11"},
				record: "primary=1 errant=[0] deposed=0", inSync: []int{2}, errant: []int{0}},
		},
		{
			name: "once empty it is no longer errant, is forgotten as deposed, and is seeded: its own former " +
				"transactions are in the primary's history",
			d: desired(3), rec: was,
			obs: observe(md.fresh(0), primary, replica),
			want: expect{kind: clustering.Repair, steps: []string{"save-record primary=1 errant=[]", "seed 0 from 2"},
				record: "primary=1 errant=[]", inSync: []int{2}, instanceErrors: map[int]string{0: "seeding from instance 2"}},
		},
		{
			name: "an empty new data directory on another ordinal replays the binary logs as before",
			d:    desired(3), rec: record(1),
			obs:  observe(md.replica(0, 1, history), primary, md.fresh(2, serverID(77))),
			want: expect{kind: clustering.Repair, steps: []string{"replicate 2 from 1"}, inSync: []int{0}},
		},
		{
			name: "a replica received part of the tail: fenced for a human",
			d:    desired(3), rec: was,
			obs: observe(oldPrimary(), primary, md.replica(2, 1, history, received(history+",0-1-11"))),
			want: expect{kind: clustering.Steady, errant: []int{0}, inSync: []int{2},
				record:         "primary=1 errant=[0] deposed=0",
				instanceErrors: map[int]string{0: "instance 2 received some of its transactions"}},
		},
		{
			name: "its term let commits return unacknowledged: fenced for a human",
			d:    desired(3), rec: deposed(record(1, 0), 0, 1, true),
			obs: observe(oldPrimary(), primary, replica),
			want: expect{kind: clustering.Steady, inSync: []int{2}, errant: []int{0},
				instanceErrors: map[int]string{0: "commits could return without a semi-sync acknowledgement"}},
		},
		{
			name: "another data directory than the one that served: fenced for a human, and forgotten as deposed",
			d:    desired(3), rec: deposed(record(1, 0), 0, 9, false),
			obs: observe(oldPrimary(), primary, replica),
			want: expect{kind: clustering.Repair, steps: []string{"save-record primary=1 errant=[0]"}, inSync: []int{2},
				errant: []int{0}, instanceErrors: map[int]string{0: "not the 9 it served with"}},
		},
		{
			name: "transactions of other servers among the errant ones: fenced for a human",
			d:    desired(3), rec: was,
			obs: observe(md.build(0, "0-1-11,1-7-3", nil), primary, replica),
			want: expect{kind: clustering.Steady, inSync: []int{2}, errant: []int{0},
				instanceErrors: map[int]string{0: "written by other servers"}},
		},
		{
			name: "a replica that does not answer may hold part of the tail: wait",
			d:    desired(3), rec: was,
			obs: observe(oldPrimary(), primary, unreachable()),
			want: expect{kind: clustering.Steady, errant: []int{0},
				instanceErrors: map[int]string{0: "instance 2 does not answer"}},
		},
		{
			name: "an errant replica that was never a deposed primary: fenced for a human",
			d:    desired(3), rec: record(1, 0),
			obs: observe(oldPrimary(), primary, replica),
			want: expect{kind: clustering.Steady, inSync: []int{2}, errant: []int{0},
				instanceErrors: map[int]string{0: "not a primary replaced by a failover"}},
		},
		{
			name: "errantServers Fence: fenced for a human, saying a rebuild would be safe",
			d:    desired(3, fenceErrant()), rec: was,
			obs: observe(oldPrimary(), primary, replica),
			want: expect{kind: clustering.Steady, inSync: []int{2}, errant: []int{0},
				instanceErrors: map[int]string{0: "errantServers is Fence"}},
		},
		{
			name: "a requested rebuild of a fenced errant server: done whatever it holds, and recorded",
			d:    desired(3, fenceErrant(), rebuildRequest(0, "r1")), rec: record(1, 0),
			obs: observe(md.build(0, "0-1-11,1-7-3", nil), primary, replica),
			want: expect{kind: clustering.Repair, steps: []string{"rebuild 0 discarding 0-1-11,1-7-3",
				"save-record primary=1 errant=[0] rebuilt=[r1]"}, inSync: []int{2}, errant: []int{0},
				record: "primary=1 errant=[0] rebuilt=[r1]"},
		},
		{
			name: "a request carried out is not carried out again",
			d:    desired(3, rebuildRequest(2, "r1")), rec: rebuilt(record(1), "r1"),
			obs:  observe(md.replica(0, 1, history), primary, replica),
			want: expect{kind: clustering.Steady, inSync: []int{0, 2}},
		},
		{
			name: "a requested rebuild of a replica in sync: it stops being repointed and is emptied",
			d:    desired(3, rebuildRequest(2, "r2")), rec: record(1),
			obs: observe(md.replica(0, 1, history), primary, replica),
			want: expect{kind: clustering.Repair, steps: []string{"rebuild 2 discarding ",
				"save-record primary=1 errant=[] rebuilt=[r2]"}, inSync: []int{0, 2}},
		},
		{
			name: "a request no longer asked for is forgotten",
			d:    desired(3), rec: rebuilt(record(1), "r1"),
			obs:  observe(md.replica(0, 1, history), primary, replica),
			want: expect{kind: clustering.Repair, steps: []string{"save-record primary=1 errant=[]"}, inSync: []int{0, 2}},
		},
		{
			name: "a requested rebuild of the primary is refused; the repairs go on",
			d:    desired(3, rebuildRequest(1, "r3")), rec: record(1),
			obs: observe(md.replica(0, 1, history), primary, md.replica(2, 1, history, stopped())),
			want: expect{kind: clustering.Refused, reason: "rebuild of instance 1 refused: it is the primary",
				steps: []string{"replicate 2 from 1"}, inSync: []int{0}},
		},
	})
}

// A failover records the primary it replaces, with whether its term let commits return unacknowledged; the
// new primary's term starts without it.
func TestFailoverRecordsTheDeposedPrimary(t *testing.T) {
	g := NewWithT(t)
	obs := observe(unreachable(), md.replica(1, 0, "0-1-10", receiverStopped()), md.replica(2, 0, "0-1-10", receiverStopped()))
	for _, unack := range []bool{false, true} {
		rec := record(0)
		rec.Unacknowledged = unack
		plan := clustering.Decide(desired(3), rec, obs)
		g.Expect(plan.Decision.Kind).To(Equal(clustering.Failover))
		g.Expect(plan.Record.Deposed).To(Equal([]clustering.Deposed{{Instance: 0, ServerID: 1, Unacknowledged: unack}}))
		g.Expect(plan.Record.Unacknowledged).To(BeFalse())
	}
	// A record without a wait count proves nothing of the term.
	plan := clustering.Decide(desired(3), waitRecorded(record(0), 0), obs)
	g.Expect(plan.Record.Deposed).To(Equal([]clustering.Deposed{{Instance: 0, ServerID: 1, Unacknowledged: true}}))
}

// The primary seen where commits could return unacknowledged marks its term, once; a primary waiting as it
// should does not.
func TestUnacknowledgedTermIsRecorded(t *testing.T) {
	g := NewWithT(t)
	for name, o := range map[string]option{"fell back": fellBack(1), "can fall back": waitNoReplicaOff(),
		"off": semiSync(false, 1, never)} {
		plan := clustering.Decide(desired(3), record(0), observe(md.primary(0, "0-1-10", o),
			md.replica(1, 0, "0-1-10"), md.replica(2, 0, "0-1-10")))
		g.Expect(plan.Record.Unacknowledged).To(BeTrue(), name)
	}
	plan := clustering.Decide(desired(3), record(0), observe(md.primary(0, "0-1-10"),
		md.replica(1, 0, "0-1-10"), md.replica(2, 0, "0-1-10")))
	g.Expect(plan.Record.Unacknowledged).To(BeFalse())
	g.Expect(plan.Steps).To(BeEmpty())
	_ = mysql.MariaDB
}

// A requested rebuild pins the executed set it empties only where the instance could hold or receive something
// the primary lacks: a live replica of the primary goes on applying between the decision and the rebuild, and
// pinning its set would refuse the rebuild for as long as the primary is written to.
func TestRequestedRebuildPinsWhatMayNotBeThePrimarys(t *testing.T) {
	const history = "0-1-10,0-2-50"
	primary := md.primary(1, history)
	executedOf := func(o clustering.Observation) string {
		plan := clustering.Decide(desired(3, rebuildRequest(2, "r1")), record(1), observe(md.replica(0, 1, history), primary, o))
		for _, s := range plan.Steps {
			if s.Action == clustering.ActionRebuild && s.Instance == 2 {
				if s.Executed == nil {
					return "any"
				}
				return s.Executed.String()
			}
		}
		t.Fatalf("no rebuild of instance 2 in %v", plan.Steps)
		return ""
	}
	g := NewWithT(t)
	g.Expect(executedOf(md.replica(2, 1, history))).To(Equal("any"), "a replica of the primary")
	g.Expect(executedOf(md.build(2, "0-1-10", nil))).To(Equal("any"), "a server that replicates from nothing")
	g.Expect(executedOf(md.replica(2, 0, history))).To(Equal(history), "a replica of another instance")
	g.Expect(executedOf(md.build(2, history+",0-3-4", nil))).To(Equal(history+",0-3-4"),
		"a server holding transactions the primary lacks")
}
