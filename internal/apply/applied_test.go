package apply

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

func TestHeldSinceApplied(t *testing.T) {
	applied := metav1.NewTime(time.Date(2026, 11, 25, 12, 0, 10, 0, time.UTC))
	before, after := metav1.NewTime(applied.Add(-time.Second)), metav1.NewTime(applied.Add(time.Second))
	ours := metav1.ManagedFieldsEntry{Manager: v1alpha1.FieldManager, Operation: metav1.ManagedFieldsOperationApply, Time: &applied}
	created := metav1.ManagedFieldsEntry{Manager: v1alpha1.CreateFieldManager, Operation: metav1.ManagedFieldsOperationUpdate, Time: &applied}
	other := func(manager, subresource string, at *metav1.Time) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, Subresource: subresource, Time: at}
	}
	for name, tc := range map[string]struct {
		annotation string
		fields     []metav1.ManagedFieldsEntry
		held       bool
	}{
		"applied as wanted, written by nobody since":    {"2a", []metav1.ManagedFieldsEntry{other("kubectl", "", &before), ours}, true},
		"the status written since does not count":       {"2a", []metav1.ManagedFieldsEntry{ours, other("kube-controller-manager", "status", &after)}, true},
		"applied something else":                        {"2b", []metav1.ManagedFieldsEntry{ours}, false},
		"applied by an earlier release":                 {"", []metav1.ManagedFieldsEntry{ours}, false},
		"written by someone else since":                 {"2a", []metav1.ManagedFieldsEntry{ours, other("kubectl-edit", "", &after)}, false},
		"written by someone else in the same second":    {"2a", []metav1.ManagedFieldsEntry{ours, other("kubectl-edit", "", &applied)}, false},
		"mysqlfleet's own patch since (claim adoption)": {"2a", []metav1.ManagedFieldsEntry{ours, other(v1alpha1.FieldManager, "", &after)}, false},
		"created as wanted, written by nobody since":    {"2a", []metav1.ManagedFieldsEntry{created}, true},
		"created, then written by someone else":         {"2a", []metav1.ManagedFieldsEntry{created, other("kubectl-edit", "", &after)}, false},
		"a write with no time":                          {"2a", []metav1.ManagedFieldsEntry{ours, other("someone", "", nil)}, false},
		"not applied by mysqlfleet":                     {"2a", []metav1.ManagedFieldsEntry{other("kubectl", "", &before)}, false},
	} {
		t.Run(name, func(t *testing.T) {
			obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ManagedFields: tc.fields}}
			if tc.annotation != "" {
				obj.Annotations = map[string]string{AppliedAnnotation: tc.annotation}
			}
			NewWithT(t).Expect(heldSinceApplied(obj, 0x2a)).To(Equal(tc.held))
		})
	}
}

func TestSetApplied(t *testing.T) {
	g := NewWithT(t)
	ac := corev1ac.ConfigMap("db-config", "shop")
	setApplied(ac, "2a")
	g.Expect(ac.Annotations).To(Equal(map[string]string{AppliedAnnotation: "2a"}))
	ac.WithAnnotations(map[string]string{"team": "payments"})
	setApplied(ac, "")
	g.Expect(ac.Annotations).To(Equal(map[string]string{"team": "payments"}), "other annotations stay")
	only := corev1ac.ConfigMap("db-config", "shop")
	setApplied(only, "2a")
	setApplied(only, "")
	g.Expect(only.Annotations).To(BeNil(), "none left: no empty map, which would compare unequal to none")
	var none *corev1ac.ConfigMapApplyConfiguration
	setApplied(none, "2a") // nothing to set, no panic
}
