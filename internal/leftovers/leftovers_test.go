package leftovers_test

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/leftovers"
)

func TestRecordRoundTrip(t *testing.T) {
	g := NewWithT(t)
	c := &v1alpha1.MySQLCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "orders", UID: "u-1"}}
	rec := leftovers.NewRecord(c, "gcp-us-central1")
	g.Expect(rec.DeletionPolicy).To(Equal(v1alpha1.DeletionPolicyRetain), "the API's default")
	cm := rec.ConfigMap("mysqlfleet-system")
	g.Expect(cm.Name).To(Equal("teardown.u-1.gcp-us-central1"))
	g.Expect(cm.Labels).To(HaveKeyWithValue(v1alpha1.PendingTeardownLabel, "true"))
	g.Expect(cm.Labels).To(HaveKeyWithValue(v1alpha1.ClusterUIDLabel, "u-1"))
	back, err := leftovers.FromConfigMap(cm)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(back).To(Equal(rec))
	g.Expect(back.Cluster().UID).To(Equal(types.UID("u-1")))
}

// A teardown is done exactly as recorded or not at all: a record missing a field, or with a policy mysqlfleet does
// not know, is refused.
func TestInvalidRecordsAreRefused(t *testing.T) {
	c := &v1alpha1.MySQLCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "orders", UID: "u-1"}}
	for name, change := range map[string]func(*corev1.ConfigMap){
		"no uid":         func(cm *corev1.ConfigMap) { delete(cm.Data, v1alpha1.PendingTeardownUIDKey) },
		"no member":      func(cm *corev1.ConfigMap) { cm.Data[v1alpha1.PendingTeardownMemberKey] = "" },
		"unknown policy": func(cm *corev1.ConfigMap) { cm.Data[v1alpha1.PendingTeardownPolicyKey] = "Shred" },
		"no policy":      func(cm *corev1.ConfigMap) { delete(cm.Data, v1alpha1.PendingTeardownPolicyKey) },
	} {
		t.Run(name, func(t *testing.T) {
			cm := leftovers.NewRecord(c, "aws").ConfigMap("ns")
			change(cm)
			_, err := leftovers.FromConfigMap(cm)
			NewWithT(t).Expect(err).To(MatchError(leftovers.ErrInvalidRecord))
		})
	}
}

func labelled(kind, name, uid string, mutate ...func(*corev1.ConfigMap)) leftovers.Object {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, UID: types.UID("obj-" + name),
		Labels: map[string]string{v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue, v1alpha1.ClusterUIDLabel: uid,
			v1alpha1.ClusterNamespaceLabel: "shop", v1alpha1.ClusterNameLabel: "orders"}}}
	for _, m := range mutate {
		m(cm)
	}
	return leftovers.Object{Kind: kind, Object: cm}
}

// Orphans are chosen by the UID label alone: the names (the same as a live MySQLCluster's here) say nothing.
func TestOrphansByUIDOnly(t *testing.T) {
	g := NewWithT(t)
	live := v1alpha1.MySQLCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "orders", UID: "live",
		Annotations: map[string]string{v1alpha1.AdoptAnnotation: "adopted, "}}}
	known := leftovers.Known([]v1alpha1.MySQLCluster{live}, []leftovers.Record{{UID: "owed"}})
	now := metav1.Now()
	objs := []leftovers.Object{
		labelled("PersistentVolumeClaim", "data-orders-0", "lost"),
		labelled("ConfigMap", "orders-config", "live"),
		labelled("ConfigMap", "orders-config", "owed"),
		labelled("ConfigMap", "orders-config", "adopted"),
		labelled("StatefulSet", "orders", "lost"),
		labelled("Service", "orders", "lost", func(cm *corev1.ConfigMap) { cm.DeletionTimestamp = &now }),
		labelled("Service", "orders", "lost", func(cm *corev1.ConfigMap) { cm.Labels[v1alpha1.ManagedByLabel] = "someone" }),
		labelled("Service", "orders", ""),
	}
	orphans := leftovers.Orphans("aws", objs, known)
	g.Expect(orphans).To(HaveLen(2))
	g.Expect(orphans[0].Kind).To(Equal("StatefulSet"), "teardown's order: workloads first")
	g.Expect(orphans[1].Kind).To(Equal("PersistentVolumeClaim"), "volumes last")
	for _, o := range orphans {
		g.Expect(o.ClusterUID).To(Equal(types.UID("lost")))
		g.Expect(o.Member).To(Equal("aws"))
		g.Expect(o.ClusterName).To(Equal("orders"))
	}
}

func TestTeardownListsKeepVolumesUnlessAsked(t *testing.T) {
	g := NewWithT(t)
	with, without := leftovers.TeardownLists(true), leftovers.TeardownLists(false)
	g.Expect(with).To(HaveLen(len(without) + 1))
	g.Expect(with[len(with)-1]).To(BeAssignableToTypeOf(&corev1.PersistentVolumeClaimList{}))
	for _, l := range without {
		g.Expect(l).NotTo(BeAssignableToTypeOf(&corev1.PersistentVolumeClaimList{}))
	}
}
