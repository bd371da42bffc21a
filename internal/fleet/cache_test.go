package fleet

import (
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

func TestTrimForCacheKeepsOnlyOwnApplyEntryAndDropsLastApplied(t *testing.T) {
	g := NewWithT(t)
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{
		Name: "db", Namespace: "shop",
		Annotations: map[string]string{lastAppliedAnnotation: `{"big":"copy"}`, "team": "payments"},
		ManagedFields: []metav1.ManagedFieldsEntry{
			{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status"},
			{Manager: v1alpha1.FieldManager, Operation: metav1.ManagedFieldsOperationApply},
			// mysqlfleet's own patches (claim adoption) are no part of what it applies.
			{Manager: v1alpha1.FieldManager, Operation: metav1.ManagedFieldsOperationUpdate},
			{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply},
		},
	}}
	out, err := trimForCache(sts)
	g.Expect(err).NotTo(HaveOccurred())
	got := out.(*appsv1.StatefulSet)
	g.Expect(got.ManagedFields).To(Equal([]metav1.ManagedFieldsEntry{
		{Manager: v1alpha1.FieldManager, Operation: metav1.ManagedFieldsOperationApply},
	}))
	g.Expect(got.Annotations).To(Equal(map[string]string{"team": "payments"}))
}

func TestTrimForCacheLeavesOthersAlone(t *testing.T) {
	g := NewWithT(t)
	// An object with neither is left as it is.
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Labels: map[string]string{"app": "db"}}}
	out, err := trimForCache(sts.DeepCopy())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal(sts))
	// A tombstone of a deleted object is not an object: passed through.
	tomb := cache.DeletedFinalStateUnknown{Key: "shop/db", Obj: sts}
	out, err = trimForCache(tomb)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal(tomb))
}
