package mysqlcluster

import (
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

func TestHeldReplicas(t *testing.T) {
	c := &v1alpha1.MySQLCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db", UID: "u1"},
		Spec: v1alpha1.MySQLClusterSpec{Replicas: 2}}
	live := func(uid string, replicas *int32) *appsv1.StatefulSet {
		return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db",
			Labels: map[string]string{v1alpha1.ClusterUIDLabel: uid}}, Spec: appsv1.StatefulSetSpec{Replicas: replicas}}
	}
	ready := func(n int32) *v1alpha1.ReplicationReport {
		return &v1alpha1.ReplicationReport{Primary: "db-0", ScaleDownReady: ptr.To(n)}
	}
	steady := &v1alpha1.ReplicationReport{Primary: "db-0", Decision: v1alpha1.ReplicationDecision{Kind: "Steady"}}
	tests := []struct {
		name     string
		desired  int32
		live     *appsv1.StatefulSet
		rep      *v1alpha1.ReplicationReport
		wantN    int32
		wantHeld bool
	}{
		{"no StatefulSet yet", 2, nil, nil, 2, false},
		{"a predecessor's StatefulSet", 2, live("u0", ptr.To[int32](3)), steady, 2, false},
		{"unchanged", 2, live("u1", ptr.To[int32](2)), steady, 2, false},
		{"scale-up", 3, live("u1", ptr.To[int32](2)), steady, 3, false},
		{"scale-down with nothing reporting", 2, live("u1", ptr.To[int32](3)), nil, 2, false},
		{"scale-down not prepared yet", 2, live("u1", ptr.To[int32](3)), steady, 3, true},
		{"scale-down prepared", 2, live("u1", ptr.To[int32](3)), ready(2), 2, false},
		{"prepared for another count", 1, live("u1", ptr.To[int32](3)), ready(2), 3, true},
		{"scale-down over several ordinals", 1, live("u1", ptr.To[int32](5)), steady, 5, true},
		{"live replicas unset count as the server's default", 1, live("u1", nil), steady, 1, false},
		{"spec never defaulted counts as one", 0, live("u1", ptr.To[int32](2)), ready(1), 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := c.DeepCopy()
			c.Spec.Replicas = tt.desired
			n, held := heldReplicas(c, tt.live, tt.rep)
			g.Expect(n).To(Equal(tt.wantN))
			g.Expect(held).To(Equal(tt.wantHeld))
		})
	}
}

func TestScaleDownMessage(t *testing.T) {
	g := NewWithT(t)
	g.Expect(scaleDownMessage(3, 2, &v1alpha1.ReplicationReport{})).To(Equal(
		"holding 3 Pods until the member controller has made the set ready to scale down to 2"))
	g.Expect(scaleDownMessage(3, 1, &v1alpha1.ReplicationReport{LastError: "db-1 lags 40s behind db-0"})).To(Equal(
		"holding 3 Pods until the member controller has made the set ready to scale down to 1: db-1 lags 40s behind db-0"))
}
