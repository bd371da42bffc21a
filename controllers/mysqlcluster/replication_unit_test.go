package mysqlcluster

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

func report(primary string, decision string, instances ...v1alpha1.ReplicationInstance) *v1alpha1.ReplicationReport {
	return &v1alpha1.ReplicationReport{Primary: primary, Decision: v1alpha1.ReplicationDecision{Kind: decision},
		Instances: instances}
}

func inst(pod string, role v1alpha1.ReplicationRole, inSync bool) v1alpha1.ReplicationInstance {
	return v1alpha1.ReplicationInstance{Pod: pod, Role: role, InSync: inSync}
}

func TestReplicationVerdict(t *testing.T) {
	primary := inst("db-0", v1alpha1.ReplicationRolePrimary, false)
	replica := func(pod string, inSync bool) v1alpha1.ReplicationInstance {
		return inst(pod, v1alpha1.ReplicationRoleReplica, inSync)
	}
	for _, tc := range []struct {
		name        string
		replicas    int32
		rep         *v1alpha1.ReplicationReport
		status      metav1.ConditionStatus
		reason      string
		needsPerson bool
	}{
		{"nothing reports", 3, nil, metav1.ConditionUnknown, v1alpha1.ReasonNoReport, false},
		{"all in sync", 3, report("db-0", "Steady", primary, replica("db-1", true), replica("db-2", true)),
			metav1.ConditionTrue, v1alpha1.ReasonReplicating, false},
		{"one server", 1, report("db-0", "Steady", primary), metav1.ConditionTrue, v1alpha1.ReasonSingleServer, false},
		{"a replica lags", 3, report("db-0", "Steady", primary, replica("db-1", true), replica("db-2", false)),
			metav1.ConditionFalse, v1alpha1.ReasonReplicasNotInSync, false},
		{"bootstrap under way", 2, report("", "Bootstrap", inst("db-0", v1alpha1.ReplicationRoleNone, false)),
			metav1.ConditionFalse, v1alpha1.ReasonNoPrimary, false},
		{"failover refused", 3, report("", "Refused"), metav1.ConditionFalse, v1alpha1.ReasonNoPrimary, true},
		{"errant replica", 3, report("db-0", "Steady", primary, replica("db-1", true),
			inst("db-2", v1alpha1.ReplicationRoleErrant, false)), metav1.ConditionFalse, v1alpha1.ReasonErrantReplicas, true},
		{"unobserved", 3, report("", "Unobserved"), metav1.ConditionFalse, v1alpha1.ReasonUnobserved, true},
		{"writes blocked", 3, blocked(report("db-0", "Repair", primary, inst("db-1", v1alpha1.ReplicationRoleNone, false),
			inst("db-2", v1alpha1.ReplicationRoleUnreachable, false))), metav1.ConditionFalse, v1alpha1.ReasonWritesBlocked, false},
		{"durability Preferred, semi-sync off", 3, async(report("db-0", "Steady", primary,
			inst("db-1", v1alpha1.ReplicationRoleUnreachable, false), inst("db-2", v1alpha1.ReplicationRoleUnreachable, false)),
			time.Unix(1000, 0)), metav1.ConditionFalse, v1alpha1.ReasonDurabilityDegraded, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			mr := memberReplication(tc.rep, nil, metav1.Now())
			status, reason, msg, needsPerson := replicationVerdict(tc.replicas, "db", "", tc.rep, mr)
			g.Expect(status).To(Equal(tc.status))
			g.Expect(reason).To(Equal(tc.reason))
			g.Expect(msg).NotTo(BeEmpty())
			g.Expect(needsPerson).To(Equal(tc.needsPerson))
		})
	}
}

func TestMemberReplicationKeepsTheTimeATransitionWasFirstSeen(t *testing.T) {
	g := NewWithT(t)
	rep := report("db-1", "Steady", inst("db-1", v1alpha1.ReplicationRolePrimary, false),
		v1alpha1.ReplicationInstance{Pod: "db-0", Role: v1alpha1.ReplicationRoleReplica, InSync: true,
			LagSeconds: ptr.To[int64](3)},
		inst("db-2", v1alpha1.ReplicationRoleUnreachable, false))
	rep.LastTransition = &v1alpha1.ReplicationDecision{Kind: "Failover", From: "db-0", To: "db-1"}
	first := metav1.NewTime(time.Date(2026, 11, 24, 5, 0, 0, 0, time.UTC))
	mr := memberReplication(rep, nil, first)
	g.Expect(mr.Primary).To(Equal("db-1"))
	g.Expect(mr.ReplicasInSync).To(BeEquivalentTo(1))
	g.Expect(*mr.MaxLagSeconds).To(BeEquivalentTo(3))
	g.Expect(mr.Unreachable).To(Equal([]string{"db-2"}))
	g.Expect(mr.LastTransition.ObservedTime).To(Equal(&first))
	// Read again later: the same transition keeps its time, so an unchanged report writes no status.
	again := memberReplication(rep, mr, metav1.NewTime(first.Add(time.Hour)))
	g.Expect(again).To(Equal(mr))
	// A new transition gets the time it is first read.
	rep.LastTransition = &v1alpha1.ReplicationDecision{Kind: "Switchover", From: "db-1", To: "db-0"}
	later := metav1.NewTime(first.Add(2 * time.Hour))
	g.Expect(memberReplication(rep, mr, later).LastTransition.ObservedTime).To(Equal(&later))
}

func TestSwitchoverVerdict(t *testing.T) {
	g := NewWithT(t)
	_, _, _, ok := switchoverVerdict("", report("db-0", "Steady"))
	g.Expect(ok).To(BeFalse(), "no request, no condition")
	status, reason, _, _ := switchoverVerdict("db-1", nil)
	g.Expect(status).To(Equal(metav1.ConditionUnknown))
	g.Expect(reason).To(Equal(v1alpha1.ReasonNoReport))
	status, reason, _, _ = switchoverVerdict("db-1", report("db-1", "Steady"))
	g.Expect(status).To(Equal(metav1.ConditionTrue))
	g.Expect(reason).To(Equal(v1alpha1.ReasonPrimaryAsRequested))
	status, reason, _, _ = switchoverVerdict("db-1", report("db-0", "Switchover"))
	g.Expect(status).To(Equal(metav1.ConditionFalse))
	g.Expect(reason).To(Equal(v1alpha1.ReasonSwitchoverInProgress))
	refused := report("db-0", "Refused")
	refused.Decision.Reason = "db-1 lags 30s behind, more than 10s"
	status, reason, msg, _ := switchoverVerdict("db-1", refused)
	g.Expect(status).To(Equal(metav1.ConditionFalse))
	g.Expect(reason).To(Equal(v1alpha1.ReasonSwitchoverRefused))
	g.Expect(msg).To(ContainSubstring("lags 30s"))
}

func TestBackupVerdict(t *testing.T) {
	g := NewWithT(t)
	day := func(d, h int) time.Time { return time.Date(2026, 11, d, h, 0, 0, 0, time.UTC) }
	c := &v1alpha1.MySQLCluster{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(day(20, 12))},
		Spec: v1alpha1.MySQLClusterSpec{Backup: &v1alpha1.Backup{Schedule: "0 2 * * *"}}}
	backedUp := func(at time.Time) v1alpha1.MemberStatus {
		return v1alpha1.MemberStatus{Name: "aws", BackupSchedule: "0 2 * * *", Backups: &v1alpha1.MemberBackups{
			LastSuccessful: &v1alpha1.BackupRecord{Name: "b", Time: metav1.NewTime(at)}}}
	}
	never := v1alpha1.MemberStatus{Name: "gcp", BackupSchedule: "0 2 * * *"}

	// A backup at 02:00 on the 22nd is current until the second run after it, 02:00 on the 24th.
	v, next := backupVerdict(c, []v1alpha1.MemberStatus{backedUp(day(22, 2))}, day(23, 12))
	g.Expect(v.ok).To(BeTrue())
	g.Expect(next).To(Equal(day(24, 2)))
	v, _ = backupVerdict(c, []v1alpha1.MemberStatus{backedUp(day(22, 2))}, day(24, 2))
	g.Expect(v.ok).To(BeFalse())
	g.Expect(v.reason).To(Equal(v1alpha1.ReasonBackupsStale))
	g.Expect(v.message).To(ContainSubstring("aws (the last at 2026-11-22T02:00:00Z; schedule 0 2 * * *)"))

	// A member that never had one counts from the MySQLCluster's creation (12:00 on the 20th: 02:00 on the 22nd).
	v, _ = backupVerdict(c, []v1alpha1.MemberStatus{never}, day(21, 12))
	g.Expect(v.ok).To(BeTrue())
	v, _ = backupVerdict(c, []v1alpha1.MemberStatus{never, backedUp(day(22, 2))}, day(22, 3))
	g.Expect(v.ok).To(BeFalse())
	g.Expect(v.message).To(ContainSubstring("gcp (none yet"))
	g.Expect(v.message).NotTo(ContainSubstring("aws"))
}

// asyncSeries reads mysqlfleet_member_async_commits of one MySQLCluster, as "member/primary" -> value.
func asyncSeries(ns, name string) map[string]float64 {
	out := map[string]float64{}
	for _, pb := range collected(asyncCommits) {
		l := map[string]string{}
		for _, p := range pb.GetLabel() {
			l[p.GetName()] = p.GetValue()
		}
		if l["cluster_namespace"] == ns && l["cluster_name"] == name {
			out[l["member"]+"/"+l["primary"]] = pb.GetGauge().GetValue()
		}
	}
	return out
}

// The primary's async commits reach the status and one series per primary Pod: the series moves to a new
// primary, and goes with the member's report or the MySQLCluster.
func TestAsyncCommitsFollowThePrimary(t *testing.T) {
	g := NewWithT(t)
	primary := func(pod string, n int64) v1alpha1.ReplicationInstance {
		in := inst(pod, v1alpha1.ReplicationRolePrimary, false)
		in.AsyncCommits = n
		return in
	}
	replica := inst("db-1", v1alpha1.ReplicationRoleReplica, true)
	c := &v1alpha1.MySQLCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "async", Name: "db"}}
	member := func(name string, rep *v1alpha1.ReplicationReport) v1alpha1.MemberStatus {
		return v1alpha1.MemberStatus{Name: name, Replication: memberReplication(rep, nil, metav1.Now())}
	}

	m1 := member("m1", report("db-0", "Steady", primary("db-0", 3), replica))
	g.Expect(m1.Replication.AsyncCommits).To(BeEquivalentTo(3))
	c.Status.Members = []v1alpha1.MemberStatus{m1, member("m2", report("", "Refused"))}
	reportPrimaries(c)
	g.Expect(asyncSeries("async", "db")).To(Equal(map[string]float64{"m1/db-0": 3}))

	// A switchover to db-1, which never committed without an acknowledgement.
	c.Status.Members[0] = member("m1", report("db-1", "Switchover", inst("db-0", v1alpha1.ReplicationRoleReplica,
		true), primary("db-1", 0)))
	reportPrimaries(c)
	g.Expect(asyncSeries("async", "db")).To(Equal(map[string]float64{"m1/db-1": 0}))

	c.Status.Members[0] = member("m1", report("db-0", "Failover", primary("db-0", 5)))
	reportPrimaries(c)
	g.Expect(asyncSeries("async", "db")).To(Equal(map[string]float64{"m1/db-0": 5}))
	c.Status.Members[0] = v1alpha1.MemberStatus{Name: "m1"}
	reportPrimaries(c)
	g.Expect(asyncSeries("async", "db")).To(BeEmpty(), "a member without a report has no primary's series")

	reportPrimaries(c)
	forgetPrimaries(types.NamespacedName{Namespace: "async", Name: "db"})
	g.Expect(asyncSeries("async", "db")).To(BeEmpty())
}

func async(rep *v1alpha1.ReplicationReport, since time.Time) *v1alpha1.ReplicationReport {
	rep.Async = "semi-sync is off: 0 replica(s) in sync, and commits would wait for 1 acknowledgement(s) " +
		"(durability Preferred)"
	rep.AsyncSince = ptr.To(metav1.NewTime(since))
	return rep
}

// The hub mirrors the member's window of durability Preferred, says since when in the condition, keeps the last
// window once it closes, and records a Warning Event when one opens and a Normal one when it closes.
func TestAsyncWindowOnTheHub(t *testing.T) {
	g := NewWithT(t)
	opened, read, closed := time.Unix(1000, 0), metav1.NewTime(time.Unix(1500, 0)), metav1.NewTime(time.Unix(2000, 0))
	steady := func() *v1alpha1.ReplicationReport {
		return report("db-0", "Steady", inst("db-0", v1alpha1.ReplicationRolePrimary, false),
			inst("db-1", v1alpha1.ReplicationRoleReplica, true))
	}
	before := memberReplication(steady(), nil, read)
	during := memberReplication(async(steady(), opened), before, read)
	g.Expect(during.AsyncSince).To(Equal(ptr.To(metav1.NewTime(opened))))
	g.Expect(during.LastAsyncWindow).To(BeNil())
	_, reason, msg, _ := replicationVerdict(2, "db", "", async(steady(), opened), during)
	g.Expect(reason).To(Equal(v1alpha1.ReasonDurabilityDegraded))
	g.Expect(msg).To(ContainSubstring("commits return without a replica holding them since " +
		opened.UTC().Format(time.RFC3339)))
	g.Expect(memberReplication(async(steady(), opened), during, closed)).To(Equal(during), "no churn while it lasts")

	after := memberReplication(steady(), during, closed)
	g.Expect(after.Async).To(BeEmpty())
	g.Expect(after.AsyncSince).To(BeNil())
	g.Expect(after.LastAsyncWindow).To(Equal(&v1alpha1.AsyncWindow{From: metav1.NewTime(opened), To: closed}))
	g.Expect(memberReplication(steady(), after, metav1.Now()).LastAsyncWindow).To(Equal(after.LastAsyncWindow))
	status, reason, _, _ := replicationVerdict(2, "db", "", steady(), after)
	g.Expect([]string{string(status), reason}).To(Equal([]string{"True", v1alpha1.ReasonReplicating}))

	rec := events.NewFakeRecorder(10)
	r := &MySQLClusterReconciler{Recorder: rec}
	c := &v1alpha1.MySQLCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db"}}
	emit := func(prev, now *v1alpha1.MemberReplication) {
		s := &scope{cluster: c, before: &v1alpha1.MySQLClusterStatus{
			Members: []v1alpha1.MemberStatus{{Name: "aws", Replication: prev}}}}
		r.emitAsyncWindow(s, v1alpha1.MemberStatus{Name: "aws", Replication: now})
	}
	emit(before, during)
	g.Expect(rec.Events).To(Receive(And(HavePrefix("Warning DurabilityDegraded"), ContainSubstring("member aws"))))
	emit(during, during)
	g.Expect(rec.Events).NotTo(Receive(), "an Event on the transition only")
	emit(during, after)
	g.Expect(rec.Events).To(Receive(HavePrefix("Normal DurabilityRestored")))
}

func blocked(rep *v1alpha1.ReplicationReport) *v1alpha1.ReplicationReport {
	rep.WritesBlocked = "its commits wait for 1 semi-sync acknowledgement(s) and 0 replica(s) are connected to give them"
	return rep
}

// A primary whose writes are blocked serves none: SERVING counts only the replicas in sync then, and the series
// that MySQLFleetWritesBlocked alerts on is 1.
func TestWritesBlockedIsNotServing(t *testing.T) {
	g := NewWithT(t)
	rep := report("db-0", "Steady", inst("db-0", v1alpha1.ReplicationRolePrimary, false),
		inst("db-1", v1alpha1.ReplicationRoleReplica, true))
	mr := memberReplication(rep, nil, metav1.Now())
	g.Expect(serving(mr)).To(Equal(2))
	mr = memberReplication(blocked(rep), nil, metav1.Now())
	g.Expect(mr.WritesBlocked).NotTo(BeEmpty())
	g.Expect(serving(mr)).To(Equal(1))

	c := &v1alpha1.MySQLCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "blocked"}}
	c.Status.Members = []v1alpha1.MemberStatus{{Name: "aws", Replication: mr}}
	reportPrimaries(c)
	g.Expect(gaugeValue(writesBlocked, "shop", "blocked", "aws")).To(Equal(1.0))
	c.Status.Members[0].Replication = memberReplication(report("db-0", "Steady",
		inst("db-0", v1alpha1.ReplicationRolePrimary, false)), nil, metav1.Now())
	reportPrimaries(c)
	g.Expect(gaugeValue(writesBlocked, "shop", "blocked", "aws")).To(Equal(0.0))
	forgetPrimaries(types.NamespacedName{Namespace: "shop", Name: "blocked"})
	g.Expect(gaugeValue(writesBlocked, "shop", "blocked", "aws")).To(Equal(-1.0))
}

// gaugeValue is the value of a gauge series with these cluster and member labels, -1 when there is none.
func gaugeValue(c prometheus.Collector, ns, name, member string) float64 {
	for _, pb := range collected(c) {
		l := map[string]string{}
		for _, p := range pb.GetLabel() {
			l[p.GetName()] = p.GetValue()
		}
		if l["cluster_namespace"] == ns && l["cluster_name"] == name && l["member"] == member {
			return pb.GetGauge().GetValue()
		}
	}
	return -1
}

// The hub copies a report's rebuilds into the status row, no more than the status holds, and tells a rebuild as
// new (for its Event) when the previous row did not hold it, by Pod and time: the same Pod rebuilt again is new.
func TestRebuildsOnTheHub(t *testing.T) {
	g := NewWithT(t)
	at := func(pod string, h int) v1alpha1.ServerRebuild {
		return v1alpha1.ServerRebuild{Pod: pod, Time: metav1.NewTime(time.Unix(int64(h)*3600, 0)), Reason: "r"}
	}
	rep := report("db-0", "Steady", inst("db-0", v1alpha1.ReplicationRolePrimary, false))
	for h := 9; h > 0; h-- {
		rep.Rebuilds = append(rep.Rebuilds, at("db-1", h))
	}
	mr := memberReplication(rep, nil, metav1.Now())
	g.Expect(mr.Rebuilds).To(Equal(rep.Rebuilds[:v1alpha1.MaxRebuildsReported]), "the newest, as many as the status holds")

	before := &v1alpha1.MySQLClusterStatus{Members: []v1alpha1.MemberStatus{{Name: "aws",
		Replication: &v1alpha1.MemberReplication{Rebuilds: []v1alpha1.ServerRebuild{at("db-1", 2), at("db-2", 1)}}}}}
	now := func(rbs ...v1alpha1.ServerRebuild) v1alpha1.MemberStatus {
		return v1alpha1.MemberStatus{Name: "aws", Replication: &v1alpha1.MemberReplication{Rebuilds: rbs}}
	}
	g.Expect(newRebuilds(before, now(at("db-1", 2), at("db-2", 1)))).To(BeEmpty())
	g.Expect(newRebuilds(before, now(at("db-2", 4), at("db-1", 3), at("db-1", 2), at("db-2", 1)))).
		To(Equal([]v1alpha1.ServerRebuild{at("db-1", 3), at("db-2", 4)}), "oldest first")
	g.Expect(newRebuilds(before, v1alpha1.MemberStatus{Name: "aws"})).To(BeEmpty())
}

// collected is every series of c, read from c itself rather than through a Gather of the whole registry.
func collected(c prometheus.Collector) []*dto.Metric {
	ch := make(chan prometheus.Metric, 64)
	go func() {
		c.Collect(ch)
		close(ch)
	}()
	var out []*dto.Metric
	for m := range ch {
		var pb dto.Metric
		if m.Write(&pb) == nil {
			out = append(out, &pb)
		}
	}
	return out
}
