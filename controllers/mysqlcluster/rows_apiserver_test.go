package mysqlcluster

import (
	"context"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/test/testfleet"
)

// A sharded status write is made against the version it was computed from: one computed before another
// replica's rows landed is refused, and leaves those rows and their summary as they are, so that no status
// holds a summary of rows other than its own. The write computed again from what is there now goes through.
// Against a hub API server of its own (the suite's manager would write these statuses too).
func TestStatusWriteRefusedOverRowsWrittenMeanwhile(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := testfleet.ForTest(t, testfleet.Options{HubCRDDirectoryPaths: []string{filepath.Join("..", "..", "config", "crd", "bases")}})
	scheme := runtime.NewScheme()
	g.Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	g.Expect(v1alpha1.AddToScheme(scheme)).To(Succeed())
	hub, err := client.New(f.Hub.Config, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}})).To(Succeed())
	c := &v1alpha1.MySQLCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db"},
		Spec: v1alpha1.MySQLClusterSpec{Version: "8.4", Replicas: 1, Placement: v1alpha1.Placement{Members: []string{"a", "b"}},
			Storage: v1alpha1.Storage{Size: resource.MustParse("1Gi")}}}
	g.Expect(hub.Create(ctx, c)).To(Succeed())
	live := func() *v1alpha1.MySQLCluster {
		var got v1alpha1.MySQLCluster
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(c), &got)).To(Succeed())
		return &got
	}
	// write is a status computed over read: its rows and the summary "ready/2" of them.
	write := func(read *v1alpha1.MySQLCluster, ready string, rows ...v1alpha1.MemberStatus) error {
		s := &scope{cluster: read.DeepCopy(), before: read.Status.DeepCopy()}
		s.cluster.Status.Members, s.cluster.Status.ReadyMembers = rows, ready+"/2"
		return patchStatus(ctx, hub, s)
	}
	a := v1alpha1.MemberStatus{Name: "a", Phase: v1alpha1.PhaseReady}
	b := v1alpha1.MemberStatus{Name: "b", Phase: v1alpha1.PhaseReady}

	// Two owners read the same version; a's owner writes first.
	read := live()
	g.Expect(write(read, "1", a)).To(Succeed())
	err = write(read, "1", b)
	g.Expect(apierrors.IsConflict(err)).To(BeTrue(), "b's row and a summary that knows nothing of a's: %v", err)
	got := live()
	g.Expect(got.Status.Members).To(ConsistOf(HaveField("Name", "a")))
	g.Expect(got.Status.ReadyMembers).To(Equal("1/2"))

	// b's owner computes again over what is there now: both rows, and their summary.
	g.Expect(write(got, "2", a, b)).To(Succeed())
	got = live()
	g.Expect(got.Status.Members).To(ConsistOf(HaveField("Name", "a"), HaveField("Name", "b")))
	g.Expect(got.Status.ReadyMembers).To(Equal("2/2"))

	// A write computed over an older version is refused whatever it holds; one that changes nothing is not sent.
	g.Expect(apierrors.IsConflict(write(read, "0"))).To(BeTrue(), "a write computed over an older version")
	g.Expect(patchStatus(ctx, hub, &scope{cluster: got.DeepCopy(), before: got.Status.DeepCopy()})).To(Succeed())
	g.Expect(live().ResourceVersion).To(Equal(got.ResourceVersion))
}
