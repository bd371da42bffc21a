package mysqlcluster_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

// The hub drops the primary Services' selector only once the member controller reports that it writes their
// endpoints, and a report that goes missing afterwards does not bring the selector back: a member controller of
// an earlier release (no primaryEndpoints in its report) keeps Services that select the Pod labelled primary,
// and a newer one is never left with Services that nobody gives endpoints to.
func TestPrimaryServicesFollowTheMemberControllersReport(t *testing.T) {
	g := NewWithT(t)
	const member = "azure-westeurope"
	c := newCluster("primary-endpoints", "db", func(c *v1alpha1.MySQLCluster) {
		c.Spec.Replicas, c.Spec.Placement.Members = 3, []string{member}
	})
	create(t, c)
	key := client.ObjectKeyFromObject(c)
	eventuallyConverged(g, key)
	selectors := func(g Gomega) []map[string]string {
		var out []map[string]string
		for _, name := range []string{c.Name, c.PrimaryServiceName()} {
			var svc corev1.Service
			g.Expect(members[member].Get(context.Background(), client.ObjectKey{Namespace: c.Namespace, Name: name},
				&svc)).To(Succeed())
			out = append(out, svc.Spec.Selector)
		}
		return out
	}
	replicating := func(g Gomega) string {
		return findMemberCondition(memberStatus(get(g, key), member), v1alpha1.MemberConditionReplicating).Message
	}
	unreported := replicating(g)
	for _, sel := range selectors(g) {
		g.Expect(sel).To(HaveKeyWithValue(v1alpha1.RoleLabel, v1alpha1.RolePrimary), "no report yet")
	}

	// A report without the flag: the hub reads it (its condition says so) and keeps the selectors.
	sts := statefulSet(g, member, key)
	rep := v1alpha1.ReplicationReport{Primary: "db-0", Decision: v1alpha1.ReplicationDecision{Kind: "Steady"},
		Instances: []v1alpha1.ReplicationInstance{{Pod: "db-0", Role: v1alpha1.ReplicationRolePrimary},
			{Pod: "db-1", Role: v1alpha1.ReplicationRoleReplica, InSync: true}, {Pod: "db-2", Role: v1alpha1.ReplicationRoleNone}}}
	writeReport(g, member, sts, rep)
	g.Eventually(replicating, 30*time.Second, 100*time.Millisecond).Should(HavePrefix("db-0 is the primary; 1/2 replicas in sync"))
	for _, sel := range selectors(g) {
		g.Expect(sel).To(HaveKeyWithValue(v1alpha1.RoleLabel, v1alpha1.RolePrimary),
			"a member controller that does not write the endpoints keeps the selector")
	}

	// The flag: both Services lose their selector.
	rep.PrimaryEndpoints = true
	writeReport(g, member, sts, rep)
	g.Eventually(selectors, 30*time.Second, 100*time.Millisecond).Should(HaveEach(BeEmpty()))

	// The report gone (read by the hub: its condition is the unreported one again): still no selector.
	g.Expect(members[member].Delete(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Namespace: c.Namespace, Name: v1alpha1.ReplicationReportName(sts.Name)}})).To(Succeed())
	g.Eventually(replicating, 30*time.Second, 100*time.Millisecond).Should(Equal(unreported))
	g.Expect(selectors(g)).To(HaveEach(BeEmpty()), "a missing report does not bring the selector back")
}
