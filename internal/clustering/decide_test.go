package clustering_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/mysqlfleet/mysqlfleet/internal/clustering"
	"github.com/mysqlfleet/mysqlfleet/internal/mysql"
)

type expect struct {
	kind     clustering.Kind
	from, to int
	steps    []string
	// reason is a substring of the decision's reason.
	reason string
	// record is the record after the plan, as Record.String prints it; "" leaves it unchecked.
	record string
	inSync []int
	errant []int
	// roles, when set, are the reported roles by index.
	roles []clustering.Role
	// instanceErrors are substrings of the reported errors of some instances, by index.
	instanceErrors map[int]string
	// completed is the change of primary the plan completes, as Decision.String prints it; "" for none.
	completed string
	// shrinkReady is the report's ShrinkReady.
	shrinkReady int
	// async: the report says the primary's commits return unacknowledged (durability Preferred).
	async bool
}

type decideCase struct {
	name string
	d    clustering.Desired
	rec  clustering.Record
	obs  []clustering.Observation
	want expect
}

func runDecideCases(t *testing.T, cases []decideCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			plan := clustering.Decide(tt.d, tt.rec, tt.obs)
			steps := []string{}
			for _, s := range plan.Steps {
				steps = append(steps, s.String())
			}
			want := append([]string{}, tt.want.steps...)
			g.Expect(steps).To(Equal(want), "decision %s", plan.Decision)
			g.Expect(plan.Decision.Kind).To(Equal(tt.want.kind), "decision %s", plan.Decision)
			if tt.want.kind == clustering.Failover || tt.want.kind == clustering.Switchover ||
				tt.want.kind == clustering.FailoverStarted {
				g.Expect([]int{plan.Decision.From, plan.Decision.To}).To(Equal([]int{tt.want.from, tt.want.to}))
			}
			g.Expect(plan.Decision.Reason).To(ContainSubstring(tt.want.reason))
			if tt.want.record != "" {
				g.Expect(plan.Record.String()).To(Equal(tt.want.record))
			}
			g.Expect(plan.Report.InSync()).To(Equal(tt.want.inSync), "in sync")
			g.Expect(plan.Report.Errant()).To(Equal(tt.want.errant), "errant")
			if tt.want.roles != nil {
				var roles []clustering.Role
				for _, in := range plan.Report.Instances {
					roles = append(roles, in.Role)
				}
				g.Expect(roles).To(Equal(tt.want.roles))
			}
			completed, wantCompleted := "", tt.want.completed
			if plan.Completed != nil {
				completed = plan.Completed.String()
			}
			switch plan.Decision.Kind {
			case clustering.Bootstrap, clustering.Adopt, clustering.Failover, clustering.Switchover:
				wantCompleted = plan.Decision.String() // a change of primary completes itself
			}
			g.Expect(completed).To(Equal(wantCompleted), "completed change")
			for i, msg := range tt.want.instanceErrors {
				g.Expect(plan.Report.Instances[i].Error).To(ContainSubstring(msg), "instance %d", i)
			}
			g.Expect(plan.Report.ShrinkReady).To(Equal(tt.want.shrinkReady), "ready to shrink")
			g.Expect(plan.Report.Async != "").To(Equal(tt.want.async), "async: %q", plan.Report.Async)
			g.Expect(plan.Requeue()).To(Equal(len(plan.Steps) > 0))
			if plan.Decision.Kind == clustering.Refused {
				g.Expect(plan.Report.LastError).To(Equal(plan.Decision.Reason))
			}
		})
	}
}

const (
	P  = clustering.RolePrimary
	R  = clustering.RoleReplica
	E  = clustering.RoleErrant
	U  = clustering.RoleUnreachable
	No = clustering.RoleNone
)

func TestDecideBootstrap(t *testing.T) {
	runDecideCases(t, []decideCase{
		{
			name: "three fresh MariaDB instances: 0 is primary, waiting for its one acknowledgement",
			d:    desired(3), obs: observe(md.fresh(0), md.fresh(1), md.fresh(2)),
			want: expect{kind: clustering.Bootstrap, record: "primary=0 errant=[]", steps: []string{
				"save-record primary=0 errant=[]", "promote 0 (semi-sync wait 1)",
				"replicate 1 from 0", "replicate 2 from 0",
			}, roles: []clustering.Role{P, No, No}},
		},
		{
			name: "two MySQL instances wait for the one replica",
			d:    desired(2, engine(mysql.MySQL)), obs: observe(my.fresh(0), my.fresh(1)),
			want: expect{kind: clustering.Bootstrap, steps: []string{
				"save-record primary=0 errant=[]", "promote 0 (semi-sync wait 1)", "replicate 1 from 0",
			}},
		},
		{
			name: "four MySQL instances wait for two of three replicas",
			d:    desired(4, engine(mysql.MySQL)), obs: observe(my.fresh(0), my.fresh(1), my.fresh(2), my.fresh(3)),
			want: expect{kind: clustering.Bootstrap, steps: []string{
				"save-record primary=0 errant=[]", "promote 0 (semi-sync wait 2)",
				"replicate 1 from 0", "replicate 2 from 0", "replicate 3 from 0",
			}},
		},
		{
			name: "six MySQL instances wait for three of five replicas",
			d:    desired(6, engine(mysql.MySQL)),
			obs:  observe(my.fresh(0), my.fresh(1), my.fresh(2), my.fresh(3), my.fresh(4), my.fresh(5)),
			want: expect{kind: clustering.Bootstrap, steps: []string{
				"save-record primary=0 errant=[]", "promote 0 (semi-sync wait 3)", "replicate 1 from 0",
				"replicate 2 from 0", "replicate 3 from 0", "replicate 4 from 0", "replicate 5 from 0",
			}},
		},
		{
			name: "four MariaDB instances: MariaDB waits for exactly one acknowledgement",
			d:    desired(4), obs: observe(md.fresh(0), md.fresh(1), md.fresh(2), md.fresh(3)),
			want: expect{kind: clustering.Bootstrap, steps: []string{
				"save-record primary=0 errant=[]", "promote 0 (semi-sync wait 1)",
				"replicate 1 from 0", "replicate 2 from 0", "replicate 3 from 0",
			}},
		},
		{
			name: "a single instance has no semi-sync",
			d:    desired(1), obs: observe(md.fresh(0)),
			want: expect{kind: clustering.Bootstrap, steps: []string{
				"save-record primary=0 errant=[]", "promote 0 (semi-sync wait 0)",
			}},
		},
		{
			name: "instance 0 restored from a backup bootstraps the others",
			d:    desired(3), obs: observe(md.build(0, "0-9-500", nil), md.fresh(1), md.fresh(2)),
			want: expect{kind: clustering.Bootstrap, steps: []string{
				"save-record primary=0 errant=[]", "promote 0 (semi-sync wait 1)",
				"replicate 1 from 0", "replicate 2 from 0",
			}},
		},
		{
			name: "bootstrap waits for every instance",
			d:    desired(3), obs: observe(md.fresh(0), unreachable(), md.fresh(2)),
			want: expect{kind: clustering.Refused, reason: "bootstrap waits for every instance, and [1] do not answer",
				roles: []clustering.Role{No, U, No}},
		},
		{
			name: "an instance holding transactions instance 0 lacks stops the bootstrap",
			d:    desired(3), obs: observe(md.fresh(0), md.build(1, "0-2-3", nil), md.fresh(2)),
			want: expect{kind: clustering.Refused, reason: "instance 1 holds transactions instance 0 lacks (0-2-3)"},
		},
		{
			name: "a replicating instance without a record stops the bootstrap",
			d:    desired(2), obs: observe(md.fresh(0), md.replica(1, 0, "", stopped())),
			want: expect{kind: clustering.Refused, reason: "instance 1 replicates from db-0:3306"},
		},
		{
			name: "a lost record: the one writable instance is adopted",
			d:    desired(3), obs: observe(md.replica(0, 1, "0-2-10"), md.primary(1, "0-2-10"), md.replica(2, 1, "0-2-10")),
			want: expect{kind: clustering.Adopt, from: -1, to: 1, record: "primary=1 errant=[]",
				steps: []string{"save-record primary=1 errant=[]"}, inSync: []int{0, 2}},
		},
		{
			name: "two writable instances and no record: both fenced, a human chooses",
			d:    desired(3), obs: observe(md.primary(0, "0-1-10"), md.primary(1, "0-2-10"), md.fresh(2)),
			want: expect{kind: clustering.Refused, reason: "instances [0 1] are writable",
				steps: []string{"fence 0", "fence 1"}},
		},
		{
			name: "a MariaDB set cannot wait for two acknowledgements",
			d:    desired(3, func(d *clustering.Desired) { d.SemiSyncWait = 2 }),
			obs:  observe(md.fresh(0), md.fresh(1), md.fresh(2)),
			want: expect{kind: clustering.Refused, reason: "MariaDB waits for exactly one acknowledgement",
				roles: []clustering.Role{No, No, No}},
		},
		{
			name: "observations must match the instances",
			d:    desired(3), obs: observe(md.fresh(0), md.fresh(1)),
			want: expect{kind: clustering.Refused, reason: "2 observations for 3 instances"},
		},
	})
}

func TestDecideSteadyAndRepair(t *testing.T) {
	runDecideCases(t, []decideCase{
		{
			name: "steady: nothing to do, nothing written",
			d:    desired(3), rec: record(0),
			obs: observe(md.primary(0, "0-1-10"), md.replica(1, 0, "0-1-10"), md.replica(2, 0, "0-1-9", lag(time.Second))),
			want: expect{kind: clustering.Steady, record: "primary=0 errant=[]", inSync: []int{1, 2},
				roles: []clustering.Role{P, R, R}},
		},
		{
			name: "steady on MySQL with four instances waiting for two",
			d:    desired(4, engine(mysql.MySQL)), rec: waitRecorded(record(0), 2),
			obs: observe(
				my.primary(0, mysqlUUID(0)+":1-10", semiSync(true, 2, never)),
				my.replica(1, 0, mysqlUUID(0)+":1-10"),
				my.replica(2, 0, mysqlUUID(0)+":1-10"),
				my.replica(3, 0, mysqlUUID(0)+":1-8")),
			want: expect{kind: clustering.Steady, inSync: []int{1, 2, 3}},
		},
		{
			name: "a replica beyond the lag bound is reported out of sync and left alone",
			d:    desired(3), rec: record(0),
			obs: observe(md.primary(0, "0-1-10"), md.replica(1, 0, "0-1-10"),
				md.replica(2, 0, "0-1-2", received("0-1-10"), lag(30*time.Second))),
			want: expect{kind: clustering.Steady, inSync: []int{1}, roles: []clustering.Role{P, R, R}},
		},
		{
			name: "an unreachable replica is reported and nothing is done",
			d:    desired(3), rec: record(0),
			obs:  observe(md.primary(0, "0-1-10"), unreachable(), md.replica(2, 0, "0-1-10")),
			want: expect{kind: clustering.Steady, inSync: []int{2}, roles: []clustering.Role{P, U, R}},
		},
		{
			name: "a replica pointing elsewhere is repointed",
			d:    desired(3), rec: record(0),
			obs: observe(md.primary(0, "0-1-10"), md.replica(1, 0, "0-1-10"), md.replica(2, 1, "0-1-10")),
			want: expect{kind: clustering.Repair, steps: []string{"replicate 2 from 0"}, inSync: []int{1},
				roles: []clustering.Role{P, R, No}},
		},
		{
			name: "a stopped replica is restarted",
			d:    desired(3), rec: record(0),
			obs:  observe(md.primary(0, "0-1-10"), md.replica(1, 0, "0-1-7", stopped()), md.replica(2, 0, "0-1-10")),
			want: expect{kind: clustering.Repair, steps: []string{"replicate 1 from 0"}, inSync: []int{2}},
		},
		{
			name: "a replica that lost its source is restarted",
			d:    desired(3), rec: record(0),
			obs:  observe(md.primary(0, "0-1-10"), md.replica(1, 0, "0-1-7", connecting()), md.replica(2, 0, "0-1-10")),
			want: expect{kind: clustering.Repair, steps: []string{"replicate 1 from 0"}, inSync: []int{2}},
		},
		{
			name: "a replica whose receiver is still connecting, without an error, is left to connect",
			d:    desired(3), rec: record(0),
			obs: observe(md.primary(0, "0-1-10"), md.replica(1, 0, "0-1-10"),
				md.replica(2, 0, "0-1-10", func(in *instance) { in.obs.Status.Replica.IOState = "Connecting" })),
			want: expect{kind: clustering.Steady, inSync: []int{1}, roles: []clustering.Role{P, R, No}},
		},
		{
			name: "a replica that does not acknowledge is restarted as a semi-sync replica",
			d:    desired(3), rec: record(0),
			obs: observe(md.primary(0, "0-1-10"), md.replica(1, 0, "0-1-10", notAcknowledging()),
				md.replica(2, 0, "0-1-10")),
			want: expect{kind: clustering.Repair, steps: []string{"replicate 1 from 0"}, inSync: []int{2}},
		},
		{
			name: "a fresh instance joins",
			d:    desired(3), rec: record(0),
			obs:  observe(md.primary(0, "0-1-10"), md.replica(1, 0, "0-1-10"), md.fresh(2)),
			want: expect{kind: clustering.Repair, steps: []string{"replicate 2 from 0"}, inSync: []int{1}},
		},
		{
			name: "a read-only primary (restarted) is made writable again and its replicas restarted",
			d:    desired(3), rec: record(0),
			obs: observe(md.primary(0, "0-1-11", readOnly()), md.replica(1, 0, "0-1-10", receiverStopped()),
				md.replica(2, 0, "0-1-10", connecting())),
			want: expect{kind: clustering.Repair, steps: []string{
				"promote 0 (semi-sync wait 1)", "replicate 1 from 0", "replicate 2 from 0",
			}},
		},
		{
			name: "a recorded primary that replicates (a failover cut short) is promoted",
			d:    desired(3), rec: record(1),
			obs: observe(md.replica(0, 1, "0-1-10"), md.replica(1, 0, "0-1-10", receiverStopped()),
				md.replica(2, 0, "0-1-10", receiverStopped())),
			want: expect{kind: clustering.Repair, steps: []string{"promote 1 (semi-sync wait 1)", "replicate 2 from 1"},
				inSync: []int{0}},
		},
		{
			name: "semi-sync off on the primary is turned on",
			d:    desired(3), rec: unacked(record(0)),
			obs: observe(md.primary(0, "0-1-10", semiSync(false, 1, never)), md.replica(1, 0, "0-1-10"),
				md.replica(2, 0, "0-1-10")),
			want: expect{kind: clustering.Repair, steps: []string{"configure-semi-sync 0 (wait 1)"}, inSync: []int{1, 2}},
		},
		{
			name: "a semi-sync timeout that would fall back to asynchronous is replaced",
			d:    desired(3), rec: unacked(record(0)),
			obs: observe(md.primary(0, "0-1-10", semiSync(true, 1, 10*time.Second)), md.replica(1, 0, "0-1-10"),
				md.replica(2, 0, "0-1-10")),
			want: expect{kind: clustering.Repair, steps: []string{"configure-semi-sync 0 (wait 1)"}, inSync: []int{1, 2}},
		},
		{
			name: "a primary whose semi-sync fell back to asynchronous is re-armed",
			d:    desired(3), rec: unacked(record(0)),
			obs: observe(md.primary(0, "0-1-10", fellBack(3)), md.replica(1, 0, "0-1-10"),
				md.replica(2, 0, "0-1-10")),
			want: expect{kind: clustering.Repair, steps: []string{"configure-semi-sync 0 (wait 1)"}, inSync: []int{1, 2}},
		},
		{
			name: "async commits alone, the primary active again, need nothing",
			d:    desired(3), rec: unacked(record(0)),
			obs: observe(md.primary(0, "0-1-10", fellBack(3), func(in *instance) {
				in.obs.Status.SemiSync.SourceActive = true
			}), md.replica(1, 0, "0-1-10"), md.replica(2, 0, "0-1-10")),
			want: expect{kind: clustering.Steady, inSync: []int{1, 2}},
		},
		{
			name: "a primary that would fall back once no replica is connected is corrected",
			d:    desired(3), rec: unacked(record(0)),
			obs: observe(md.primary(0, "0-1-10", waitNoReplicaOff()), md.replica(1, 0, "0-1-10"),
				md.replica(2, 0, "0-1-10")),
			want: expect{kind: clustering.Repair, steps: []string{"configure-semi-sync 0 (wait 1)"}, inSync: []int{1, 2}},
		},
		{
			name: "a wrong wait count on MySQL is corrected",
			d:    desired(4, engine(mysql.MySQL)), rec: record(0),
			obs: observe(
				my.primary(0, mysqlUUID(0)+":1-10"),
				my.replica(1, 0, mysqlUUID(0)+":1-10"), my.replica(2, 0, mysqlUUID(0)+":1-10"),
				my.replica(3, 0, mysqlUUID(0)+":1-10")),
			want: expect{kind: clustering.Repair, steps: []string{"configure-semi-sync 0 (wait 2)"}, inSync: []int{1, 2, 3}},
		},
		{
			name: "a single instance waits for nobody",
			d:    desired(1), rec: record(0), obs: observe(md.primary(0, "0-1-10")),
			// The record's wait count is lowered before the primary waits for fewer.
			want: expect{kind: clustering.Repair, steps: []string{"save-record primary=0 errant=[]",
				"configure-semi-sync 0 (wait 0)"}},
		},
		{
			name: "a single instance without semi-sync is steady",
			d:    desired(1), rec: record(0), obs: observe(md.primary(0, "0-1-10", semiSync(false, 1, never))),
			want: expect{kind: clustering.Steady},
		},
		{
			name: "a writable instance that is not the primary is fenced and decided on next pass",
			d:    desired(3), rec: record(0),
			obs: observe(md.primary(0, "0-1-10"), md.replica(1, 0, "0-1-10"), md.primary(2, "0-1-10")),
			want: expect{kind: clustering.Repair, steps: []string{"fence 2"}, inSync: []int{1},
				roles: []clustering.Role{P, R, No}},
		},
		{
			name: "a writable replica is fenced before anything else",
			d:    desired(3), rec: record(0),
			obs: observe(md.primary(0, "0-1-10"), md.replica(1, 0, "0-1-10", writable(), stopped()),
				md.replica(2, 0, "0-1-10")),
			want: expect{kind: clustering.Repair, steps: []string{"fence 1"}, inSync: []int{2}},
		},
	})
}

// An empty replica that the primary's binary logs cannot bring up to date is seeded with a dump, from a replica
// in sync when there is one; a replica holding transactions is never seeded over; and an empty replica waits
// while nobody can tell what the primary's binary logs hold.
func TestDecideSeeding(t *testing.T) {
	uuid := mysqlUUID(0)
	runDecideCases(t, []decideCase{
		{
			name: "an empty replica the primary's binary logs cannot serve is seeded from a replica in sync",
			d:    desired(3), rec: record(0),
			obs: observe(md.primary(0, "0-1-10", purged("0-1-5")), md.replica(1, 0, "0-1-10"),
				md.replica(2, 0, "", receiverError(1236, "Could not find GTID state requested by slave"))),
			want: expect{kind: clustering.Repair, steps: []string{"seed 2 from 1"}, inSync: []int{1},
				roles: []clustering.Role{P, R, No}, instanceErrors: map[int]string{
					2: "seeding from instance 1: it has executed nothing and the primary's binary logs no longer hold 0-1-5"}},
		},
		{
			name: "a new empty instance, not yet replicating, is seeded before it is ever pointed at the primary",
			d:    desired(3), rec: record(0),
			obs:  observe(md.primary(0, "0-1-10", purged("0-1-5")), md.replica(1, 0, "0-1-10"), md.fresh(2)),
			want: expect{kind: clustering.Repair, steps: []string{"seed 2 from 1"}, inSync: []int{1}},
		},
		{
			name: "with no replica in sync the seed dumps the primary",
			d:    desired(3), rec: record(0),
			obs: observe(md.primary(0, "0-1-10", purged("0-1-5")),
				md.replica(1, 0, "0-1-2", received("0-1-10"), lag(time.Minute)), md.fresh(2)),
			want: expect{kind: clustering.Repair, steps: []string{"seed 2 from 0"}, roles: []clustering.Role{P, R, No}},
		},
		{
			name: "MySQL: an empty replica lacking the primary's gtid_purged is seeded",
			d:    desired(3, engine(mysql.MySQL)), rec: record(0),
			obs: observe(my.primary(0, uuid+":1-10", purged(uuid+":1-5")), my.fresh(1),
				my.replica(2, 0, uuid+":1-10")),
			want: expect{kind: clustering.Repair, steps: []string{"seed 1 from 2"}, inSync: []int{2}},
		},
		{
			name: "an empty replica is pointed at a primary whose binary logs hold its whole history",
			d:    desired(3), rec: record(0),
			obs:  observe(md.primary(0, "0-1-10", purged("")), md.replica(1, 0, "0-1-10"), md.fresh(2)),
			want: expect{kind: clustering.Repair, steps: []string{"replicate 2 from 0"}, inSync: []int{1}},
		},
		{
			name: "a seeded replica, which executed the dump's position, is pointed at the primary",
			d:    desired(3), rec: record(0),
			obs: observe(md.primary(0, "0-1-10", purged("0-1-5")), md.replica(1, 0, "0-1-10"), md.fresh(2, func(in *instance) {
				in.obs.Status.Executed = gtids(mysql.MariaDB, "0-1-8")
			})),
			want: expect{kind: clustering.Repair, steps: []string{"replicate 2 from 0"}, inSync: []int{1}},
		},
		{
			name: "a replica that cannot catch up and holds only the primary's transactions is rebuilt, never seeded over",
			d:    desired(3), rec: record(0),
			obs: observe(md.primary(0, "0-1-10", purged("0-1-5")), md.replica(1, 0, "0-1-10"),
				md.replica(2, 0, "0-1-3", receiverError(1236, "Could not find GTID state requested by slave"))),
			want: expect{kind: clustering.Repair, steps: []string{"rebuild 2 discarding "}, inSync: []int{1},
				roles: []clustering.Role{P, R, No},
				instanceErrors: map[int]string{2: "rebuilt: the primary's binary logs no longer hold 0-1-5 " +
					"and instance 2, which has executed 0-1-3, lacks some of it; all it holds is on the primary"}},
		},
		{
			name: "a replica that cannot catch up and holds a transaction the primary lacks is reported, never emptied",
			d:    desired(3), rec: record(0),
			obs: observe(md.primary(0, "0-1-10", purged("0-1-5")), md.replica(1, 0, "0-1-10"),
				md.replica(2, 0, "0-1-3,1-1-4", receiverError(1236, "Could not find GTID state requested by slave"))),
			want: expect{kind: clustering.Steady, inSync: []int{1}, roles: []clustering.Role{P, R, No},
				instanceErrors: map[int]string{2: "cannot catch up: the primary's binary logs no longer hold 0-1-5 " +
					"and instance 2, which has executed 0-1-3,1-1-4, lacks some of it; it holds transactions the " +
					"primary lacks, so it is not rebuilt"}},
		},
		{
			name: "an empty replica waits while the primary's purged transactions cannot be read",
			d:    desired(3), rec: record(0),
			obs: observe(md.primary(0, "0-1-10", purgedUnreadable()), md.replica(1, 0, "0-1-10"), md.fresh(2)),
			want: expect{kind: clustering.Steady, inSync: []int{1}, instanceErrors: map[int]string{
				2: "could not be read: SHOW BINARY LOGS: lost connection"}},
		},
		{
			name: "an instance being seeded is left alone, and its seed's progress reported",
			d:    desired(3), rec: record(0),
			obs: observe(md.primary(0, "0-1-10", purged("0-1-5")), md.replica(1, 0, "0-1-10"),
				md.fresh(2, seeding("seed Job shop-seed-2 runs"))),
			want: expect{kind: clustering.Steady, inSync: []int{1}, roles: []clustering.Role{P, R, No},
				instanceErrors: map[int]string{2: "seed Job shop-seed-2 runs"}},
		},
		{
			name: "an instance being seeded is no switchover target",
			d:    desired(3, requestPrimary(2)), rec: record(0),
			obs: observe(md.primary(0, "0-1-10", purged("0-1-5")), md.replica(1, 0, "0-1-10"),
				md.fresh(2, seeding("seed Job shop-seed-2 runs"))),
			want: expect{kind: clustering.Refused, reason: "switchover to instance 2 refused: instance 2 does not replicate",
				inSync: []int{1}},
		},
	})
}

// A change of primary is saved with the record before the new primary turns writable, and reported by the
// pass that completes it: the failover's own, or a standby's that promotes the recorded primary after the
// controller that began the failover died while promoting it.
func TestDecideRecordsAndCompletesChanges(t *testing.T) {
	g := NewWithT(t)
	plan := clustering.Decide(desired(3), record(0), observe(unreachable(), md.replica(1, 0, "0-1-10", receiverStopped()),
		md.replica(2, 0, "0-1-10", receiverStopped())))
	g.Expect(plan.Decision.Kind).To(Equal(clustering.Failover))
	g.Expect(plan.Record.Change).To(Equal(&clustering.Change{Kind: clustering.Failover, From: 0,
		Reason: plan.Decision.Reason}))
	g.Expect(plan.Completed).To(Equal(&plan.Decision))
	g.Expect(plan.Steps[0].Record.Change).To(Equal(plan.Record.Change), "saved before the promotion")

	died := record(1)
	died.Change = &clustering.Change{Kind: clustering.Failover, From: 0, Reason: "primary 0 is unreachable"}
	runDecideCases(t, []decideCase{
		{
			name: "a recorded primary left replicating by a controller that died promoting it is promoted",
			d:    desired(3), rec: died,
			obs: observe(unreachable(),
				md.replica(1, 0, "0-1-10", receiverStopped(), received("0-1-12")),
				md.replica(2, 0, "0-1-12", receiverStopped())),
			want: expect{kind: clustering.Repair, steps: []string{"promote 1 (semi-sync wait 1)", "replicate 2 from 1"},
				record: "primary=1 errant=[]", roles: []clustering.Role{U, P, No},
				completed: "Failover{from: 0, to: 1, reason: primary 0 is unreachable}"},
		},
		{
			name: "a steady primary completes nothing",
			d:    desired(3), rec: died,
			obs:  observe(unreachable(), md.primary(1, "0-1-12"), md.replica(2, 1, "0-1-12")),
			want: expect{kind: clustering.Steady, inSync: []int{2}},
		},
	})
}

func TestDecideErrant(t *testing.T) {
	runDecideCases(t, []decideCase{
		{
			name: "a replica with a write of its own is recorded errant, stops receiving, is not repointed",
			d:    desired(3), rec: record(0),
			obs: observe(md.primary(0, "0-1-10"), md.replica(1, 0, "0-1-10"), md.replica(2, 0, "0-1-10,0-3-1")),
			want: expect{kind: clustering.Repair, record: "primary=0 errant=[2]",
				steps:  []string{"save-record primary=0 errant=[2]", "stop-replica-io 2"},
				inSync: []int{1}, errant: []int{2}, roles: []clustering.Role{P, R, E}},
		},
		{
			name: "a fenced errant replica is steady: no writes",
			d:    desired(3), rec: record(0, 2),
			obs: observe(md.primary(0, "0-1-12"), md.replica(1, 0, "0-1-12"),
				md.replica(2, 0, "0-1-10,0-3-1", receiverStopped())),
			want: expect{kind: clustering.Steady, record: "primary=0 errant=[2]", inSync: []int{1}, errant: []int{2}},
		},
		{
			name: "an errant replica whose replication broke is not restarted",
			d:    desired(3), rec: record(0, 2),
			obs: observe(md.primary(0, "0-1-12"), md.replica(1, 0, "0-1-12"),
				md.replica(2, 0, "0-1-10,0-3-1", stopped(), applierError(1950, "An attempt was made to binlog GTID 0-1-11"))),
			want: expect{kind: clustering.Steady, inSync: []int{1}, errant: []int{2}},
		},
		{
			name: "a replica read after the primary holds the primary's newer transactions: not errant",
			d:    desired(3), rec: record(0),
			obs:  observe(md.primary(0, "0-1-10"), md.replica(1, 0, "0-1-12"), md.replica(2, 0, "0-1-10")),
			want: expect{kind: clustering.Steady, inSync: []int{1, 2}},
		},
		{
			name: "on MySQL too, the primary's own newer transactions are not errant, a replica's own are",
			d:    desired(3, engine(mysql.MySQL)), rec: record(0),
			obs: observe(
				my.primary(0, mysqlUUID(0)+":1-10"),
				my.replica(1, 0, mysqlUUID(0)+":1-14"),
				my.replica(2, 0, mysqlUUID(0)+":1-10,"+mysqlUUID(2)+":1")),
			want: expect{kind: clustering.Repair, steps: []string{"save-record primary=0 errant=[2]", "stop-replica-io 2"},
				inSync: []int{1}, errant: []int{2}},
		},
		{
			name: "a rebuilt instance leaves the errant list and joins",
			d:    desired(3), rec: record(0, 2),
			obs: observe(md.primary(0, "0-1-12"), md.replica(1, 0, "0-1-12"), md.fresh(2)),
			want: expect{kind: clustering.Repair, record: "primary=0 errant=[]",
				steps: []string{"save-record primary=0 errant=[]", "replicate 2 from 0"}, inSync: []int{1}},
		},
		{
			name: "an unreachable errant instance stays errant",
			d:    desired(3), rec: record(0, 2),
			obs:  observe(md.primary(0, "0-1-12"), md.replica(1, 0, "0-1-12"), unreachable()),
			want: expect{kind: clustering.Steady, record: "primary=0 errant=[2]", inSync: []int{1}, errant: []int{2}},
		},
		{
			name: "a returning old primary whose transactions the new one has rejoins as a replica",
			d:    desired(3), rec: record(1),
			obs: observe(md.fresh(0, func(in *instance) { in.obs.Status.Executed = gtids(mysql.MariaDB, "0-1-10") }),
				md.primary(1, "0-1-10,0-2-5"), md.replica(2, 1, "0-1-10,0-2-5")),
			want: expect{kind: clustering.Repair, steps: []string{"replicate 0 from 1"}, inSync: []int{2}},
		},
		{
			name: "a returning old primary with a commit no replica received is errant and kept out",
			d:    desired(3), rec: record(1),
			obs: observe(md.fresh(0, func(in *instance) { in.obs.Status.Executed = gtids(mysql.MariaDB, "0-1-11") }),
				md.primary(1, "0-1-10,0-2-5"), md.replica(2, 1, "0-1-10,0-2-5")),
			want: expect{kind: clustering.Repair, record: "primary=1 errant=[0]",
				steps: []string{"save-record primary=1 errant=[0]"}, inSync: []int{2}, errant: []int{0},
				roles: []clustering.Role{E, P, R}},
		},
		{
			name: "a returning old primary that is still writable is fenced first",
			d:    desired(3), rec: record(1),
			obs: observe(md.primary(0, "0-1-11"), md.primary(1, "0-1-10,0-2-5"),
				md.replica(2, 1, "0-1-10,0-2-5")),
			want: expect{kind: clustering.Repair, steps: []string{"fence 0"}, inSync: []int{2},
				roles: []clustering.Role{No, P, R}},
		},
	})
}

func TestDecideFailover(t *testing.T) {
	runDecideCases(t, []decideCase{
		{
			name: "a lost primary: every replica stops receiving before one is chosen",
			d:    desired(3), rec: record(0),
			obs: observe(unreachable(), md.replica(1, 0, "0-1-10", connecting()),
				md.replica(2, 0, "0-1-9", connecting())),
			want: expect{kind: clustering.FailoverStarted, from: 0, to: -1, reason: "primary 0 is unreachable",
				steps: []string{"stop-replica-io 1", "stop-replica-io 2"}, record: "primary=0 errant=[]",
				roles: []clustering.Role{P, No, No}},
		},
		{
			name: "the replica that received the most is promoted, even if it applied less",
			d:    desired(3), rec: record(0),
			obs: observe(unreachable(),
				md.replica(1, 0, "0-1-7", received("0-1-10"), receiverStopped()),
				md.replica(2, 0, "0-1-9", receiverStopped())),
			want: expect{kind: clustering.Failover, from: 0, to: 1, reason: "primary 0 is unreachable",
				record: "primary=1 errant=[] deposed=0", steps: []string{
					"save-record primary=1 errant=[] deposed=0", "promote 1 (semi-sync wait 1)", "replicate 2 from 1",
				}, roles: []clustering.Role{U, P, No}},
		},
		{
			name: "equal replicas: the lowest index",
			d:    desired(3), rec: record(0),
			obs: observe(unreachable(), md.replica(1, 0, "0-1-10", receiverStopped()),
				md.replica(2, 0, "0-1-10", receiverStopped())),
			want: expect{kind: clustering.Failover, from: 0, to: 1, steps: []string{
				"save-record primary=1 errant=[] deposed=0", "promote 1 (semi-sync wait 1)", "replicate 2 from 1",
			}},
		},
		{
			name: "equal replicas: one away from the controller's node before the lowest index",
			d:    desired(3, withController(1)), rec: record(0),
			obs: observe(unreachable(), md.replica(1, 0, "0-1-10", receiverStopped()),
				md.replica(2, 0, "0-1-10", receiverStopped())),
			want: expect{kind: clustering.Failover, from: 0, to: 2, steps: []string{
				"save-record primary=2 errant=[] deposed=0", "promote 2 (semi-sync wait 1)", "replicate 1 from 2",
			}},
		},
		{
			name: "the controller's node does not outweigh a transaction only its replica holds",
			d:    desired(3, withController(1)), rec: record(0),
			obs: observe(unreachable(), md.replica(1, 0, "0-1-10", receiverStopped()),
				md.replica(2, 0, "0-1-9", receiverStopped())),
			want: expect{kind: clustering.Failover, from: 0, to: 1, steps: []string{
				"save-record primary=1 errant=[] deposed=0", "promote 1 (semi-sync wait 1)", "replicate 2 from 1",
			}},
		},
		{
			name: "the requested primary before one away from the controller's node",
			d:    desired(3, withController(2), requestPrimary(2)), rec: record(0),
			obs: observe(unreachable(), md.replica(1, 0, "0-1-10", receiverStopped()),
				md.replica(2, 0, "0-1-10", receiverStopped())),
			want: expect{kind: clustering.Failover, from: 0, to: 2, steps: []string{
				"save-record primary=2 errant=[] deposed=0", "promote 2 (semi-sync wait 1)", "replicate 1 from 2",
			}},
		},
		{
			name: "equal replicas: the requested primary",
			d:    desired(3, requestPrimary(2)), rec: record(0),
			obs: observe(unreachable(), md.replica(1, 0, "0-1-10", receiverStopped()),
				md.replica(2, 0, "0-1-10", receiverStopped())),
			want: expect{kind: clustering.Failover, from: 0, to: 2, steps: []string{
				"save-record primary=2 errant=[] deposed=0", "promote 2 (semi-sync wait 1)", "replicate 1 from 2",
			}},
		},
		{
			name: "the requested primary is not promoted when it lacks what another has",
			d:    desired(3, requestPrimary(2)), rec: record(0),
			obs: observe(unreachable(), md.replica(1, 0, "0-1-10", receiverStopped()),
				md.replica(2, 0, "0-1-9", receiverStopped())),
			want: expect{kind: clustering.Failover, from: 0, to: 1, steps: []string{
				"save-record primary=1 errant=[] deposed=0", "promote 1 (semi-sync wait 1)", "replicate 2 from 1",
			}},
		},
		{
			name: "replicas that diverged: no replica is promoted",
			d:    desired(3), rec: record(0),
			obs: observe(unreachable(), md.replica(1, 0, "0-1-10", receiverStopped()),
				md.replica(2, 0, "0-1-9,1-7-3", receiverStopped())),
			want: expect{kind: clustering.Refused, reason: "no replica holds every transaction the others hold"},
		},
		{
			name: "MySQL: a replica missing a transaction in the middle is not promoted over one that has it",
			d:    desired(3, engine(mysql.MySQL)), rec: record(0),
			obs: observe(unreachable(),
				my.replica(1, 0, mysqlUUID(0)+":1-8:10", receiverStopped()),
				my.replica(2, 0, mysqlUUID(0)+":1-10", receiverStopped())),
			want: expect{kind: clustering.Failover, from: 0, to: 2, steps: []string{
				"save-record primary=2 errant=[] deposed=0", "promote 2 (semi-sync wait 1)", "replicate 1 from 2",
			}},
		},
		{
			name: "an errant replica is never promoted and not repointed",
			d:    desired(3), rec: record(0, 2),
			obs: observe(unreachable(), md.replica(1, 0, "0-1-10", receiverStopped()),
				md.replica(2, 0, "0-1-8,0-3-1", receiverStopped())),
			want: expect{kind: clustering.Failover, from: 0, to: 1, record: "primary=1 errant=[2] deposed=0",
				steps:  []string{"save-record primary=1 errant=[2] deposed=0", "promote 1 (semi-sync wait 1)"},
				errant: []int{2}},
		},
		{
			name: "an errant replica holding the lost primary's transactions the others lack stops the failover",
			d:    desired(3), rec: record(0, 2),
			obs: observe(unreachable(), md.replica(1, 0, "0-1-10", receiverStopped()),
				md.replica(2, 0, "0-1-12,0-3-1", receiverStopped())),
			want: expect{kind: clustering.Refused, reason: "1 lacks 0-1-12 of 2", errant: []int{2}},
		},
		{
			name: "MariaDB, a replica silent: the acknowledgement may be on it alone",
			d:    desired(3), rec: record(0),
			obs: observe(unreachable(), md.replica(1, 0, "0-1-10", receiverStopped()), unreachable()),
			want: expect{kind: clustering.Refused,
				reason: "so 2 of the 2 other instances must answer to be sure no acknowledged transaction is lost, and [2] do not"},
		},
		{
			name: "MySQL, four instances waiting for two: one silent replica of three is fine",
			d:    desired(4, engine(mysql.MySQL)), rec: waitRecorded(record(0), 2),
			obs: observe(unreachable(), my.replica(1, 0, mysqlUUID(0)+":1-10", receiverStopped()), unreachable(),
				my.replica(3, 0, mysqlUUID(0)+":1-9", receiverStopped())),
			want: expect{kind: clustering.Failover, from: 0, to: 1, steps: []string{
				"save-record primary=1 errant=[] deposed=0", "promote 1 (semi-sync wait 2)", "replicate 3 from 1",
			}},
		},
		{
			name: "MySQL, four instances waiting for two: two silent replicas of three are not",
			d:    desired(4, engine(mysql.MySQL)), rec: waitRecorded(record(0), 2),
			obs: observe(unreachable(), my.replica(1, 0, mysqlUUID(0)+":1-10", receiverStopped()), unreachable(),
				unreachable()),
			want: expect{kind: clustering.Refused, reason: "2 of the 3 other instances must answer"},
		},
		{
			name: "a primary that answers but is unhealthy is fenced first",
			d:    desired(3), rec: record(0),
			obs: observe(md.primary(0, "0-1-10", unhealthy("its volume is read-only")),
				md.replica(1, 0, "0-1-10"), md.replica(2, 0, "0-1-10")),
			want: expect{kind: clustering.FailoverStarted, from: 0, to: -1, reason: "its volume is read-only",
				steps: []string{"fence 0", "stop-replica-io 1", "stop-replica-io 2"}, inSync: []int{1, 2}},
		},
		{
			name: "an unhealthy primary fenced, receivers stopped: the failover completes",
			d:    desired(3), rec: record(0),
			obs: observe(md.primary(0, "0-1-10", readOnly(), unhealthy("its volume is read-only")),
				md.replica(1, 0, "0-1-10", receiverStopped()), md.replica(2, 0, "0-1-10", receiverStopped())),
			want: expect{kind: clustering.Failover, from: 0, to: 1, steps: []string{
				"fence 0", "save-record primary=1 errant=[] deposed=0", "promote 1 (semi-sync wait 1)", "replicate 2 from 1",
			}, roles: []clustering.Role{No, P, No}},
		},
		{
			name: "a primary back with an empty data directory is failed over, not followed",
			d:    desired(3), rec: record(0),
			obs: observe(md.fresh(0), md.replica(1, 0, "0-1-10", connecting()),
				md.replica(2, 0, "0-1-10", connecting())),
			want: expect{kind: clustering.FailoverStarted, from: 0, to: -1, reason: "primary 0 has lost its data",
				steps: []string{"fence 0", "stop-replica-io 1", "stop-replica-io 2"}},
		},
		{
			name: "the best replica cannot apply what it received: refused",
			d:    desired(3), rec: record(0),
			obs: observe(unreachable(),
				md.replica(1, 0, "0-1-7", received("0-1-10"), receiverStopped(), applierError(1032, "row not found")),
				md.replica(2, 0, "0-1-9", receiverStopped())),
			want: expect{kind: clustering.Refused, reason: "replica 1 holds the most transactions but its applier is stopped"},
		},
		{
			name: "a stopped applier that has applied everything does not matter",
			d:    desired(3), rec: record(0),
			obs: observe(unreachable(), md.replica(1, 0, "0-1-10", stopped()), md.replica(2, 0, "0-1-9", receiverStopped())),
			want: expect{kind: clustering.Failover, from: 0, to: 1, steps: []string{
				"save-record primary=1 errant=[] deposed=0", "promote 1 (semi-sync wait 1)", "replicate 2 from 1",
			}},
		},
		{
			name: "a fresh instance answering is no candidate; it joins the new primary",
			d:    desired(3), rec: record(0),
			obs: observe(unreachable(), md.replica(1, 0, "0-1-10", receiverStopped()), md.fresh(2)),
			want: expect{kind: clustering.Failover, from: 0, to: 1, steps: []string{
				"save-record primary=1 errant=[] deposed=0", "promote 1 (semi-sync wait 1)", "replicate 2 from 1",
			}},
		},
		{
			name: "a writable stranger during a failover is fenced and neither promoted nor repointed",
			d:    desired(3), rec: record(0),
			obs: observe(unreachable(), md.replica(1, 0, "0-1-10", receiverStopped()),
				md.replica(2, 0, "0-1-10,0-3-2", receiverStopped(), writable())),
			want: expect{kind: clustering.Failover, from: 0, to: 1, steps: []string{
				"fence 2", "save-record primary=1 errant=[] deposed=0", "promote 1 (semi-sync wait 1)",
			}},
		},
		{
			name: "a single instance lost: nothing to fail over to",
			d:    desired(1), rec: record(0), obs: observe(unreachable()),
			want: expect{kind: clustering.Refused, reason: "there is no other instance to fail over to",
				roles: []clustering.Role{P}},
		},
		{
			name: "a recorded primary beyond the instances is replaced; every instance must answer",
			d:    desired(2), rec: record(2),
			obs: observe(md.replica(0, 2, "0-3-10", receiverStopped()), md.replica(1, 2, "0-3-10", receiverStopped())),
			want: expect{kind: clustering.Failover, from: 2, to: 0, reason: "not among the 2 instances", steps: []string{
				"save-record primary=0 errant=[]", "promote 0 (semi-sync wait 1)", "replicate 1 from 0",
			}},
		},
		{
			name: "a recorded primary beyond the instances, one of them silent: refused",
			d:    desired(2), rec: record(2),
			obs:  observe(md.replica(0, 2, "0-3-10", receiverStopped()), unreachable()),
			want: expect{kind: clustering.Refused, reason: "so 2 of the 2 other instances must answer"},
		},
	})
}

func TestDecideSwitchover(t *testing.T) {
	healthy := func(opts ...option) []clustering.Observation {
		return observe(md.primary(0, "0-1-10"), md.replica(1, 0, "0-1-10", opts...), md.replica(2, 0, "0-1-10"))
	}
	runDecideCases(t, []decideCase{
		{
			name: "to a healthy replica: catch up, fence, catch up, record, the other replica follows, promote, the old primary follows",
			d:    desired(3, requestPrimary(1)), rec: record(0), obs: healthy(),
			want: expect{kind: clustering.Switchover, from: 0, to: 1, record: "primary=1 errant=[]", steps: []string{
				"wait 1 for 0 within 10s", "fence 0", "wait 1 for 0 within 1m0s",
				"save-record primary=1 errant=[]", "replicate 2 from 1 within 5s", "promote 1 (semi-sync wait 1)",
				"replicate 0 from 1",
			}, roles: []clustering.Role{No, P, No}},
		},
		{
			name: "the request for the current primary is steady",
			d:    desired(3, requestPrimary(0)), rec: record(0), obs: healthy(),
			want: expect{kind: clustering.Steady, inSync: []int{1, 2}},
		},
		{
			name: "refused: the target lags beyond the bound",
			d:    desired(3, requestPrimary(1)), rec: record(0), obs: healthy(lag(30 * time.Second)),
			want: expect{kind: clustering.Refused,
				reason: "switchover to instance 1 refused: it lags 30s behind the primary, more than the bound of 10s",
				inSync: []int{2}, roles: []clustering.Role{P, R, R}},
		},
		{
			name: "refused: the target's lag is unknown",
			d:    desired(3, requestPrimary(1)), rec: record(0), obs: healthy(unknownLag()),
			want: expect{kind: clustering.Refused, reason: "its replication lag is unknown", inSync: []int{2}},
		},
		{
			name: "refused: the target is unreachable",
			d:    desired(3, requestPrimary(1)), rec: record(0),
			obs:  observe(md.primary(0, "0-1-10"), unreachable(), md.replica(2, 0, "0-1-10")),
			want: expect{kind: clustering.Refused, reason: "it is unreachable", inSync: []int{2}},
		},
		{
			name: "refused: the target is errant (and fenced meanwhile)",
			d:    desired(3, requestPrimary(2)), rec: record(0),
			obs: observe(md.primary(0, "0-1-10"), md.replica(1, 0, "0-1-10"), md.replica(2, 0, "0-1-10,0-3-1")),
			want: expect{kind: clustering.Refused, reason: "it has errant transactions 0-3-1",
				steps: []string{"save-record primary=0 errant=[2]", "stop-replica-io 2"}, inSync: []int{1},
				errant: []int{2}},
		},
		{
			name: "refused: the target's replication is stopped; it is restarted for the next pass",
			d:    desired(3, requestPrimary(1)), rec: record(0), obs: healthy(stopped()),
			want: expect{kind: clustering.Refused, reason: "replication on instance 1 is not running",
				steps: []string{"replicate 1 from 0"}, inSync: []int{2}},
		},
		{
			name: "refused: the target replicates from elsewhere",
			d:    desired(3, requestPrimary(1)), rec: record(0),
			obs: observe(md.primary(0, "0-1-10"), md.replica(1, 2, "0-1-10"), md.replica(2, 0, "0-1-10")),
			want: expect{kind: clustering.Refused, reason: "instance 1 replicates from db-2:3306, not from the primary 0",
				steps: []string{"replicate 1 from 0"}, inSync: []int{2}},
		},
		{
			name: "refused: the target is unhealthy",
			d:    desired(3, requestPrimary(1)), rec: record(0), obs: healthy(unhealthy("its Pod is not ready")),
			want: expect{kind: clustering.Refused, reason: "it is unhealthy: its Pod is not ready", inSync: []int{1, 2}},
		},
		{
			name: "refused: no such instance",
			d:    desired(3, requestPrimary(5)), rec: record(0), obs: healthy(),
			want: expect{kind: clustering.Refused, reason: "there is no instance 5 (0..2)", inSync: []int{1, 2}},
		},
		{
			name: "errant and unreachable instances are left out",
			d:    desired(4, requestPrimary(1)), rec: record(0, 3),
			obs: observe(md.primary(0, "0-1-10"), md.replica(1, 0, "0-1-10"), unreachable(),
				md.replica(3, 0, "0-1-5,0-4-1", receiverStopped())),
			want: expect{kind: clustering.Switchover, from: 0, to: 1, record: "primary=1 errant=[3]", steps: []string{
				"wait 1 for 0 within 10s", "fence 0", "wait 1 for 0 within 1m0s",
				"save-record primary=1 errant=[3]", "promote 1 (semi-sync wait 1)",
				"replicate 0 from 1",
			}, errant: []int{3}},
		},
		{
			name: "after the switch, the request stays and the set is steady",
			d:    desired(3, requestPrimary(1)), rec: record(1),
			obs:  observe(md.replica(0, 1, "0-1-10,0-2-3"), md.primary(1, "0-1-10,0-2-3"), md.replica(2, 1, "0-1-10,0-2-3")),
			want: expect{kind: clustering.Steady, inSync: []int{0, 2}},
		},
	})
}

func TestDefaultSemiSyncWaitAndQuorum(t *testing.T) {
	g := NewWithT(t)
	type row struct{ n, mysqlWait, mysqlQuorum, mariaWait, mariaQuorum int }
	for _, r := range []row{
		{1, 0, 1, 0, 1}, {2, 1, 1, 1, 1}, {3, 1, 2, 1, 2}, {4, 2, 2, 1, 3}, {5, 2, 3, 1, 4}, {6, 3, 3, 1, 5},
	} {
		my, ma := clustering.DefaultSemiSyncWait(mysql.MySQL, r.n), clustering.DefaultSemiSyncWait(mysql.MariaDB, r.n)
		g.Expect([]int{my, clustering.FailoverQuorum(r.n, my), ma, clustering.FailoverQuorum(r.n, ma)}).To(
			Equal([]int{r.mysqlWait, r.mysqlQuorum, r.mariaWait, r.mariaQuorum}), "%d instances", r.n)
	}
}

// The primary's server_id is the identity of its data directory (see Record.PrimaryServerID): a primary that
// answers with another one is a new server on its ordinal, lost whatever it holds and whoever else answers.
func TestDecideLostVolume(t *testing.T) {
	runDecideCases(t, []decideCase{
		{
			name: "a new data directory on the primary's ordinal is failed over, even holding transactions",
			d:    desired(3), rec: record(0),
			// As an image's entrypoint leaves a new data directory when it logs its set-up.
			obs: observe(md.build(0, "0-77-2", []option{serverID(77)}),
				md.replica(1, 0, "0-1-10", connecting()), md.replica(2, 0, "0-1-10", connecting())),
			want: expect{kind: clustering.FailoverStarted, from: 0, to: -1,
				reason: "answers with server_id 77, not the recorded 1",
				steps:  []string{"fence 0", "stop-replica-io 1", "stop-replica-io 2"}},
		},
		{
			name: "a new data directory on the primary's ordinal while the replicas are still starting: never promoted",
			d:    desired(3), rec: record(0),
			obs: observe(md.build(0, "0-77-2", []option{serverID(77)}), unreachable(), unreachable()),
			want: expect{kind: clustering.Refused, reason: "failover refused: primary 0 has lost its data",
				steps: []string{"fence 0"}},
		},
		{
			name: "the replicas back, the failover goes to the one that holds everything",
			d:    desired(3), rec: record(0),
			obs: observe(md.build(0, "0-77-2", []option{serverID(77)}),
				md.replica(1, 0, "0-1-10", receiverStopped()), md.replica(2, 0, "0-1-9", receiverStopped())),
			want: expect{kind: clustering.Failover, from: 0, to: 1, steps: []string{
				"fence 0", "save-record primary=1 errant=[] deposed=0", "promote 1 (semi-sync wait 1)", "replicate 2 from 1",
			}},
		},
	})
}

func TestDecideKeepsThePrimarysServerID(t *testing.T) {
	g := NewWithT(t)
	legacy := clustering.Record{Primary: ptr(0)}

	// A record without the primary's server_id learns it from the writable primary, once.
	plan := clustering.Decide(desired(2), legacy, observe(md.primary(0, "0-1-10"), md.replica(1, 0, "0-1-10")))
	g.Expect(plan.Decision.Kind).To(Equal(clustering.Repair))
	g.Expect(plan.Steps).To(HaveLen(1))
	g.Expect(plan.Steps[0].Action).To(Equal(clustering.ActionSaveRecord))
	g.Expect(plan.Record.PrimaryServerID).To(Equal(uint32(1)))
	plan = clustering.Decide(desired(2), plan.Record, observe(md.primary(0, "0-1-10"), md.replica(1, 0, "0-1-10")))
	g.Expect(plan.Decision.Kind).To(Equal(clustering.Steady))

	// Not from a read-only one, which may be a new server: it is promoted, as a restarted primary is.
	plan = clustering.Decide(desired(2), legacy, observe(md.primary(0, "0-1-10", readOnly()), md.replica(1, 0, "0-1-10")))
	g.Expect(plan.Record.PrimaryServerID).To(BeZero())
	g.Expect(plan.Steps[0].String()).To(Equal("promote 0 (semi-sync wait 1)"))

	// Every change of primary records the new primary's server_id.
	plan = clustering.Decide(desired(2), clustering.Record{}, observe(md.fresh(0), md.fresh(1)))
	g.Expect(plan.Decision.Kind).To(Equal(clustering.Bootstrap))
	g.Expect(plan.Record.PrimaryServerID).To(Equal(uint32(1)))
	plan = clustering.Decide(desired(2), record(0), observe(unreachable(), md.replica(1, 0, "0-1-10", receiverStopped())))
	g.Expect(plan.Decision.Kind).To(Equal(clustering.Failover))
	g.Expect(plan.Record.PrimaryServerID).To(Equal(uint32(2)))
	plan = clustering.Decide(desired(2, requestPrimary(1)), record(0),
		observe(md.primary(0, "0-1-10"), md.replica(1, 0, "0-1-10")))
	g.Expect(plan.Decision.Kind).To(Equal(clustering.Switchover))
	g.Expect(plan.Record.PrimaryServerID).To(Equal(uint32(2)))
	plan = clustering.Decide(desired(2), clustering.Record{}, observe(md.primary(0, "0-1-10"), md.fresh(1)))
	g.Expect(plan.Decision.Kind).To(Equal(clustering.Adopt))
	g.Expect(plan.Record.PrimaryServerID).To(Equal(uint32(1)))
}

func ptr(i int) *int { return &i }

// The failover quorum rests on the wait count the primary's commits had, which the record keeps below the one
// configured: raised once the primary waits for more, lowered before it waits for fewer.
func TestDecideWaitCountFollowsThePrimary(t *testing.T) {
	runDecideCases(t, []decideCase{
		{
			name: "MySQL scaled from 3 to 4: the primary still waits for one, and is configured for two",
			d:    desired(4, engine(mysql.MySQL)), rec: record(0),
			obs: observe(my.primary(0, mysqlUUID(0)+":1-10"), my.replica(1, 0, mysqlUUID(0)+":1-10"),
				my.replica(2, 0, mysqlUUID(0)+":1-10"), my.fresh(3)),
			want: expect{kind: clustering.Repair, steps: []string{"configure-semi-sync 0 (wait 2)", "replicate 3 from 0"},
				inSync: []int{1, 2}},
		},
		{
			name: "MySQL scaled from 3 to 4: the primary lost before it waited for two needs every replica",
			d:    desired(4, engine(mysql.MySQL)), rec: record(0),
			obs: observe(unreachable(), my.replica(1, 0, mysqlUUID(0)+":1-10", receiverStopped()), unreachable(),
				my.replica(3, 0, mysqlUUID(0)+":1-9", receiverStopped())),
			want: expect{kind: clustering.Refused,
				reason: "commits waited for 1 acknowledgement(s), so 3 of the 3 other instances must answer"},
		},
		{
			name: "MySQL scaled from 3 to 4: once the primary waits for two, the record says so",
			d:    desired(4, engine(mysql.MySQL)), rec: record(0),
			obs: observe(my.primary(0, mysqlUUID(0)+":1-10", semiSync(true, 2, never)),
				my.replica(1, 0, mysqlUUID(0)+":1-10"), my.replica(2, 0, mysqlUUID(0)+":1-10"),
				my.replica(3, 0, mysqlUUID(0)+":1-10")),
			want: expect{kind: clustering.Repair, steps: []string{"save-record primary=0 errant=[]"},
				inSync: []int{1, 2, 3}},
		},
		{
			name: "MySQL scaled from 5 to 3: the record is lowered before the primary waits for fewer",
			d:    desired(3, engine(mysql.MySQL)), rec: waitRecorded(record(0), 2),
			obs: observe(my.primary(0, mysqlUUID(0)+":1-10", semiSync(true, 2, never)),
				my.replica(1, 0, mysqlUUID(0)+":1-10"), my.replica(2, 0, mysqlUUID(0)+":1-10")),
			want: expect{kind: clustering.Repair, steps: []string{"save-record primary=0 errant=[]",
				"configure-semi-sync 0 (wait 1)"}, inSync: []int{1, 2}},
		},
	})
	g := NewWithT(t)
	plan := clustering.Decide(desired(4, engine(mysql.MySQL)), record(0), observe(
		my.primary(0, mysqlUUID(0)+":1-10", semiSync(true, 2, never)), my.replica(1, 0, mysqlUUID(0)+":1-10"),
		my.replica(2, 0, mysqlUUID(0)+":1-10"), my.replica(3, 0, mysqlUUID(0)+":1-10")))
	g.Expect(plan.Record.SemiSyncWait).To(Equal(2))
	plan = clustering.Decide(desired(3, engine(mysql.MySQL)), waitRecorded(record(0), 2), observe(
		my.primary(0, mysqlUUID(0)+":1-10", semiSync(true, 2, never)), my.replica(1, 0, mysqlUUID(0)+":1-10"),
		my.replica(2, 0, mysqlUUID(0)+":1-10")))
	g.Expect(plan.Record.SemiSyncWait).To(Equal(1))
}

func shrinkTo(k int) func(*clustering.Desired) { return func(d *clustering.Desired) { d.ShrinkTo = k } }

// A scale-down (Desired.ShrinkTo) is ready only once the primary stays, the leaving instances receive nothing,
// and a staying replica holds everything the primary executed; until then every rule counts all instances.
func TestDecideShrink(t *testing.T) {
	runDecideCases(t, []decideCase{
		{
			name: "3 to 2: the leaving replica stops receiving first; not ready while it received",
			d:    desired(3, shrinkTo(2)), rec: record(0),
			obs: observe(md.primary(0, "0-1-10"), md.replica(1, 0, "0-1-10"), md.replica(2, 0, "0-1-10")),
			want: expect{kind: clustering.Repair, steps: []string{"stop-replica-io 2"}, inSync: []int{1, 2},
				instanceErrors: map[int]string{2: "leaving: the set is scaling down to 2 instances"}},
		},
		{
			name: "3 to 2: the leaving replica stopped and the staying one holds everything: ready, nothing to do",
			d:    desired(3, shrinkTo(2)), rec: record(0),
			obs: observe(md.primary(0, "0-1-10"), md.replica(1, 0, "0-1-10"),
				md.replica(2, 0, "0-1-10", receiverStopped())),
			want: expect{kind: clustering.Steady, inSync: []int{1}, shrinkReady: 2},
		},
		{
			name: "3 to 2 under a steady stream of writes: ready once the staying replica holds what the leaving one received",
			d:    desired(3, shrinkTo(2)), rec: record(0),
			obs: observe(md.primary(0, "0-1-20"), md.replica(1, 0, "0-1-16", received("0-1-18")),
				md.replica(2, 0, "0-1-15", received("0-1-17"), receiverStopped())),
			want: expect{kind: clustering.Steady, inSync: []int{1}, shrinkReady: 2},
		},
		{
			name: "3 to 2: not ready while the staying replica lacks what the leaving one received",
			d:    desired(3, shrinkTo(2)), rec: record(0),
			obs: observe(md.primary(0, "0-1-20"), md.replica(1, 0, "0-1-16"),
				md.replica(2, 0, "0-1-15", received("0-1-17"), receiverStopped())),
			want: expect{kind: clustering.Steady, inSync: []int{1}},
		},
		{
			name: "3 to 2 with the leaving replica unreachable: everything the primary executed is needed",
			d:    desired(3, shrinkTo(2)), rec: record(0),
			obs:  observe(md.primary(0, "0-1-20"), md.replica(1, 0, "0-1-19"), unreachable()),
			want: expect{kind: clustering.Steady, inSync: []int{1}},
		},
		{
			name: "3 to 2: the staying replica's receiver had stopped: it is restarted, and not ready before it holds everything",
			d:    desired(3, shrinkTo(2)), rec: record(0),
			obs: observe(md.primary(0, "0-1-10"), md.replica(1, 0, "0-1-8", receiverStopped()),
				md.replica(2, 0, "0-1-10", receiverStopped())),
			want: expect{kind: clustering.Repair, steps: []string{"replicate 1 from 0"}},
		},
		{
			name: "3 to 2 with the primary leaving: switched over to the lowest staying instance, the leaving one not repointed",
			d:    desired(3, shrinkTo(2)), rec: record(2),
			obs: observe(md.replica(0, 2, "0-3-10"), md.replica(1, 2, "0-3-10"), md.primary(2, "0-3-10")),
			want: expect{kind: clustering.Switchover, from: 2, to: 0, steps: []string{
				"wait 0 for 2 within 10s", "fence 2", "wait 0 for 2 within 1m0s", "save-record primary=0 errant=[]",
				"replicate 1 from 0 within 5s", "promote 0 (semi-sync wait 1)",
			}},
		},
		{
			name: "3 to 2 with the primary leaving and no staying instance fit: refused, the repairs go on",
			d:    desired(3, shrinkTo(2)), rec: record(2),
			obs: observe(md.replica(0, 2, "0-3-4", lag(time.Minute)), unreachable(), md.primary(2, "0-3-10")),
			want: expect{kind: clustering.Refused, reason: "the scale-down to 2 instances waits: the primary 2 is leaving",
				steps: []string{}},
		},
		{
			name: "3 to 2 with the staying replica down: the leaving one goes on acknowledging, the writes go on",
			d:    desired(3, shrinkTo(2)), rec: record(0),
			obs: observe(md.primary(0, "0-1-10"), unreachable(), md.replica(2, 0, "0-1-10")),
			want: expect{kind: clustering.Steady, inSync: []int{2},
				instanceErrors: map[int]string{2: "once enough of the staying instances replicate"}},
		},
		{
			name: "3 to 2 with the primary leaving and instance 0 down: no switchover to 1, which nobody would acknowledge",
			d:    desired(3, shrinkTo(2)), rec: record(2),
			obs: observe(unreachable(), md.replica(1, 2, "0-3-10"), md.primary(2, "0-3-10")),
			want: expect{kind: clustering.Refused, inSync: []int{1},
				reason: "instance 1 may, but too few other instances below 2 replicate", steps: []string{}},
		},
		{
			name: "2 to 1: the primary stops waiting for acknowledgements, the record first, and the replica stops receiving",
			d:    desired(2, shrinkTo(1)), rec: record(0),
			obs: observe(md.primary(0, "0-1-10"), md.replica(1, 0, "0-1-10")),
			want: expect{kind: clustering.Repair, steps: []string{"save-record primary=0 errant=[]",
				"stop-replica-io 1", "configure-semi-sync 0 (wait 0)"}, inSync: []int{1}},
		},
		{
			name: "2 to 1: ready once the leaving replica receives nothing",
			d:    desired(2, shrinkTo(1)), rec: waitRecorded(record(0), 0),
			obs: observe(md.primary(0, "0-1-10", semiSync(false, 1, never)),
				md.replica(1, 0, "0-1-10", receiverStopped())),
			want: expect{kind: clustering.Steady, shrinkReady: 1},
		},
		{
			name: "3 to 2: a failover still needs every instance that may have acknowledged, the leaving one too",
			d:    desired(3, shrinkTo(2)), rec: record(0),
			obs:  observe(unreachable(), md.replica(1, 0, "0-1-9", receiverStopped()), unreachable()),
			want: expect{kind: clustering.Refused, reason: "2 of the 2 other instances must answer"},
		},
	})
}

// A primary that waits for more acknowledgements than it has semi-sync replicas connected blocks its writes,
// and the report says so; the repairs go on.
func TestDecideReportsBlockedWrites(t *testing.T) {
	g := NewWithT(t)
	connected := func(n, waiting int) option {
		return func(in *instance) {
			in.obs.Status.SemiSync.Replicas, in.obs.Status.SemiSync.WaitingSessions = n, waiting
		}
	}
	plan := clustering.Decide(desired(3), record(0), observe(md.primary(0, "0-1-10", connected(0, 7)),
		md.replica(1, 0, "0-1-10", stopped()), unreachable()))
	g.Expect(plan.Report.WritesBlocked).To(Equal("its commits wait for 1 semi-sync acknowledgement(s) and 0 " +
		"replica(s) are connected to give them; 7 commit(s) waiting"))
	g.Expect(plan.Steps).To(HaveLen(1), "the stopped replica is restarted meanwhile")

	plan = clustering.Decide(desired(3), record(0), observe(md.primary(0, "0-1-10", connected(1, 0)),
		md.replica(1, 0, "0-1-10"), unreachable()))
	g.Expect(plan.Report.WritesBlocked).To(BeEmpty())
	plan = clustering.Decide(desired(1), record(0), observe(md.primary(0, "0-1-10", semiSync(false, 1, never),
		connected(0, 0))))
	g.Expect(plan.Report.WritesBlocked).To(BeEmpty(), "a single server waits for nobody")
}

func preferred() func(*clustering.Desired) { return func(d *clustering.Desired) { d.Preferred = true } }

// connected is a primary with n semi-sync replicas connected.
func connected(n int) option { return func(in *instance) { in.obs.Status.SemiSync.Replicas = n } }

// Durability Preferred switches the primary's semi-sync off while no commit could return and too few replicas
// are in sync, and on again once enough are; Required keeps commits waiting.
func TestDecideDurability(t *testing.T) {
	off := semiSync(false, 1, never)
	runDecideCases(t, []decideCase{
		{
			name: "Required: commits wait while both replicas are down",
			d:    desired(3), rec: record(0),
			obs:  observe(md.primary(0, "0-1-10", connected(0)), unreachable(), unreachable()),
			want: expect{kind: clustering.Steady, roles: []clustering.Role{P, U, U}},
		},
		{
			name: "Preferred: both replicas down, semi-sync goes off",
			d:    desired(3, preferred()), rec: record(0),
			obs: observe(md.primary(0, "0-1-10", connected(0)), unreachable(), unreachable()),
			want: expect{kind: clustering.Repair, steps: []string{"save-record primary=0 errant=[] unacknowledged",
				"configure-semi-sync 0 (wait 0)"}, async: true, record: "primary=0 errant=[] unacknowledged"},
		},
		{
			name: "Preferred: off, and stays off while no replica is in sync",
			d:    desired(3, preferred()), rec: unacked(record(0)),
			obs:  observe(md.primary(0, "0-1-12", off, connected(0)), unreachable(), unreachable()),
			want: expect{kind: clustering.Steady, async: true},
		},
		{
			name: "Preferred: off, and a replica back but lagging beyond the bound keeps it off",
			d:    desired(3, preferred()), rec: unacked(record(0)),
			obs: observe(md.primary(0, "0-1-12", off, connected(0)), md.replica(1, 0, "0-1-10", lag(time.Minute)),
				unreachable()),
			want: expect{kind: clustering.Steady, async: true},
		},
		{
			name: "Preferred: off, on again once a replica is in sync, though the primary counts no client yet",
			d:    desired(3, preferred()), rec: unacked(record(0)),
			obs:  observe(md.primary(0, "0-1-12", off, connected(0)), md.replica(1, 0, "0-1-12"), unreachable()),
			want: expect{kind: clustering.Repair, steps: []string{"configure-semi-sync 0 (wait 1)"}, inSync: []int{1}},
		},
		{
			name: "Preferred: on, a replica in sync that is not connected yet keeps it on",
			d:    desired(3, preferred()), rec: record(0),
			obs:  observe(md.primary(0, "0-1-12", connected(0)), md.replica(1, 0, "0-1-12"), unreachable()),
			want: expect{kind: clustering.Steady, inSync: []int{1}},
		},
		{
			name: "Preferred: on, with a replica connected but lagging, commits return: it stays on",
			d:    desired(3, preferred()), rec: record(0),
			obs: observe(md.primary(0, "0-1-12", connected(1)), md.replica(1, 0, "0-1-10", lag(time.Minute)),
				unreachable()),
			want: expect{kind: clustering.Steady},
		},
		{
			name: "Preferred: MySQL, 5 instances, one replica in sync cannot give 2 acknowledgements: off",
			d:    desired(5, engine(mysql.MySQL), preferred()), rec: waitRecorded(record(0), 2),
			obs: observe(my.primary(0, mysqlUUID(0)+":1-10", semiSync(true, 2, never), connected(1)),
				my.replica(1, 0, mysqlUUID(0)+":1-10"), unreachable(), unreachable(), unreachable()),
			want: expect{kind: clustering.Repair, steps: []string{"save-record primary=0 errant=[] unacknowledged",
				"configure-semi-sync 0 (wait 0)"}, async: true, inSync: []int{1},
				record: "primary=0 errant=[] unacknowledged"},
		},
		{
			name: "Preferred: a single instance waits for nobody anyway",
			d:    desired(1, preferred()), rec: record(0),
			obs:  observe(md.primary(0, "0-1-10", off, connected(0))),
			want: expect{kind: clustering.Steady},
		},
	})
	// The window does not lower the recorded wait count: a failover during it still asks for the quorum.
	plan := clustering.Decide(desired(3, preferred()), record(0), observe(md.primary(0, "0-1-12", off, connected(0)),
		unreachable(), unreachable()))
	g := NewWithT(t)
	g.Expect(plan.Record.SemiSyncWait).To(Equal(1))
	g.Expect(plan.Report.WritesBlocked).To(BeEmpty())
	g.Expect(plan.Report.Async).To(ContainSubstring("durability Preferred"))
}
