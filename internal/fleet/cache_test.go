package fleet

import (
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

func TestTrimForCacheKeepsOnlyMysqlfleetApplyEntry(t *testing.T) {
	g := NewWithT(t)
	own := metav1.ManagedFieldsEntry{Manager: v1alpha1.FieldManager, Operation: metav1.ManagedFieldsOperationApply,
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{}}`)}}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{
		Name: "db", Namespace: "shop",
		Annotations: map[string]string{lastAppliedAnnotation: `{"big":"copy"}`, "team": "payments"},
		ManagedFields: []metav1.ManagedFieldsEntry{
			{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status"},
			own,
			{Manager: v1alpha1.FieldManager, Operation: metav1.ManagedFieldsOperationApply, Subresource: "status"},
			{Manager: v1alpha1.FieldManager, Operation: metav1.ManagedFieldsOperationUpdate},
			{Manager: "kubectl-edit", Operation: metav1.ManagedFieldsOperationUpdate},
		},
	}}
	out, err := trimForCache(sts)
	g.Expect(err).NotTo(HaveOccurred())
	got := out.(*appsv1.StatefulSet)
	g.Expect(got.ManagedFields).To(Equal([]metav1.ManagedFieldsEntry{own}))
	g.Expect(got.Annotations).To(Equal(map[string]string{"team": "payments"}))
}

func TestTrimForCacheLeavesOthersAlone(t *testing.T) {
	g := NewWithT(t)
	// An object nobody else manages is left as it is.
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", ManagedFields: []metav1.ManagedFieldsEntry{
		{Manager: v1alpha1.FieldManager, Operation: metav1.ManagedFieldsOperationApply},
	}}}
	out, err := trimForCache(sts.DeepCopy())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal(sts))
	// A tombstone of a deleted object is not an object: passed through.
	tomb := cache.DeletedFinalStateUnknown{Key: "shop/db", Obj: sts}
	out, err = trimForCache(tomb)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal(tomb))
}
