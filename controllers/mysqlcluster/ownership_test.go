package mysqlcluster_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/placement"
	"github.com/mysqlfleet/mysqlfleet/internal/render"
)

const (
	aws = "aws-eu-west-1"
	gcp = "gcp-us-central1"
)

// A successor of the same name neither uses nor deletes the volumes its predecessor kept under Retain: not in a
// member it is placed on (a conflict, until it adopts them), and not in a member it is not placed on. After
// explicit adoption it uses the very same volume, and its own deletionPolicy Delete then removes only that one.
func TestSuccessorNeitherUsesNorDeletesRetainedVolumes(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	first := newCluster("succession", "keep", func(c *v1alpha1.MySQLCluster) { c.Spec.Placement.Members = []string{aws, gcp} })
	create(t, first)
	key := client.ObjectKeyFromObject(first)
	firstUID := string(eventuallyConverged(g, key).UID)
	kept := map[string]string{}
	for _, m := range []string{aws, gcp} {
		kept[m] = string(pvc(g, m, "succession", "data-keep-0").UID)
	}
	g.Expect(hub.Delete(ctx, first)).To(Succeed())
	eventuallyGone(g, key)
	for _, m := range []string{aws, gcp} {
		g.Expect(string(pvc(g, m, "succession", "data-keep-0").UID)).To(Equal(kept[m]), "Retain keeps the volume in %s", m)
	}

	second := newCluster("succession", "keep", func(c *v1alpha1.MySQLCluster) {
		c.Spec.Placement.Members = []string{aws}
		c.Spec.DeletionPolicy = v1alpha1.DeletionPolicyDelete
	})
	create(t, second)
	g.Eventually(func() []v1alpha1.MemberStatus { return get(g, key).Status.Members }, time.Minute, 250*time.Millisecond).
		ShouldNot(BeEmpty())
	// gcp is not placed: the predecessor's volume there is not the successor's to delete.
	g.Consistently(func(g Gomega) string { return string(pvc(g, gcp, "succession", "data-keep-0").UID) }, 5*time.Second, 250*time.Millisecond).
		Should(Equal(kept[gcp]))
	want := v1alpha1.ObjectRef{Kind: "PersistentVolumeClaim", Name: "data-keep-0", UID: kept[aws], OwnerUID: firstUID}
	g.Eventually(func() []v1alpha1.ObjectRef { return memberConflicts(g, key, aws) }, time.Minute, 250*time.Millisecond).
		Should(ContainElement(want))
	degraded := findCondition(get(g, key), v1alpha1.ConditionDegraded)
	g.Expect(degraded.Reason).To(Equal(v1alpha1.ReasonVolumeConflict))
	g.Expect(degraded.Message).To(ContainSubstring(v1alpha1.AdoptAnnotation + "=" + firstUID))
	g.Eventually(func() []string { return eventReasons(g, second) }, 30*time.Second, 250*time.Millisecond).
		Should(ContainElement(v1alpha1.ReasonVolumeConflict))
	g.Expect(apierrors.IsNotFound(members[aws].Get(ctx, key, &appsv1.StatefulSet{}))).To(BeTrue(),
		"no StatefulSet is created over a volume that is not this MySQLCluster's")

	update(g, key, func(c *v1alpha1.MySQLCluster) { c.Annotations = map[string]string{v1alpha1.AdoptAnnotation: firstUID} })
	got := eventuallyConverged(g, key)
	adopted := pvc(g, aws, "succession", "data-keep-0")
	g.Expect(string(adopted.UID)).To(Equal(kept[aws]), "the adopted volume is the predecessor's, data and all")
	g.Expect(adopted.Labels).To(HaveKeyWithValue(v1alpha1.ClusterUIDLabel, string(got.UID)))
	g.Expect(adopted.Annotations).To(HaveKeyWithValue(v1alpha1.AdoptedFromAnnotation, firstUID))
	g.Expect(memberStatus(got, aws).Adopted).To(ContainElement(want))
	g.Expect(memberStatus(got, aws).Conflicts).To(BeEmpty())

	g.Expect(hub.Delete(ctx, got)).To(Succeed())
	eventuallyGone(g, key)
	g.Eventually(func() []string { return pvcNames(g, aws, "succession") }, time.Minute, 250*time.Millisecond).
		ShouldNot(ContainElement("data-keep-0"), "Delete removes what the successor adopted")
	g.Expect(string(pvc(g, gcp, "succession", "data-keep-0").UID)).To(Equal(kept[gcp]))
}

// A member that leaves the placement keeps the volumes even under deletionPolicy Delete; deleting the
// MySQLCluster then removes them there too.
func TestLeavingThePlacementKeepsVolumes(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := newCluster("departure", "db", func(c *v1alpha1.MySQLCluster) {
		c.Spec.Placement.Members = []string{aws, gcp}
		c.Spec.DeletionPolicy = v1alpha1.DeletionPolicyDelete
	})
	create(t, c)
	key := client.ObjectKeyFromObject(c)
	eventuallyConverged(g, key)
	volume := string(pvc(g, gcp, "departure", "data-db-0").UID)

	update(g, key, func(c *v1alpha1.MySQLCluster) { c.Spec.Placement.Members = []string{aws} })
	g.Eventually(func() bool { return apierrors.IsNotFound(members[gcp].Get(ctx, key, &appsv1.StatefulSet{})) },
		time.Minute, 250*time.Millisecond).Should(BeTrue())
	g.Consistently(func(g Gomega) string { return string(pvc(g, gcp, "departure", "data-db-0").UID) }, 5*time.Second, 250*time.Millisecond).
		Should(Equal(volume), "leaving the placement is no request to delete data")

	g.Expect(hub.Delete(ctx, c)).To(Succeed())
	eventuallyGone(g, key)
	for _, m := range []string{aws, gcp} {
		g.Eventually(func() []string { return pvcNames(g, m, "departure") }, time.Minute, 250*time.Millisecond).
			ShouldNot(ContainElement("data-db-0"), m)
	}
}

// A volume made by hand with the name a claim would have (seeding from a snapshot, say) is neither used nor
// deleted: the StatefulSet is held back with a VolumeConflict, and deleting the MySQLCluster under Delete leaves
// the volume as it was, with no owner references for garbage collection to follow.
func TestHandMadeVolumeIsNeitherUsedNorDeleted(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	mc := members[aws]
	g.Expect(client.IgnoreAlreadyExists(mc.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "own1"}}))).To(Succeed())
	mine := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "own1", Name: "data-foreign-0", Labels: map[string]string{"owner": "someone-else"}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: ptr.To("gp3"),
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	g.Expect(mc.Create(ctx, mine)).To(Succeed())
	t.Cleanup(func() { _ = mc.Delete(context.Background(), mine) })

	c := newCluster("own1", "foreign", func(c *v1alpha1.MySQLCluster) {
		c.Spec.Placement.Members = []string{aws}
		c.Spec.DeletionPolicy = v1alpha1.DeletionPolicyDelete
	})
	create(t, c)
	key := client.ObjectKeyFromObject(c)
	want := v1alpha1.ObjectRef{Kind: "PersistentVolumeClaim", Name: "data-foreign-0", UID: string(mine.UID)}
	g.Eventually(func() []v1alpha1.ObjectRef { return memberConflicts(g, key, aws) }, time.Minute, 250*time.Millisecond).
		Should(ContainElement(want))
	got := get(g, key)
	g.Expect(findCondition(got, v1alpha1.ConditionDegraded).Reason).To(Equal(v1alpha1.ReasonVolumeConflict))
	g.Expect(got.Status.Phase).To(Equal(v1alpha1.PhaseDegraded))
	g.Expect(apierrors.IsNotFound(mc.Get(ctx, key, &appsv1.StatefulSet{}))).To(BeTrue())

	g.Expect(hub.Delete(ctx, c)).To(Succeed())
	eventuallyGone(g, key)
	g.Consistently(func(g Gomega) {
		p := pvc(g, aws, "own1", "data-foreign-0")
		g.Expect(p.UID).To(Equal(mine.UID))
		g.Expect(p.DeletionTimestamp).To(BeNil())
		g.Expect(p.OwnerReferences).To(BeEmpty())
	}, 5*time.Second, 250*time.Millisecond).Should(Succeed())
}

// A StatefulSet made by a release that rendered whenDeleted Delete and claims without the UID label is moved to
// Retain: its claims get the UID label, the StatefulSet is recreated (its Pods keep running), and the owner
// references through which garbage collection would have deleted the claims are gone.
func TestUpgradeMovesClaimsOutOfGarbageCollection(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := newCluster("upgrade", "db", func(c *v1alpha1.MySQLCluster) {
		c.Spec.Placement.Members = []string{aws}
		c.Spec.DeletionPolicy = v1alpha1.DeletionPolicyDelete
		c.Spec.Paused = true
	})
	create(t, c)
	key := client.ObjectKeyFromObject(c)
	g.Eventually(func() v1alpha1.Phase { return get(g, key).Status.Phase }, 30*time.Second, 250*time.Millisecond).
		Should(Equal(v1alpha1.PhasePaused))
	cur := get(g, key)

	// What the former release applied: whenDeleted Delete, and a claim template without the UID label.
	objs, err := render.Render(cur, placement.Member{Name: aws, Cloud: v1alpha1.CloudAWS, Region: "eu-west-1"},
		render.Credentials{RootPassword: "unused", AdminPassword: "unused", ReplicationPassword: "unused"})
	g.Expect(err).NotTo(HaveOccurred())
	old := objs.StatefulSet
	delete(old.Spec.VolumeClaimTemplates[0].Labels, v1alpha1.ClusterUIDLabel)
	old.Spec.PersistentVolumeClaimRetentionPolicy.WithWhenDeleted(appsv1.DeletePersistentVolumeClaimRetentionPolicyType)
	mc := members[aws]
	g.Expect(client.IgnoreAlreadyExists(mc.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "upgrade"}}))).To(Succeed())
	g.Expect(mc.Apply(ctx, old, client.FieldOwner(v1alpha1.FieldManager), client.ForceOwnership)).To(Succeed())
	var pod corev1.Pod
	g.Eventually(func(g Gomega) {
		g.Expect(mc.Get(ctx, client.ObjectKey{Namespace: "upgrade", Name: "db-0"}, &pod)).To(Succeed())
		p := pvc(g, aws, "upgrade", "data-db-0")
		g.Expect(p.OwnerReferences).To(ContainElement(HaveField("Kind", "StatefulSet")),
			"the former policy lets garbage collection own the claim")
	}, time.Minute, 250*time.Millisecond).Should(Succeed())
	claim := pvc(g, aws, "upgrade", "data-db-0")

	update(g, key, func(c *v1alpha1.MySQLCluster) { c.Spec.Paused = false })
	eventuallyConverged(g, key)
	g.Eventually(func(g Gomega) {
		sts := statefulSet(g, aws, key)
		g.Expect(sts.Spec.PersistentVolumeClaimRetentionPolicy.WhenDeleted).To(Equal(appsv1.RetainPersistentVolumeClaimRetentionPolicyType))
		g.Expect(sts.Spec.VolumeClaimTemplates[0].Labels).To(HaveKeyWithValue(v1alpha1.ClusterUIDLabel, string(cur.UID)))
		p := pvc(g, aws, "upgrade", "data-db-0")
		g.Expect(p.UID).To(Equal(claim.UID))
		g.Expect(p.OwnerReferences).To(BeEmpty())
		g.Expect(p.Labels).To(HaveKeyWithValue(v1alpha1.ClusterUIDLabel, string(cur.UID)))
	}, time.Minute, 250*time.Millisecond).Should(Succeed())
	var after corev1.Pod
	g.Expect(mc.Get(ctx, client.ObjectKey{Namespace: "upgrade", Name: "db-0"}, &after)).To(Succeed())
	g.Expect(after.UID).To(Equal(pod.UID), "the Pod keeps running through the recreation")

	g.Expect(hub.Delete(ctx, get(g, key))).To(Succeed())
	eventuallyGone(g, key)
	g.Eventually(func() []string { return pvcNames(g, aws, "upgrade") }, time.Minute, 250*time.Millisecond).
		ShouldNot(ContainElement("data-db-0"), "mysqlfleet deletes its own claims under Delete")
}

// A member whose applies fail does not advance status.observedGeneration: only the conditions, each with the
// generation it saw, say that it failed. When the cause goes, the retry converges.
func TestObservedGenerationWaitsForFailedApplies(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	mc := members[aws]
	g.Expect(client.IgnoreAlreadyExists(mc.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "quota"}}))).To(Succeed())
	quota := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: "quota", Name: "no-services"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceServices: resource.MustParse("0")}},
	}
	g.Expect(mc.Create(ctx, quota)).To(Succeed())
	c := newCluster("quota", "db", func(c *v1alpha1.MySQLCluster) { c.Spec.Placement.Members = []string{aws} })
	create(t, c)
	key := client.ObjectKeyFromObject(c)
	g.Eventually(func() string {
		got := get(g, key)
		if ms := memberStatus(got, aws); ms != nil {
			for _, cond := range ms.Conditions {
				if cond.Type == v1alpha1.MemberConditionApplied && cond.ObservedGeneration == got.Generation {
					return cond.Reason
				}
			}
		}
		return ""
	}, time.Minute, 250*time.Millisecond).Should(Equal(v1alpha1.ReasonApplyFailed))
	got := get(g, key)
	g.Expect(got.Status.ObservedGeneration).NotTo(Equal(got.Generation), "a failed pass does not claim the generation")
	g.Expect(findCondition(got, v1alpha1.ConditionDegraded).ObservedGeneration).To(Equal(got.Generation))

	g.Expect(mc.Delete(ctx, quota)).To(Succeed())
	eventuallyConverged(g, key)
}

// A member whose registration was refused is not reported as unreachable: nothing was ever sent to it.
func TestRefusedRegistrationIsReportedAsSuch(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	name := "refused-1"
	exec := []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/true}}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`)
	g.Expect(registerKubeconfig(ctx, name, map[string]string{v1alpha1.MemberSecretLabel: "true", v1alpha1.CloudLabel: "aws",
		v1alpha1.RegionLabel: "eu-west-9"}, exec)).To(Succeed())
	t.Cleanup(func() {
		_ = hub.Delete(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: mgrNamespace, Name: name}})
	})
	c := newCluster("refused", "db", func(c *v1alpha1.MySQLCluster) { c.Spec.Placement.Members = []string{aws, name} })
	create(t, c)
	key := client.ObjectKeyFromObject(c)
	g.Eventually(func() v1alpha1.Phase {
		if ms := memberStatus(get(g, key), name); ms != nil {
			return ms.Phase
		}
		return ""
	}, time.Minute, 250*time.Millisecond).Should(Equal(v1alpha1.PhaseDegraded))
	got := get(g, key)
	ms := memberStatus(got, name)
	for _, cond := range ms.Conditions {
		if cond.Type == v1alpha1.MemberConditionReachable || cond.Type == v1alpha1.MemberConditionApplied {
			g.Expect(cond.Reason).To(Equal(v1alpha1.ReasonRegistrationRefused), cond.Type)
		}
	}
	g.Expect(findCondition(got, v1alpha1.ConditionDegraded).Reason).To(Equal(v1alpha1.ReasonRegistrationRefused))
	g.Expect(hub.Delete(ctx, got)).To(Succeed())
	eventuallyGone(g, key)
}

// A deletion that keeps failing in a reachable member holds the MySQLCluster, shown as Deleting, for at most the
// deletion timeout; then it is released and an Event names the member.
func TestDeletionThatKeepsFailingIsBounded(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	mc := members[aws]
	c := newCluster("stuck", "db", func(c *v1alpha1.MySQLCluster) { c.Spec.Placement.Members = []string{aws} })
	create(t, c)
	key := client.ObjectKeyFromObject(c)
	eventuallyConverged(g, key)
	// A ConfigMap of the test's own shows when the policy denies.
	denyInCluster(t, g, mc, "block-stuck-configmap-deletes", rule(admissionv1.Delete, "", "configmaps"),
		`request.namespace == "stuck"`, "deletes are blocked in this namespace", func() error {
			probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "stuck", Name: "probe"}}
			if err := client.IgnoreAlreadyExists(mc.Create(ctx, probe)); err != nil {
				return err
			}
			return mc.Delete(ctx, probe)
		})

	g.Expect(hub.Delete(ctx, c)).To(Succeed())
	g.Eventually(func() v1alpha1.Phase { return get(g, key).Status.Phase }, 30*time.Second, 250*time.Millisecond).
		Should(Equal(v1alpha1.PhaseDeleting))
	eventuallyGone(g, key)
	var events eventsv1.EventList
	g.Expect(hub.List(ctx, &events, client.InNamespace("stuck"))).To(Succeed())
	var notes []string
	for _, e := range events.Items {
		if e.Reason == "LeftoversInUnreachableMembers" {
			notes = append(notes, e.Note)
		}
	}
	g.Expect(notes).To(ContainElement(ContainSubstring(aws)))
}

// memberConflicts reads the conflicts a member reports on the hub.
func memberConflicts(g Gomega, key client.ObjectKey, member string) []v1alpha1.ObjectRef {
	if ms := memberStatus(get(g, key), member); ms != nil {
		return ms.Conflicts
	}
	return nil
}

func pvc(g Gomega, member, ns, name string) *corev1.PersistentVolumeClaim {
	var p corev1.PersistentVolumeClaim
	g.ExpectWithOffset(1, members[member].Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &p)).To(Succeed())
	return &p
}

func eventuallyGone(g Gomega, key client.ObjectKey) {
	g.EventuallyWithOffset(1, func() bool {
		return apierrors.IsNotFound(hub.Get(context.Background(), key, &v1alpha1.MySQLCluster{}))
	}, 2*time.Minute, 250*time.Millisecond).Should(BeTrue(), "MySQLCluster %s is deleted", key)
}

// A MySQLCluster that the sharded replicas of an earlier version finalized carries their mark beside the members'
// finalizers; deleting it takes the mark off with them, so that it does not hang on a finalizer nobody keeps.
func TestDeletionTakesOffTheShardedMarkOfEarlierVersions(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := newCluster("legacy-mark", "db", func(c *v1alpha1.MySQLCluster) { c.Spec.Placement.Members = []string{aws} })
	create(t, c)
	key := client.ObjectKeyFromObject(c)
	eventuallyConverged(g, key)
	update(g, key, func(c *v1alpha1.MySQLCluster) { c.Finalizers = append(c.Finalizers, "mysqlfleet.io/sharded") })
	g.Expect(get(g, key).Finalizers).To(ContainElements(v1alpha1.Finalizer, "member.mysqlfleet.io/"+aws, "mysqlfleet.io/sharded"))
	g.Expect(hub.Delete(ctx, get(g, key))).To(Succeed())
	eventuallyGone(g, key)
}
