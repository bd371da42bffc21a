package mysqlcluster_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

// stsAnnotations are the errant-servers and rebuild annotations of the member's StatefulSet, with its generation:
// a change of its metadata alone leaves the generation (and the Pods) as they were.
func stsAnnotations(g Gomega, member string, key client.ObjectKey) (errant, rebuild string, generation int64) {
	sts := statefulSet(g, member, key)
	return sts.Annotations[v1alpha1.ErrantServersAnnotation], sts.Annotations[v1alpha1.RebuildAnnotation],
		sts.Generation
}

// spec.errantServers and the hub's rebuild requests reach the member controller on the StatefulSets' own
// metadata: Fence as its annotation, each member's requests on its own StatefulSet and no other, neither
// rolling the Pods; both go again when the spec goes back to the default and the requests are withdrawn; and
// once applied, nothing more is written.
func TestErrantServersAndRebuildRequestsReachTheMembers(t *testing.T) {
	g := NewWithT(t)
	c := newCluster("rebuild-requests", "db", func(c *v1alpha1.MySQLCluster) {
		c.Spec.Replicas, c.Spec.Placement.Members = 3, []string{aws, gcp}
	})
	create(t, c)
	key := client.ObjectKeyFromObject(c)
	got := eventuallyConverged(g, key)
	g.Expect(got.Spec.ErrantServers).To(Equal(v1alpha1.ErrantServersRebuildWhenSafe), "the API server's default")
	_, _, awsGen := stsAnnotations(g, aws, key)
	_, _, gcpGen := stsAnnotations(g, gcp, key)
	template := statefulSet(g, aws, key).Spec.Template
	for _, m := range []string{aws, gcp} {
		errant, rebuild, _ := stsAnnotations(g, m, key)
		g.Expect([]string{errant, rebuild}).To(Equal([]string{"", ""}), "nothing for the default and no request")
	}

	update(g, key, func(c *v1alpha1.MySQLCluster) {
		c.Spec.ErrantServers = v1alpha1.ErrantServersFence
		c.Annotations = map[string]string{v1alpha1.RebuildAnnotation: aws + "/db-1=2026-11-28T10:00:00Z," +
			gcp + "/db-2=2026-11-28T10:00:01Z," + aws + "/db-2=2026-11-28T10:00:02Z"}
	})
	g.Eventually(func() []any {
		errant, rebuild, gen := stsAnnotations(g, aws, key)
		return []any{errant, rebuild, gen}
	}, 30*time.Second, 100*time.Millisecond).Should(Equal([]any{"Fence",
		aws + "/db-1=2026-11-28T10:00:00Z," + aws + "/db-2=2026-11-28T10:00:02Z", awsGen}))
	g.Eventually(func() []any {
		errant, rebuild, gen := stsAnnotations(g, gcp, key)
		return []any{errant, rebuild, gen}
	}, 30*time.Second, 100*time.Millisecond).Should(Equal([]any{"Fence", gcp + "/db-2=2026-11-28T10:00:01Z", gcpGen}))
	g.Expect(statefulSet(g, aws, key).Spec.Template).To(Equal(template), "the Pods stay as they are")
	eventuallyConverged(g, key)

	before := settledWrites(t, g)
	g.Consistently(func() map[string]float64 { return diff(before, fleetWrites(g)) }, 6*time.Second, 2*time.Second).
		Should(BeEmpty(), "applied annotations cost no writes while nothing changes")

	update(g, key, func(c *v1alpha1.MySQLCluster) {
		c.Spec.ErrantServers = v1alpha1.ErrantServersRebuildWhenSafe
		delete(c.Annotations, v1alpha1.RebuildAnnotation)
	})
	for _, m := range []string{aws, gcp} {
		g.Eventually(func() []string {
			errant, rebuild, _ := stsAnnotations(g, m, key)
			return []string{errant, rebuild}
		}, 30*time.Second, 100*time.Millisecond).Should(Equal([]string{"", ""}), m)
	}
	_, _, gen := stsAnnotations(g, aws, key)
	g.Expect(gen).To(Equal(awsGen))
}

// rebuildEvents are the ServerRebuilt Events on the MySQLCluster.
func rebuildEvents(g Gomega, c *v1alpha1.MySQLCluster) []eventsv1.Event {
	var list eventsv1.EventList
	g.Expect(hub.List(context.Background(), &list, client.InNamespace(c.Namespace))).To(Succeed())
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Name == c.Name && e.Reason == "ServerRebuilt" {
			out = append(out, e)
		}
	}
	return out
}

// The servers a member controller reports rebuilt show in the member's status row, with what they discarded,
// and each is told once in an Event: a later pass over the same report adds none, a new rebuild adds one. The
// Replicating condition says what becomes of errant servers under spec.errantServers.
func TestRebuildsReportedOnTheHub(t *testing.T) {
	g := NewWithT(t)
	c := newCluster("rebuilds", "db", func(c *v1alpha1.MySQLCluster) {
		c.Spec.Replicas, c.Spec.Placement.Members = 3, []string{aws}
	})
	create(t, c)
	key := client.ObjectKeyFromObject(c)
	eventuallyConverged(g, key)
	sts := statefulSet(g, aws, key)

	replica := func(pod string, role v1alpha1.ReplicationRole) v1alpha1.ReplicationInstance {
		return v1alpha1.ReplicationInstance{Pod: pod, Role: role, InSync: role == v1alpha1.ReplicationRoleReplica}
	}
	rep := v1alpha1.ReplicationReport{Primary: "db-1", Decision: v1alpha1.ReplicationDecision{Kind: "Steady"},
		Instances: []v1alpha1.ReplicationInstance{replica("db-0", v1alpha1.ReplicationRoleErrant),
			replica("db-1", v1alpha1.ReplicationRolePrimary), replica("db-2", v1alpha1.ReplicationRoleReplica)}}
	writeReport(g, aws, sts, rep)
	replicating := func() metav1.Condition {
		return findMemberCondition(memberStatus(get(g, key), aws), v1alpha1.MemberConditionReplicating)
	}
	g.Eventually(replicating, 30*time.Second, 100*time.Millisecond).Should(And(
		HaveField("Reason", v1alpha1.ReasonErrantReplicas),
		HaveField("Message", "db-0 hold transactions the primary does not have: fenced; the member controller "+
			"rebuilds each one whose rebuild provably loses no acknowledged commit (errantServers RebuildWhenSafe), "+
			"the others wait for mysqlfleet rebuild")))
	update(g, key, func(c *v1alpha1.MySQLCluster) { c.Spec.ErrantServers = v1alpha1.ErrantServersFence })
	g.Eventually(func() string { return replicating().Message }, 30*time.Second, 100*time.Millisecond).Should(Equal(
		"db-0 hold transactions the primary does not have: fenced until a human rebuilds them with mysqlfleet " +
			"rebuild (errantServers Fence)"))
	g.Expect(rebuildEvents(g, c)).To(BeEmpty())

	// The member controller rebuilt db-0, the primary a failover replaced, by itself.
	first := v1alpha1.ServerRebuild{Pod: "db-0", Time: metav1.NewTime(time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC).Local()),
		Discarded: "0-1000-41-42", Reason: "a replaced primary whose unacknowledged commits no other server holds"}
	rep.Instances[0] = replica("db-0", v1alpha1.ReplicationRoleNone)
	rep.Rebuilds = []v1alpha1.ServerRebuild{first}
	writeReport(g, aws, sts, rep)
	g.Eventually(func() []v1alpha1.ServerRebuild {
		return memberStatus(get(g, key), aws).Replication.Rebuilds
	}, 30*time.Second, 100*time.Millisecond).Should(Equal([]v1alpha1.ServerRebuild{first}))
	g.Eventually(func() []eventsv1.Event { return rebuildEvents(g, c) }, 30*time.Second, 100*time.Millisecond).
		Should(HaveLen(1))
	e := rebuildEvents(g, c)[0]
	g.Expect(e.Type).To(Equal("Normal"))
	g.Expect(e.Note).To(Equal("member " + aws + ": db-0 was emptied and is seeded again, discarding transactions " +
		"0-1000-41-42: a replaced primary whose unacknowledged commits no other server holds"))

	// More passes over the same rebuild: the status row changes (the member controller's error), the Event
	// does not come again (the recorder would give the same Event a series).
	rep.LastError = "db-0 is being seeded"
	writeReport(g, aws, sts, rep)
	g.Eventually(func() string { return memberStatus(get(g, key), aws).Replication.Error }, 30*time.Second,
		100*time.Millisecond).Should(Equal("db-0 is being seeded"))
	rep.LastError = ""
	writeReport(g, aws, sts, rep)
	g.Eventually(func() string { return memberStatus(get(g, key), aws).Replication.Error }, 30*time.Second,
		100*time.Millisecond).Should(BeEmpty())
	g.Consistently(func() []eventsv1.Event { return rebuildEvents(g, c) }, 3*time.Second, 250*time.Millisecond).
		Should(ConsistOf(HaveField("Series", BeNil())), "one Event for one rebuild")

	// A human asked for db-2 to be rebuilt: a new rebuild, newest first, told once more.
	second := v1alpha1.ServerRebuild{Pod: "db-2", Time: metav1.NewTime(time.Date(2026, 11, 28, 11, 0, 0, 0, time.UTC).Local()),
		Request: "2026-11-28T10:59:00Z", Reason: "requested"}
	rep.Rebuilds = []v1alpha1.ServerRebuild{second, first}
	writeReport(g, aws, sts, rep)
	g.Eventually(func() []v1alpha1.ServerRebuild {
		return memberStatus(get(g, key), aws).Replication.Rebuilds
	}, 30*time.Second, 100*time.Millisecond).Should(Equal([]v1alpha1.ServerRebuild{second, first}))
	g.Eventually(func() []string {
		var notes []string
		for _, e := range rebuildEvents(g, c) {
			notes = append(notes, e.Note)
		}
		return notes
	}, 30*time.Second, 100*time.Millisecond).Should(ConsistOf(e.Note, "member "+aws+": db-2 was emptied and is "+
		"seeded again, discarding no transactions: requested (request 2026-11-28T10:59:00Z)"))
	g.Consistently(func() []eventsv1.Event { return rebuildEvents(g, c) }, 3*time.Second, 250*time.Millisecond).
		Should(HaveEach(HaveField("Series", BeNil())))
}
