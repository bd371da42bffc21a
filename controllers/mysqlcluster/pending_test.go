package mysqlcluster_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/cli"
	"github.com/mysqlfleet/mysqlfleet/internal/leftovers"
)

// A MySQLCluster is deleted while one of its members is out of the fleet (its registration Secret deleted): the
// deletion finishes at once in the others and leaves that member alone, but records what it owes it; once the
// member is registered again the deletion is finished there as each policy said, by UID (Retain: the workloads
// go and the volume stays, the very same claim; Delete: everything goes), the records are deleted, and an Event
// on the registration says so.
func TestDeletionFinishesWhenTheMemberReturns(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const away, ns = "gcp-us-central1", "returning"
	placed := []string{"aws-eu-west-1", away}
	retain := newCluster(ns, "keep", func(c *v1alpha1.MySQLCluster) { c.Spec.Placement.Members = placed })
	remove := newCluster(ns, "drop", func(c *v1alpha1.MySQLCluster) {
		c.Spec.Placement.Members = placed
		c.Spec.DeletionPolicy = v1alpha1.DeletionPolicyDelete
	})
	create(t, retain)
	create(t, remove)
	eventuallyConverged(g, client.ObjectKeyFromObject(retain))
	eventuallyConverged(g, client.ObjectKeyFromObject(remove))
	uids := map[string]ktypes.UID{}
	for _, c := range []*v1alpha1.MySQLCluster{retain, remove} {
		uids[c.Name] = get(g, client.ObjectKeyFromObject(c)).UID
	}
	var keptClaim corev1.PersistentVolumeClaim
	g.Expect(members[away].Get(ctx, client.ObjectKey{Namespace: ns, Name: "data-keep-0"}, &keptClaim)).To(Succeed())

	// The member leaves the fleet for a while.
	g.Expect(hub.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: mgrNamespace, Name: away}})).To(Succeed())
	back := false
	t.Cleanup(func() {
		if !back {
			_ = register(context.Background(), away)
		}
	})
	g.Eventually(func() string {
		return conditionReason(get(g, client.ObjectKeyFromObject(retain)), v1alpha1.ConditionPlaced)
	}, time.Minute, 250*time.Millisecond).Should(Equal(v1alpha1.ReasonUnknownMembers))

	for _, c := range []*v1alpha1.MySQLCluster{retain, remove} {
		g.Expect(hub.Delete(ctx, c)).To(Succeed())
	}
	for _, c := range []*v1alpha1.MySQLCluster{retain, remove} {
		g.Eventually(func() bool {
			return apierrors.IsNotFound(hub.Get(ctx, client.ObjectKeyFromObject(c), &v1alpha1.MySQLCluster{}))
		}, time.Minute, 250*time.Millisecond).Should(BeTrue(), "%s is not held for a member that is not registered", c.Name)
	}
	g.Expect(ownedBy(g, "aws-eu-west-1", ns, uids["keep"])).To(ConsistOf("PersistentVolumeClaim/data-keep-0"))
	g.Eventually(func() []string { return ownedBy(g, "aws-eu-west-1", ns, uids["drop"]) }, time.Minute, 250*time.Millisecond).
		Should(BeEmpty())
	for name, uid := range uids {
		g.Expect(ownedBy(g, away, ns, uid)).To(ContainElement("StatefulSet/"+name), "nothing is done in a member that is away")
		var cm corev1.ConfigMap
		key := client.ObjectKey{Namespace: mgrNamespace, Name: "teardown." + string(uid) + "." + away}
		g.Expect(hub.Get(ctx, key, &cm)).To(Succeed(), "the hub records what it owes %s", away)
		rec, err := leftovers.FromConfigMap(&cm)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(rec).To(Equal(leftovers.Record{Namespace: ns, Name: name, UID: uid, Member: away,
			DeletionPolicy: map[string]v1alpha1.DeletionPolicy{"keep": v1alpha1.DeletionPolicyRetain, "drop": v1alpha1.DeletionPolicyDelete}[name]}))
	}

	// The member comes back. A record is deleted once its teardown found nothing left to delete (in the manager's
	// cache, which is never ahead of the API server), so what is there then is what stays.
	g.Expect(register(ctx, away)).To(Succeed())
	back = true
	g.Eventually(func() []leftovers.Record {
		recs, _, err := leftovers.ListRecords(ctx, hub, mgrNamespace, away)
		g.Expect(err).NotTo(HaveOccurred())
		return recs
	}, time.Minute, 250*time.Millisecond).Should(BeEmpty())
	g.Expect(ownedBy(g, away, ns, uids["keep"])).To(ConsistOf("PersistentVolumeClaim/data-keep-0"),
		"Retain: workloads, Services, configuration and credentials go, the volume stays")
	g.Expect(ownedBy(g, away, ns, uids["drop"])).To(BeEmpty(), "Delete: everything with the UID goes")
	var claim corev1.PersistentVolumeClaim
	g.Expect(members[away].Get(ctx, client.ObjectKeyFromObject(&keptClaim), &claim)).To(Succeed())
	g.Expect(claim.UID).To(Equal(keptClaim.UID), "the retained volume is the very same claim")
	g.Eventually(func() []string { return secretEvents(g, away) }, time.Minute, 250*time.Millisecond).
		Should(ContainElement("PendingTeardownFinished"))
}

// An object made by hand with mysqlfleet's labels copied onto it and a UID no MySQLCluster has is an orphan: the
// manager counts it in its member's series and leaves it alone; `mysqlfleet orphans` lists it with nothing a live
// MySQLCluster owns, and deletes it only when asked, its volume only when asked for volumes too.
func TestOrphansAreReportedAndLeftAlone(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const member, ns, lost = "azure-westeurope", "orphans", "3f9a4a44-0000-4000-8000-00000000beef"
	mc := members[member]
	// Earlier tests may have left orphans of their own there (volumes kept by Retain, above all).
	var before float64
	g.Eventually(func() float64 { before = orphanGauge(g, member, "ConfigMap"); return before }, time.Minute, 250*time.Millisecond).
		Should(BeNumerically(">=", 0), "the manager counts in every member it works in, zeros included")
	if err := mc.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	labels := map[string]string{v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue, v1alpha1.ClusterNamespaceLabel: ns,
		v1alpha1.ClusterNameLabel: "lost", v1alpha1.ClusterUIDLabel: lost, v1alpha1.MemberLabel: member}
	config := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lost-config", Labels: labels}}
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data-lost-0", Labels: labels},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	g.Expect(mc.Create(ctx, config)).To(Succeed())
	g.Expect(mc.Create(ctx, claim)).To(Succeed())

	g.Eventually(func() float64 { return orphanGauge(g, member, "ConfigMap") }, time.Minute, 250*time.Millisecond).
		Should(Equal(before + 1))
	g.Eventually(func() float64 { return orphanGauge(g, member, leftovers.VolumeKind) }, time.Minute, 250*time.Millisecond).
		Should(BeNumerically(">=", 1))

	hubCLI := cliHub()
	view, err := cli.ListOrphans(ctx, hubCLI, cli.OrphansOptions{Member: member})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(view.Unsearched).To(BeEmpty())
	var clusters v1alpha1.MySQLClusterList
	g.Expect(hub.List(ctx, &clusters)).To(Succeed())
	var ours []string
	for _, o := range view.Orphans {
		for _, c := range clusters.Items {
			g.Expect(o.ClusterUID).NotTo(Equal(c.UID), "%s %s/%s belongs to MySQLCluster %s/%s", o.Kind, o.Namespace, o.Name, c.Namespace, c.Name)
		}
		if o.ClusterUID == lost {
			ours = append(ours, o.Kind+"/"+o.Name)
		}
	}
	g.Expect(ours).To(ConsistOf("ConfigMap/lost-config", "PersistentVolumeClaim/data-lost-0"))

	// Reported, and left alone: the manager scans every 2 s here and the pending teardowns run on member changes.
	g.Consistently(func() []string { return ownedBy(g, member, ns, lost) }, 6*time.Second, time.Second).
		Should(ConsistOf("ConfigMap/lost-config", "PersistentVolumeClaim/data-lost-0"))

	streams := genericiooptions.NewTestIOStreamsDiscard()
	g.Expect(cli.Orphans(ctx, hubCLI, cli.OrphansOptions{Member: member, UID: lost, Delete: true}, streams)).To(Succeed())
	g.Expect(ownedBy(g, member, ns, lost)).To(ConsistOf("PersistentVolumeClaim/data-lost-0"), "volumes only with --delete-volumes")
	g.Expect(cli.Orphans(ctx, hubCLI, cli.OrphansOptions{Member: member, UID: lost, Delete: true, DeleteVolumes: true}, streams)).
		To(Succeed())
	g.Eventually(func() []string { return ownedBy(g, member, ns, lost) }, time.Minute, 250*time.Millisecond).Should(BeEmpty())
	g.Eventually(func() float64 { return orphanGauge(g, member, "ConfigMap") }, time.Minute, 250*time.Millisecond).
		Should(Equal(before))
}

// ownedBy lists, as Kind/name, what carries the UID label in a namespace of a member, not being deleted.
func ownedBy(g Gomega, member, ns string, uid ktypes.UID) []string {
	objs, err := leftovers.Scan(context.Background(), members[member], []string{ns})
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
	out := []string{}
	for _, o := range objs {
		if o.GetLabels()[v1alpha1.ClusterUIDLabel] == string(uid) && o.GetDeletionTimestamp().IsZero() {
			out = append(out, o.Kind+"/"+o.GetName())
		}
	}
	return out
}

// orphanGauge reads mysqlfleet_member_orphaned_objects for a member and kind; -1 while it has no series.
func orphanGauge(g Gomega, member, kind string) float64 {
	for _, m := range managerMetrics(g)["mysqlfleet_member_orphaned_objects"].GetMetric() {
		if l := labelsOf(m); l["member"] == member && l["kind"] == kind {
			return m.GetGauge().GetValue()
		}
	}
	return -1
}

// cliHub is the CLI's view of the hub.
func cliHub() cli.Hub {
	f := genericclioptions.NewConfigFlags(false)
	*f.KubeConfig = fleet.Hub.KubeconfigPath
	return cli.Hub{Getter: f, Namespace: mgrNamespace}
}

func conditionReason(c *v1alpha1.MySQLCluster, t string) string {
	for _, cond := range c.Status.Conditions {
		if cond.Type == t {
			return cond.Reason
		}
	}
	return ""
}
