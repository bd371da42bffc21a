package mysqlcluster_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

// writeReport writes the member controller's report on a StatefulSet into its member, as the member controller
// does: the ConfigMap named for the StatefulSet, labelled with the hub object's names (which map its events to
// the MySQLCluster) and annotated with the StatefulSet's UID.
func writeReport(g Gomega, member string, sts *appsv1.StatefulSet, rep v1alpha1.ReplicationReport) {
	ctx := context.Background()
	data, err := json.Marshal(rep)
	g.Expect(err).NotTo(HaveOccurred())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: sts.Namespace,
		Name: v1alpha1.ReplicationReportName(sts.Name)}}
	err = members[member].Get(ctx, client.ObjectKeyFromObject(cm), cm)
	cm.Labels = map[string]string{v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue,
		v1alpha1.ReplicationComponentLabel: v1alpha1.ReplicationComponent,
		v1alpha1.ClusterNameLabel:          sts.Labels[v1alpha1.ClusterNameLabel],
		v1alpha1.ClusterNamespaceLabel:     sts.Labels[v1alpha1.ClusterNamespaceLabel]}
	cm.Annotations = map[string]string{v1alpha1.StatefulSetUIDAnnotation: string(sts.UID)}
	cm.Data = map[string]string{v1alpha1.ReplicationReportKey: string(data)}
	if err == nil {
		g.Expect(members[member].Update(ctx, cm)).To(Succeed())
		return
	}
	g.Expect(members[member].Create(ctx, cm)).To(Succeed())
}

// replicasOf is a StatefulSet's replicas and the count announced to the member controller, as "spec/announced".
func replicasOf(g Gomega, member string, key client.ObjectKey) string {
	sts := statefulSet(g, member, key)
	return string(rune('0'+ptr.Deref(sts.Spec.Replicas, 0))) + "/" + sts.Annotations[v1alpha1.ReplicasAnnotation]
}

// A scale-down of a set the member controller reports on waits for it: the StatefulSet keeps its three Pods and
// announces two, the member's status says why it is held, and only once the report says the set is ready to
// shrink to two does the StatefulSet lose its Pod.
func TestScaleDownWaitsForTheMemberController(t *testing.T) {
	g := NewWithT(t)
	const member = "aws-eu-west-1"
	c := newCluster("scaledown", "db", func(c *v1alpha1.MySQLCluster) {
		c.Spec.Replicas, c.Spec.Placement.Members = 3, []string{member}
	})
	create(t, c)
	key := client.ObjectKeyFromObject(c)
	eventuallyConverged(g, key)
	g.Expect(replicasOf(g, member, key)).To(Equal("3/3"))

	sts := statefulSet(g, member, key)
	inSync := func(pod string) v1alpha1.ReplicationInstance {
		return v1alpha1.ReplicationInstance{Pod: pod, Role: v1alpha1.ReplicationRoleReplica, InSync: true}
	}
	rep := v1alpha1.ReplicationReport{Primary: "db-0", Decision: v1alpha1.ReplicationDecision{Kind: "Steady"},
		Instances: []v1alpha1.ReplicationInstance{{Pod: "db-0", Role: v1alpha1.ReplicationRolePrimary},
			inSync("db-1"), inSync("db-2")}}
	writeReport(g, member, sts, rep)
	g.Eventually(func() string {
		cond := findMemberCondition(memberStatus(get(g, key), member), v1alpha1.MemberConditionReplicating)
		return cond.Reason
	}, 30*time.Second, 100*time.Millisecond).Should(Equal(v1alpha1.ReasonReplicating), "the hub read the report")

	update(g, key, func(c *v1alpha1.MySQLCluster) { c.Spec.Replicas = 2 })
	rep.LastError = "db-2 still receives from db-0"
	writeReport(g, member, sts, rep)
	g.Eventually(func() string { return replicasOf(g, member, key) }, 30*time.Second, 100*time.Millisecond).
		Should(Equal("3/2"), "the scale-down is announced, not applied")
	held := "holding 3 Pods until the member controller has made the set ready to scale down to 2: " +
		"db-2 still receives from db-0"
	g.Eventually(func(g Gomega) {
		got := get(g, key)
		ms := memberStatus(got, member)
		g.Expect(ms.Phase).To(Equal(v1alpha1.PhaseProgressing))
		applied := findMemberCondition(ms, v1alpha1.MemberConditionApplied)
		g.Expect(applied.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(applied.Reason).To(Equal(v1alpha1.ReasonScaleDownPending))
		g.Expect(applied.Message).To(Equal(held))
		ready := findMemberCondition(ms, v1alpha1.MemberConditionReady)
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Reason).To(Equal(v1alpha1.ReasonScaleDownPending))
		g.Expect(findMemberCondition(ms, v1alpha1.MemberConditionPodsReady).Message).To(Equal("3/3 Pods ready"))
		g.Expect(got.Status.ObservedGeneration).NotTo(Equal(got.Generation), "the new spec is not in the member yet")
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Consistently(func() string { return replicasOf(g, member, key) }, 3*time.Second, 250*time.Millisecond).
		Should(Equal("3/2"))
	before := settledWrites(t, g)
	g.Consistently(func() map[string]float64 { return diff(before, fleetWrites(g)) }, 6*time.Second, 2*time.Second).
		Should(BeEmpty(), "a held scale-down costs no writes while nothing changes")

	rep.LastError, rep.ScaleDownReady = "", ptr.To[int32](2)
	writeReport(g, member, sts, rep)
	g.Eventually(func() string { return replicasOf(g, member, key) }, 30*time.Second, 100*time.Millisecond).
		Should(Equal("2/2"))
	got := eventuallyConverged(g, key)
	g.Expect(findMemberCondition(memberStatus(got, member), v1alpha1.MemberConditionReady).Reason).
		NotTo(Equal(v1alpha1.ReasonScaleDownPending))
}

// With no member controller reporting on the set, nothing replicates there and nobody would ever say it is
// ready: a scale-down goes through at once, as it always did.
func TestScaleDownWithoutReportGoesThrough(t *testing.T) {
	g := NewWithT(t)
	const member = "gcp-us-central1"
	c := newCluster("scaledown-unreported", "db", func(c *v1alpha1.MySQLCluster) {
		c.Spec.Replicas, c.Spec.Placement.Members = 3, []string{member}
	})
	create(t, c)
	key := client.ObjectKeyFromObject(c)
	eventuallyConverged(g, key)

	update(g, key, func(c *v1alpha1.MySQLCluster) { c.Spec.Replicas = 2 })
	g.Eventually(func() string { return replicasOf(g, member, key) }, 30*time.Second, 100*time.Millisecond).
		Should(Equal("2/2"))
	got := eventuallyConverged(g, key)
	g.Expect(findMemberCondition(memberStatus(got, member), v1alpha1.MemberConditionApplied).Reason).
		To(Equal(v1alpha1.ReasonApplied))
}
