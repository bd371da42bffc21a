package mysqlcluster_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

// A MySQLCluster placed by name on aws, azure and gcp members gets a Ready StatefulSet in each, whose volumes use
// that cloud's class, a backup CronJob whose H minute differs per member, and a hub status that shows it all.
func TestPlacementAcrossClouds(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := newCluster("shop", "orders", func(c *v1alpha1.MySQLCluster) {
		c.Spec.Database, c.Spec.User = "orders", "app"
		c.Spec.Backup = &v1alpha1.Backup{Schedule: "H 2 * * *", Target: v1alpha1.BackupTarget{
			PVC: &v1alpha1.PVCTarget{Size: resource.MustParse("2Gi")},
		}}
	})
	create(t, c)
	key := client.ObjectKeyFromObject(c)
	got := eventuallyConverged(g, key)

	g.Expect(membersWith(got, v1alpha1.MemberConditionPodsReady)).To(Equal("3/3"))
	g.Expect(got.Status.ReadyReplicas).To(Equal("3/3"))
	// No member controller reports here (kwok Pods run no server): nothing serves, and nothing says otherwise.
	g.Expect(got.Status.ReadyMembers).To(Equal("0/3"))
	g.Expect(got.Status.Serving).To(Equal("0/3"))
	g.Expect(got.Status.Phase).To(Equal(v1alpha1.PhaseProgressing))
	g.Expect(findCondition(got, v1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionFalse))
	g.Expect(got.Status.StorageClasses).To(Equal("gp3,managed-csi,pd-ssd"))
	g.Expect(got.Finalizers).To(ContainElement(v1alpha1.Finalizer))
	want := map[string]string{"aws-eu-west-1": "gp3", "azure-westeurope": "managed-csi", "gcp-us-central1": "pd-ssd"}
	minutes := map[string]bool{}
	for member, class := range want {
		sts := statefulSet(g, member, key)
		g.Expect(*sts.Spec.VolumeClaimTemplates[0].Spec.StorageClassName).To(Equal(class), member)
		g.Expect(sts.OwnerReferences).To(BeEmpty(), "no owner references across clusters")
		g.Expect(sts.Labels).To(HaveKeyWithValue(v1alpha1.ClusterUIDLabel, string(got.UID)))
		ms := memberStatus(got, member)
		g.Expect(ms).NotTo(BeNil())
		g.Expect(ms.StorageClass).To(Equal(class))
		g.Expect(ms.BoundVolumes).To(Equal(int32(1)))

		var cj batchv1.CronJob
		g.Expect(members[member].Get(ctx, client.ObjectKey{Namespace: "shop", Name: c.BackupCronJobName()}, &cj)).To(Succeed())
		g.Expect(cj.Spec.Schedule).To(Equal(ms.BackupSchedule))
		minutes[cj.Spec.Schedule] = true

		// Same passwords in every member, generated on the hub.
		var secret corev1.Secret
		g.Expect(members[member].Get(ctx, client.ObjectKey{Namespace: "shop", Name: c.CredentialsSecretName()}, &secret)).To(Succeed())
		g.Expect(secret.Data[v1alpha1.RootPasswordKey]).To(HaveLen(26))
	}
	g.Expect(len(minutes)).To(BeNumerically(">", 1), "H schedules are spread across members")

	// Not placed on the spare member.
	var sts appsv1.StatefulSet
	err := members[spareMember].Get(ctx, key, &sts)
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
}

// A memberSelector places by labels: cloud In (aws, gcp) reaches those members and not azure; a member that
// registers later and matches gets its objects too.
func TestSelectorPlacementAndLateMember(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := newCluster("analytics", "events", func(c *v1alpha1.MySQLCluster) {
		c.Spec.Placement = v1alpha1.Placement{MemberSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: v1alpha1.CloudLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{"aws", "gcp"},
		}}}}
	})
	create(t, c)
	key := client.ObjectKeyFromObject(c)
	got := eventuallyConverged(g, key)
	g.Expect(membersWith(got, v1alpha1.MemberConditionPodsReady)).To(Equal("2/2"))
	statefulSet(g, "aws-eu-west-1", key)
	statefulSet(g, "gcp-us-central1", key)
	var sts appsv1.StatefulSet
	g.Expect(apierrors.IsNotFound(members["azure-westeurope"].Get(ctx, key, &sts))).To(BeTrue())

	// The spare aws member registers now: it matches the selector and receives the database.
	g.Expect(register(ctx, spareMember)).To(Succeed())
	g.Eventually(func() string { return membersWith(get(g, key), v1alpha1.MemberConditionPodsReady) },
		2*time.Minute, 250*time.Millisecond).Should(Equal("3/3"))
	statefulSet(g, spareMember, key)
}

// Objects edited or deleted by hand in a member are restored through the watch.
func TestDriftRepair(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := newCluster("drift", "db", func(c *v1alpha1.MySQLCluster) { c.Spec.Placement.Members = []string{"gcp-us-central1"} })
	create(t, c)
	key := client.ObjectKeyFromObject(c)
	eventuallyConverged(g, key)
	mc := members["gcp-us-central1"]

	sts := statefulSet(g, "gcp-us-central1", key)
	sts.Spec.Replicas = ptr.To[int32](3)
	sts.Spec.Template.Spec.Containers[0].Image = "mysql:5.7"
	g.Expect(mc.Update(ctx, sts)).To(Succeed())
	g.Eventually(func() string {
		s := statefulSet(g, "gcp-us-central1", key)
		return s.Spec.Template.Spec.Containers[0].Image + "/" + string(rune('0'+*s.Spec.Replicas))
	}, 30*time.Second, 100*time.Millisecond).Should(Equal("mysql:8.4/1"))

	g.Expect(mc.Delete(ctx, sts)).To(Succeed())
	g.Eventually(func() types {
		var s appsv1.StatefulSet
		if err := mc.Get(ctx, key, &s); err != nil {
			return ""
		}
		return types(s.UID)
	}, 30*time.Second, 100*time.Millisecond).ShouldNot(Or(BeEmpty(), Equal(types(sts.UID))))

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "drift", Name: c.ConfigMapName()}}
	g.Expect(mc.Delete(ctx, cm)).To(Succeed())
	g.Eventually(func() error {
		return mc.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
}

type types string

// Growing spec.storage.size expands every PVC in place and recreates the StatefulSet with the larger template
// without touching its Pods; shrinking is refused by the API server.
func TestStorageGrowsAndNeverShrinks(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := newCluster("grow", "db", func(c *v1alpha1.MySQLCluster) {
		c.Spec.Replicas = 2
		c.Spec.Placement.Members = []string{"aws-eu-west-1", "azure-westeurope"}
	})
	create(t, c)
	key := client.ObjectKeyFromObject(c)
	// With no member controller in the members, replication is Unknown, never claimed.
	for _, ms := range eventuallyConverged(g, key).Status.Members {
		replicating := findMemberCondition(&ms, v1alpha1.MemberConditionReplicating)
		g.Expect(replicating.Status).To(Equal(metav1.ConditionUnknown), ms.Name)
		g.Expect(replicating.Reason).To(Equal(v1alpha1.ReasonNoReport))
		g.Expect(replicating.Message).To(ContainSubstring("no member controller has reported"))
		g.Expect(findMemberCondition(&ms, v1alpha1.MemberConditionReady).Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ms.Replication).To(BeNil())
	}
	podUIDs := map[string]string{}
	for _, m := range c.Spec.Placement.Members {
		var pods corev1.PodList
		g.Expect(members[m].List(ctx, &pods, client.InNamespace("grow"))).To(Succeed())
		for _, p := range pods.Items {
			podUIDs[m+"/"+p.Name] = string(p.UID)
		}
	}
	g.Expect(podUIDs).To(HaveLen(4))

	update(g, key, func(c *v1alpha1.MySQLCluster) { c.Spec.Storage.Size = resource.MustParse("3Gi") })
	eventuallyConverged(g, key)
	for _, m := range c.Spec.Placement.Members {
		g.Eventually(func() string {
			sts := statefulSet(g, m, key)
			q := sts.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage]
			return q.String()
		}, time.Minute, 250*time.Millisecond).Should(Equal("3Gi"), m)
		var pvcs corev1.PersistentVolumeClaimList
		g.Expect(members[m].List(ctx, &pvcs, client.InNamespace("grow"))).To(Succeed())
		g.Expect(pvcs.Items).To(HaveLen(2))
		for _, p := range pvcs.Items {
			q := p.Spec.Resources.Requests[corev1.ResourceStorage]
			g.Expect(q.String()).To(Equal("3Gi"), p.Name)
		}
		var pods corev1.PodList
		g.Expect(members[m].List(ctx, &pods, client.InNamespace("grow"))).To(Succeed())
		for _, p := range pods.Items {
			g.Expect(string(p.UID)).To(Equal(podUIDs[m+"/"+p.Name]), "Pod %s was not restarted", p.Name)
		}
	}

	err := hub.Update(ctx, func() *v1alpha1.MySQLCluster {
		cur := get(g, key)
		cur.Spec.Storage.Size = resource.MustParse("2Gi")
		return cur
	}())
	g.Expect(err).To(MatchError(ContainSubstring("may not shrink")))
}

// Paused computes and publishes the plan and applies nothing.
func TestPausedPublishesPlanOnly(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := newCluster("paused", "db", func(c *v1alpha1.MySQLCluster) {
		c.Spec.Paused = true
		c.Spec.Placement.Members = []string{"aws-eu-west-1"}
	})
	create(t, c)
	key := client.ObjectKeyFromObject(c)
	g.Eventually(func() []v1alpha1.PlannedObject {
		got := get(g, key)
		if ms := memberStatus(got, "aws-eu-west-1"); ms != nil {
			return ms.Plan
		}
		return nil
	}, 30*time.Second, 250*time.Millisecond).Should(ContainElement(v1alpha1.PlannedObject{Kind: "StatefulSet", Name: "db", Action: "Create"}))
	got := get(g, key)
	g.Expect(got.Status.Phase).To(Equal(v1alpha1.PhasePaused))
	var sts appsv1.StatefulSet
	g.Expect(apierrors.IsNotFound(members["aws-eu-west-1"].Get(ctx, key, &sts))).To(BeTrue())

	update(g, key, func(c *v1alpha1.MySQLCluster) { c.Spec.Paused = false })
	eventuallyConverged(g, key)
	g.Expect(memberStatus(get(g, key), "aws-eu-west-1").Plan).To(BeEmpty())
}

// Unknown member names and an invalid backup schedule are reported as False conditions with clear reasons.
func TestInvalidInputReported(t *testing.T) {
	g := NewWithT(t)
	c := newCluster("bad", "db", func(c *v1alpha1.MySQLCluster) {
		c.Spec.Placement.Members = []string{"aws-eu-west-1", "nowhere-1"}
		c.Spec.Backup = &v1alpha1.Backup{Schedule: "H H H * *", Target: v1alpha1.BackupTarget{
			PVC: &v1alpha1.PVCTarget{Size: resource.MustParse("1Gi")},
		}}
	})
	create(t, c)
	key := client.ObjectKeyFromObject(c)
	g.Eventually(func() metav1.ConditionStatus { return condition(get(g, key), v1alpha1.ConditionPlaced) },
		30*time.Second, 250*time.Millisecond).Should(Equal(metav1.ConditionFalse))
	got := get(g, key)
	placed := findCondition(got, v1alpha1.ConditionPlaced)
	g.Expect(placed.Reason).To(Equal(v1alpha1.ReasonUnknownMembers))
	g.Expect(placed.Message).To(ContainSubstring("nowhere-1"))
	degraded := findCondition(got, v1alpha1.ConditionDegraded)
	g.Expect(degraded.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(degraded.Reason).To(Equal(v1alpha1.ReasonInvalidSchedule))
	g.Expect(degraded.Message).To(ContainSubstring("schedule"))
	g.Eventually(func() []string { return eventReasons(g, got) }, 30*time.Second, 250*time.Millisecond).
		Should(ContainElements(v1alpha1.ReasonUnknownMembers, v1alpha1.ReasonInvalidSchedule))
}

func findCondition(c *v1alpha1.MySQLCluster, t string) metav1.Condition {
	for _, cond := range c.Status.Conditions {
		if cond.Type == t {
			return cond
		}
	}
	return metav1.Condition{}
}

// eventReasons lists the reasons of the Warning Events about a hub object.
func eventReasons(g Gomega, obj client.Object) []string {
	var list eventsv1.EventList
	g.Expect(hub.List(context.Background(), &list, client.InNamespace(obj.GetNamespace()))).To(Succeed())
	var reasons []string
	for _, e := range list.Items {
		if e.Regarding.Name == obj.GetName() && e.Type == corev1.EventTypeWarning {
			reasons = append(reasons, e.Reason)
		}
	}
	return reasons
}
