package mysqlcluster

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/fleet"
)

// The two failures below are reads the manager serves from its informer caches (the hub's MySQLClusters, a
// member's claims and CronJobs), which a real API server cannot be made to fail on cue; the failing reads are
// injected into a client, and what is checked is what the manager does with them.

func testScheme(g Gomega) *runtime.Scheme {
	s := runtime.NewScheme()
	g.Expect(clientgoscheme.AddToScheme(s)).To(Succeed())
	g.Expect(v1alpha1.AddToScheme(s)).To(Succeed())
	return s
}

// failingFirst fails the first n Lists of objects like kind with err and passes the others through.
func failingFirst(n int, kind client.ObjectList, err error) interceptor.Funcs {
	var mu sync.Mutex
	return interceptor.Funcs{List: func(ctx context.Context, cl client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		mu.Lock()
		fail := n > 0 && reflect.TypeOf(list) == reflect.TypeOf(kind)
		if fail {
			n--
		}
		mu.Unlock()
		if fail {
			return err
		}
		return cl.List(ctx, list, opts...)
	}}
}

// A member change is not lost when the List of MySQLClusters that follows it fails: the member is noted again and
// its MySQLClusters are requeued on the next try.
func TestMemberChangeOutlivesAFailedList(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := &v1alpha1.MySQLCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "orders"},
		Spec: v1alpha1.MySQLClusterSpec{Placement: v1alpha1.Placement{Members: []string{"aws-eu-west-1"}}}}
	hub := interceptor.NewClient(fake.NewClientBuilder().WithScheme(testScheme(g)).WithObjects(c).Build(),
		failingFirst(1, &v1alpha1.MySQLClusterList{}, errors.New("the hub did not answer")))
	r := &MySQLClusterReconciler{Hub: hub, Fleet: &fleet.Provider{}, memberChanged: make(chan event.GenericEvent, 1)}
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[mcreconcile.Request]())
	defer q.ShutDown()
	stop := make(chan struct{})
	defer close(stop)
	go func() { // the channel source: one call of the handler per wake-up
		for {
			select {
			case <-r.memberChanged:
				r.requeueChangedMembers(ctx, event.TypedGenericEvent[client.Object]{}, q)
			case <-stop:
				return
			}
		}
	}()

	r.MemberChanged("aws-eu-west-1")
	g.Eventually(q.Len, 10*time.Second, 50*time.Millisecond).Should(Equal(1))
	req, _ := q.Get()
	g.Expect(req.NamespacedName).To(Equal(types.NamespacedName{Namespace: "shop", Name: "orders"}))
}

// A member whose claims cannot be read back is not reported as ready, and the read error is in its status.
func TestReadBackErrorsAreReported(t *testing.T) {
	ctx := context.Background()
	c := &v1alpha1.MySQLCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "orders", UID: "u1", Generation: 1},
		Spec: v1alpha1.MySQLClusterSpec{Replicas: 1}}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: c.StatefulSetName(), Generation: 1,
			Labels: map[string]string{v1alpha1.ClusterUIDLabel: "u1"}},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 1, ReadyReplicas: 1, UpdatedReplicas: 1, Replicas: 1},
	}
	for _, tc := range []struct {
		name string
		fail client.ObjectList
		want string
	}{
		{"claims", &corev1.PersistentVolumeClaimList{}, "claims unreadable"},
		{"nothing", &batchv1.CronJobList{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			mc := interceptor.NewClient(fake.NewClientBuilder().WithScheme(testScheme(g)).WithObjects(sts).
				WithStatusSubresource(sts).Build(), failingFirst(1, tc.fail, errors.New("claims unreadable")))
			r := &MySQLClusterReconciler{}
			st := v1alpha1.MemberStatus{Name: "aws-eu-west-1"}
			got := r.readBack(ctx, mc, c, st, memberConditions{st: &st, gen: c.Generation}, nil)
			pods := meta.FindStatusCondition(got.Conditions, v1alpha1.MemberConditionPodsReady)
			g.Expect(pods).NotTo(BeNil())
			if tc.want == "" {
				g.Expect(got.LastError).To(BeEmpty())
				g.Expect(pods.Status).To(Equal(metav1.ConditionTrue), "the control case: the same member reads back ready")
				return
			}
			g.Expect(got.LastError).To(ContainSubstring(tc.want))
			g.Expect(pods.Status).To(Equal(metav1.ConditionFalse))
		})
	}
}
