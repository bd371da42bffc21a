package fleet

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/clusters"
	"github.com/mysqlfleet/mysqlfleet/test/testfleet"
)

// A member is engaged, and reported engaged, only once its cache holds what the member had, against a real API
// server: the manager's passes start reading it as soon as the member is engaged. (GetInformer alone does not
// wait while the cluster is still starting its cache, and the sync then happened inside the manager's Engage.)
func TestMemberIsEngagedWithItsCacheSynced(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, members, err := clusters.Fleet()
	g.Expect(err).NotTo(HaveOccurred())
	member := testfleet.ForTest(t, testfleet.Options{Members: members[:1]}).Members[0]

	const objects = 200
	cs := member.Clientset()
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	for i := range objects {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%03d", i), Namespace: "shop",
			Labels: map[string]string{v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue}}}
		_, err := cs.CoreV1().ConfigMaps("shop").Create(ctx, cm, metav1.CreateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
	}

	p := New(Options{Namespace: testNamespace, Scheme: clientgoscheme.Scheme, HealthInterval: time.Hour,
		WatchedObjects: []client.Object{&corev1.ConfigMap{}}})
	p.ctx = ctx // the member's cluster stops with the test
	p.hub = fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: member.Name, Labels: map[string]string{
			v1alpha1.MemberSecretLabel: "true", v1alpha1.CloudLabel: "aws", v1alpha1.RegionLabel: "eu-west-1"}},
		Data: map[string][]byte{v1alpha1.KubeconfigKey: member.Kubeconfig},
	}).Build()
	type seen struct {
		synced bool
		cached int
	}
	engaged := make(chan seen, 1)
	p.engager = engagerFunc(func(ctx context.Context, _ multicluster.ClusterName, cl cluster.Cluster) error {
		// Look without waiting: a read through the cache would itself wait for the sync.
		inf, err := cl.GetCache().GetInformer(ctx, &corev1.ConfigMap{}, cache.BlockUntilSynced(false))
		if err != nil {
			return err
		}
		s := seen{synced: inf.HasSynced()}
		var list corev1.ConfigMapList
		if err := cl.GetCache().List(ctx, &list, client.InNamespace("shop")); err != nil {
			return err
		}
		s.cached = len(list.Items)
		engaged <- s
		return nil
	})

	_, err = p.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: testNamespace, Name: member.Name}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.Members()).To(ConsistOf(SatisfyAll(HaveField("Name", member.Name), HaveField("Engaged", BeTrue()),
		HaveField("Err", BeNil()))))
	var s seen
	g.Eventually(engaged).Should(Receive(&s))
	g.Expect(s.synced).To(BeTrue(), "the member's informers must have synced before it is engaged")
	g.Expect(s.cached).To(Equal(objects))
}
