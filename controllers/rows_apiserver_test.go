package controllers

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
	"github.com/mysqlfleet/mysqlfleet/internal/testfleet"
)

// The leader's first summary brings the empty list of rows that the owners append to. Should an owner have
// appended its rows after the leader read the MySQLCluster (its finalizers were on already), the summary is
// refused, as written against the version the leader read, instead of emptying the list. Against a hub API server
// of its own (the suite's manager would write these statuses too).
func TestFirstSummaryKeepsRowsWrittenMeanwhile(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := testfleet.ForTest(t, testfleet.Options{HubCRDDirectoryPaths: []string{filepath.Join("..", "config", "crd", "bases")}})
	scheme := runtime.NewScheme()
	g.Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	g.Expect(v1alpha1.AddToScheme(scheme)).To(Succeed())
	hub, err := client.New(f.Hub.Config, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	r := &MySQLClusterReconciler{Hub: hub}

	g.Expect(hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}})).To(Succeed())
	newCluster := func(name string) *v1alpha1.MySQLCluster {
		c := &v1alpha1.MySQLCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name},
			Spec: v1alpha1.MySQLClusterSpec{Version: "8.4", Replicas: 1, Placement: v1alpha1.Placement{Members: []string{"a", "b"}},
				Storage: v1alpha1.Storage{Size: resource.MustParse("1Gi")}}}
		g.Expect(hub.Create(ctx, c)).To(Succeed())
		return c
	}
	summarised := func(c *v1alpha1.MySQLCluster) *v1alpha1.MySQLCluster {
		leader := c.DeepCopy()
		leader.Status.Phase, leader.Status.ReadyMembers = v1alpha1.PhaseProgressing, "0/2"
		return leader
	}
	live := func(c *v1alpha1.MySQLCluster) *v1alpha1.MySQLCluster {
		var got v1alpha1.MySQLCluster
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(c), &got)).To(Succeed())
		return &got
	}
	row := v1alpha1.MemberStatus{Name: "a", Phase: v1alpha1.PhaseProgressing}

	// Nothing written meanwhile: the summary and the empty list, which the owner then appends to.
	quiet := newCluster("quiet")
	g.Expect(r.writeSummary(ctx, summarised(quiet), &v1alpha1.MySQLClusterStatus{})).To(Succeed())
	got := live(quiet)
	g.Expect(got.Status.Phase).To(Equal(v1alpha1.PhaseProgressing))
	g.Expect(got.Status.Members).NotTo(BeNil())
	g.Expect(got.Status.Members).To(BeEmpty())
	g.Expect(r.writeRows(ctx, got, got.Status.DeepCopy(), []v1alpha1.MemberStatus{row}, nil)).To(Succeed())
	g.Expect(live(quiet).Status.Members).To(HaveLen(1))

	// An owner appended its row after the leader read the MySQLCluster: the first summary is refused, the row
	// stays, and the leader's next pass (which reads the row) writes the summary.
	busy := newCluster("busy")
	read := busy.DeepCopy()
	g.Expect(r.writeRows(ctx, busy, busy.Status.DeepCopy(), []v1alpha1.MemberStatus{row}, nil)).To(Succeed())
	err = r.writeSummary(ctx, summarised(read), &v1alpha1.MySQLClusterStatus{})
	g.Expect(apierrors.IsConflict(err)).To(BeTrue(), "a first summary against an older version: %v", err)
	got = live(busy)
	g.Expect(got.Status.Members).To(ConsistOf(HaveField("Name", "a")), "the row appended meanwhile")
	g.Expect(r.writeSummary(ctx, summarised(got), got.Status.DeepCopy())).To(Succeed())
	got = live(busy)
	g.Expect(got.Status.Phase).To(Equal(v1alpha1.PhaseProgressing))
	g.Expect(got.Status.Members).To(ConsistOf(HaveField("Name", "a")))
}
