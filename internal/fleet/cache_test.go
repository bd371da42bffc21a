package fleet

import (
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

func TestTrimForCacheKeepsOnlyOwnApplyFieldsAndDropsLastApplied(t *testing.T) {
	g := NewWithT(t)
	at := metav1.Now()
	fields := metav1.NewFieldsV1(`{"f:spec":{"f:replicas":{}}}`)
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{
		Name: "db", Namespace: "shop",
		Annotations: map[string]string{lastAppliedAnnotation: `{"big":"copy"}`, "team": "payments"},
		ManagedFields: []metav1.ManagedFieldsEntry{
			{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", Time: &at, FieldsV1: fields},
			{Manager: v1alpha1.FieldManager, Operation: metav1.ManagedFieldsOperationApply, Time: &at, FieldsV1: fields},
			// mysqlfleet's own patches (claim adoption) are no part of what it applies.
			{Manager: v1alpha1.FieldManager, Operation: metav1.ManagedFieldsOperationUpdate, Time: &at, FieldsV1: fields},
			{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply, Time: &at, FieldsV1: fields},
		},
	}}
	out, err := trimForCache(sts)
	g.Expect(err).NotTo(HaveOccurred())
	got := out.(*appsv1.StatefulSet)
	// Who wrote and when stay; which fields, only for mysqlfleet's apply.
	g.Expect(got.ManagedFields).To(Equal([]metav1.ManagedFieldsEntry{
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", Time: &at},
		{Manager: v1alpha1.FieldManager, Operation: metav1.ManagedFieldsOperationApply, Time: &at, FieldsV1: fields},
		{Manager: v1alpha1.FieldManager, Operation: metav1.ManagedFieldsOperationUpdate, Time: &at},
		{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply, Time: &at},
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
