package mysqlcluster

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

// A member cache's initial list passes nothing on: engaging the member requeues what is placed there (see
// memberEvents). A create seen later, and an update, still do.
func TestMemberInitialListIsNotAnotherPass(t *testing.T) {
	r := &MySQLClusterReconciler{}
	h := r.memberEvents("aws-eu-west-1", nil)
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "orders", ResourceVersion: "7",
		Labels: map[string]string{v1alpha1.ClusterNamespaceLabel: "shop", v1alpha1.ClusterNameLabel: "orders",
			v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue}}}
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		send func(q workqueue.TypedRateLimitingInterface[mcreconcile.Request])
		want int
	}{
		{"initial list", func(q workqueue.TypedRateLimitingInterface[mcreconcile.Request]) {
			h.Create(ctx, event.TypedCreateEvent[client.Object]{Object: obj, IsInInitialList: true}, q)
		}, 0},
		{"created later", func(q workqueue.TypedRateLimitingInterface[mcreconcile.Request]) {
			h.Create(ctx, event.TypedCreateEvent[client.Object]{Object: obj}, q)
		}, 1},
		{"updated", func(q workqueue.TypedRateLimitingInterface[mcreconcile.Request]) {
			h.Update(ctx, event.TypedUpdateEvent[client.Object]{ObjectOld: obj, ObjectNew: obj}, q)
		}, 1},
	} {
		q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[mcreconcile.Request]())
		tc.send(q)
		if got := q.Len(); got != tc.want {
			t.Errorf("%s: %d requests queued, want %d", tc.name, got, tc.want)
		}
		q.ShutDown()
	}
}
